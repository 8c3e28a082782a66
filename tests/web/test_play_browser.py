"""A person plays a whole game in a real browser against an engine process.

Headless Chromium signs in on /play with a seat token, finds its game on its list, and
plays every turn on /play/game/ID until the game ends: plays built by clicking checkers
(the points a checker can reach highlighted, an undo), plays typed in notation, and an
illegal attempt refused with the reason. The other seat is ``nardy engine random`` as a
process of its own. Meanwhile a spectator's tab of the read-only view follows the game.
The page's turns, highlights and result are checked against the arbiter (GetGame with the
seat's token over gRPC). A registered player answers challenges on the page, and makes one:
a bot run with ``--accept-challenges`` takes it, and the game it opens is played out."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import grpc
import pytest
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from nardy import Color
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant
from server.app import EmbeddedServer

ENGINE = [sys.executable, "-m", "clients", "engine", "random"]
STALE = (StaleElementReferenceException,)


@pytest.fixture
def arbiter(tmp_path):
    with (
        EmbeddedServer(db=str(tmp_path / "a.db"), http_port=0) as srv,
        grpc.insecure_channel(srv.address) as channel,
    ):
        srv.stub = api_grpc.ArbiterServiceStub(channel)
        engines: list[subprocess.Popen] = []

        def engine(token: str, *options: str) -> None:
            env = {**os.environ, "NARDY_SERVER": srv.address, "NARDY_TOKEN": token}
            log = open(tmp_path / f"engine{len(engines)}.log", "w")  # noqa: SIM115
            engines.append(subprocess.Popen([*ENGINE, *options], env=env, stdout=log, stderr=log))

        srv.engine = engine
        try:
            yield srv
        finally:
            for p in engines:
                p.kill()
                p.wait()


def page(driver) -> dict:
    """What the play page shows now, read in one go."""
    return driver.execute_script(
        "const b = document.querySelector('#board svg');"
        "return {turn: b ? b.dataset.turn : '', position: b ? b.dataset.position : '',"
        " status: document.getElementById('status').textContent,"
        " message: document.getElementById('message').textContent,"
        " building: document.getElementById('building').textContent,"
        " send: !document.getElementById('send').disabled,"
        " moves: document.querySelectorAll('#moves li').length,"
        " targets: [...document.querySelectorAll('#board .target')].map(t => +t.dataset.point),"
        " selected: document.querySelectorAll('#board .checker.selected').length};"
    )


def wait(driver, check, timeout: float = 30):
    """Wait for ``check``; on a timeout, say what the page showed (its address and text)."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=STALE).until(
            check
        )
    except TimeoutException:
        shown = driver.execute_script("return document.body.innerText.slice(0, 800)")
        raise TimeoutException(
            f"waited {timeout} s on {driver.current_url}, which shows: {shown!r}"
        ) from None


def text_of(driver, selector: str) -> str | None:
    """The text of what ``selector`` finds, read in one go: a list the page draws anew (on
    every news) may replace an element between a find and a read."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;",
        selector,
    )


def click(driver, selector: str) -> None:
    """Click what ``selector`` finds, found again if the page drew it anew meanwhile."""
    wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector).click() or True)


def click_point(driver, point: int) -> None:
    """Click a point (0: the tray, borne off) of the board, as a person would."""

    def clicked(d) -> bool:
        d.find_element(By.CSS_SELECTOR, f'#board rect.hit[data-point="{point}"]').click()
        return True

    wait(driver, clicked, 10)


def spectator_turn(driver) -> int:
    """The turn the read-only view's live board shows."""
    return int(
        driver.execute_script(
            "const b = document.querySelector('#live svg.nardy-board');"
            "return b ? b.dataset.turn : 0;"
        )
    )


def type_play(driver, notation: str) -> None:
    box = driver.find_element(By.ID, "notation")
    box.clear()
    box.send_keys(notation)
    driver.find_element(By.ID, "send-typed").click()


def sign_in(driver, url: str, token: str) -> None:
    driver.get(url + "/play")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "signin-button").click()


def play_out(driver, stub, game_id: str, seat, play_turn) -> pb.GameState:
    """Play the game on its page to the end: ``play_turn(mine, turn_id, legal plays)``
    makes each of the person's turns on the page (``mine``: turns played before). Each
    turn the page offers is checked against the arbiter (GetGame with the seat's token).
    The final state."""
    mine = 0
    while True:
        shown = wait(
            driver,
            lambda d: (lambda p: p if p["turn"] or "win" in p["status"] else False)(page(d)),
            60,
        )
        if not shown["turn"]:
            break  # the game is over
        turn_id = int(shown["turn"])
        state = stub.GetGame(api.GetGameRequest(game_id=game_id), metadata=seat).state
        assert state.turn_id == turn_id and state.side_to_move == state.your_color
        assert shown["position"] == state.position
        assert "Your turn" in shown["status"]
        play_turn(mine, turn_id, list(state.legal_plays))
        wait(driver, lambda d, t=str(turn_id): page(d)["turn"] != t)
        mine += 1
    return stub.GetGame(api.GetGameRequest(game_id=game_id), metadata=seat).state


def against_the_bot(arbiter, **fields) -> tuple[api.CreateMatchResponse, tuple]:
    """A match of a person (the first seat) against ``nardy engine random`` (a process of
    its own in the second), with CreateMatch's other ``fields``: the match, and the
    person's seat metadata."""
    r = arbiter.stub.CreateMatch(
        api.CreateMatchRequest(
            first=api.SeatSpec(display_name="person"),
            second=api.SeatSpec(display_name="random-bot"),
            **fields,
        )
    )
    arbiter.engine(r.second_seat_token)
    return r, (("authorization", f"Bearer {r.first_seat_token}"),)


def on_its_page(arbiter, browser, **fields) -> tuple[api.CreateMatchResponse, tuple]:
    """:func:`against_the_bot`, the person signed in with the seat token and on the game's
    page."""
    r, seat = against_the_bot(arbiter, **fields)
    sign_in(browser, arbiter.http_url, r.first_seat_token)
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, f'#games li[data-game="{r.game_id}"]'))
    browser.get(f"{arbiter.http_url}/play/game/{r.game_id}")
    return r, seat


def test_a_person_plays_a_whole_game_against_an_engine_in_the_browser(arbiter, browser):
    stub = arbiter.stub
    r, seat = against_the_bot(arbiter)

    # sign in with the seat token; the game is on the list
    sign_in(browser, arbiter.http_url, r.first_seat_token)
    link = wait(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, f'#games li[data-game="{r.game_id}"] a')
    )
    assert "random-bot" in link.text
    assert r.first_seat_token not in browser.page_source  # (kept, never shown)
    link.click()
    wait(browser, lambda d: page(d)["status"] not in ("", "connecting…"))
    play_tab = browser.current_window_handle

    # a spectator's tab of the read-only view
    browser.switch_to.new_window("tab")
    browser.get(f"{arbiter.http_url}/game/{r.game_id}")
    spectator_tab = browser.current_window_handle
    browser.switch_to.window(play_tab)

    clicked = typed = refused = 0
    seen_by_spectator = False

    def play_turn(mine: int, turn_id: int, plays: list[pb.LegalPlay]) -> None:
        nonlocal clicked, typed, refused, seen_by_spectator
        if mine == 4:  # the spectator's page caught up by itself
            browser.switch_to.window(spectator_tab)
            wait(browser, lambda d: spectator_turn(d) >= turn_id)
            seen_by_spectator = True
            browser.switch_to.window(play_tab)
        if mine == 1:  # an illegal attempt first: refused with the reason, the turn goes on
            type_play(browser, "1/off")
            wait(browser, lambda d: page(d)["message"].startswith("Refused"))
            refused += 1
            assert int(page(browser)["turn"]) == turn_id
        if mine % 3 == 0:  # built by clicking: each step's checker, then where it goes
            play = max(plays, key=lambda p: len(p.steps))
            steps = [(getattr(s, "from"), s.to) for s in play.steps]
            click_point(browser, steps[0][0])
            wait(browser, lambda d: page(d)["selected"] == 1)
            assert steps[0][1] in page(browser)["targets"]
            if mine == 0:  # undo a step
                click_point(browser, steps[0][1])
                wait(browser, lambda d: "So far" in page(d)["building"] or page(d)["send"])
                browser.find_element(By.ID, "undo").click()
                wait(browser, lambda d: "Pick a checker" in page(d)["building"])
                click_point(browser, steps[0][0])
            for i, (src, dst) in enumerate(steps):
                if i:
                    click_point(browser, src)
                wait(browser, lambda d, dst=dst: dst in page(d)["targets"])
                click_point(browser, dst)
            wait(browser, lambda d: page(d)["send"])
            assert play.notation in page(browser)["building"]
            browser.find_element(By.ID, "send").click()
            clicked += 1
        else:  # typed
            type_play(browser, plays[-1].notation)
            typed += 1

    final = play_out(browser, stub, r.game_id, seat, play_turn)
    assert final.status == pb.GAME_STATUS_FINISHED
    assert final.result.termination == pb.TERMINATION_NORMAL  # borne off: a whole game
    shown = page(browser)
    won = final.result.winner == final.your_color
    assert shown["status"].startswith("You win" if won else "random-bot wins")
    plays_made = [
        e
        for e in stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id, from_start=True))
        if e.type in (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED)
    ]
    assert shown["moves"] == len(plays_made)
    # a whole game's move list leaves the panel beside the board (it wrapped below it)
    board = browser.find_element(By.ID, "board").rect
    panel = browser.find_element(By.CSS_SELECTOR, "#play aside").rect
    assert panel["x"] >= board["x"] + board["width"] and panel["y"] < board["y"] + 50
    # in one column that scrolls down, none sideways (three columns ran into each other)
    moves = browser.find_element(By.ID, "moves")
    fits = "return arguments[0].scrollWidth <= arguments[0].clientWidth"
    assert browser.execute_script(fits, moves)
    assert clicked >= 3 and typed >= 3 and refused == 1 and seen_by_spectator
    mine_refused = (
        final.white_refused if final.your_color == pb.COLOR_WHITE else final.black_refused
    )
    assert mine_refused == 1

    # the spectator's tab shows the end too
    browser.switch_to.window(spectator_tab)
    wait(
        browser,
        lambda d: (
            d.execute_script(
                "const b = document.querySelector('#live svg.nardy-board');"
                "return b && b.dataset.status;"
            )
            == "finished"
        ),
    )


def test_a_player_answers_challenges_on_the_page_and_resigns(arbiter, browser):
    """A registered player signs in with its player token: the challenges made to it are
    listed (one withdrawn by its maker leaves the list); it declines one and accepts the
    other, which takes it to that game, where it resigns (two clicks)."""
    stub = arbiter.stub

    def register(name: str) -> tuple[str, tuple]:
        token = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name)).token
        return token, (("authorization", f"Bearer {token}"),)

    bob_token, bob = register("bob")
    challenges = {}
    for name in ("alice", "carol", "dave"):
        _, md = register(name)
        r = stub.CreateMatch(
            api.CreateMatchRequest(
                first=api.SeatSpec(player_name=name), second=api.SeatSpec(player_name="bob")
            ),
            metadata=md,
        )
        assert r.challenge
        challenges[name] = (r, md)

    sign_in(browser, arbiter.http_url, bob_token)
    rows = wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#challenges li")) == 3)
    assert rows
    dave, dave_md = challenges["dave"]
    stub.DeclineChallenge(api.DeclineChallengeRequest(match_id=dave.match_id), metadata=dave_md)
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#challenges li")) == 2)
    assert "dave" not in browser.find_element(By.ID, "challenges").text
    carol = challenges["carol"][0]
    click(browser, f'li[data-match="{carol.match_id}"] .decline')
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#challenges li")) == 1)
    left = stub.ListChallenges(api.ListChallengesRequest(), metadata=bob).challenges
    assert [c.match_id for c in left] == [challenges["alice"][0].match_id]
    alice, alice_md = challenges["alice"]
    row = f'li[data-match="{alice.match_id}"]'
    assert "from alice" in text_of(browser, row)
    click(browser, row + " .accept")
    wait(browser, lambda d: d.current_url.endswith(f"/play/game/{alice.game_id}"))
    stream = stub.SubscribeGame(api.SubscribeGameRequest(game_id=alice.game_id), metadata=alice_md)
    wait(browser, lambda d: "Your turn" in page(d)["status"] or "to play" in page(d)["status"])
    # the buttons stay where they are while the lines above them fill: emptied, those
    # lines keep their room (a click must not land on what moved under the pointer)
    stays_put = (
        "const lines = ['clock-white', 'clock-black', 'building', 'message']"
        "  .map((id) => document.getElementById(id));"
        "const where = () => ['resign', 'send'].map("
        "  (id) => document.getElementById(id).getBoundingClientRect().y);"
        "const before = where(), texts = lines.map((p) => p.textContent);"
        "lines.forEach((p) => { p.textContent = ''; });"
        "const empty = where();"
        "lines.forEach((p, i) => { p.textContent = texts[i]; });"
        "return [before, empty];"
    )
    wait(browser, lambda d: d.find_element(By.ID, "clock-white").text)
    before, emptied = browser.execute_script(stays_put)
    assert before == emptied
    resign = browser.find_element(By.ID, "resign")
    resign.click()
    armed = time.monotonic()
    assert resign.text == "Really resign?"
    resign.click()
    between = time.monotonic() - armed  # (over 4 s, the page has disarmed: a slow machine)

    def resigned(_) -> bool:  # the arbiter has it (a failure here: it never arrived)
        game = api.GetGameRequest(game_id=alice.game_id)
        return stub.GetGame(game, metadata=alice_md).state.status == pb.GAME_STATUS_FINISHED

    try:
        wait(browser, resigned)
    except TimeoutException as e:
        raise AssertionError(f"{e.msg} ({between:.1f} s between the two clicks)") from None
    wait(browser, lambda d: page(d)["status"].startswith("alice wins"))
    for ev in stream:
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            assert ev.state.result.termination == pb.TERMINATION_RESIGNATION
            break
    stream.cancel()


def test_a_person_challenges_a_bot_on_the_page_and_plays_the_game(arbiter, browser):
    """A registered person signs in, challenges a registered bot by name on /play and sees
    the challenge wait; its operator starts it (``nardy engine random
    --accept-challenges``, a process of its own), it accepts, and the page opens the game,
    which the person plays to its end. A challenge of a variant the bot does not play is
    not part of this: tests/server/test_sdk_challenges.py."""
    stub = arbiter.stub
    person = stub.RegisterPlayer(api.RegisterPlayerRequest(name="zara", bot=False)).token
    bot = stub.RegisterPlayer(api.RegisterPlayerRequest(name="random-bot", bot=True)).token

    sign_in(browser, arbiter.http_url, person)
    form = wait(browser, lambda d: (f := d.find_element(By.ID, "challenge")).is_displayed() and f)
    form.find_element(By.ID, "me").send_keys("zara")
    form.find_element(By.ID, "opponent").send_keys("random-bot")
    seconds = form.find_element(By.ID, "turn-seconds")
    seconds.clear()
    seconds.send_keys("60")
    form.find_element(By.ID, "challenge-button").click()
    pending = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#sent li"))
    assert "to random-bot" in pending.text and "60 s per turn" in pending.text
    wait(browser, lambda d: "waiting for an answer" in pending.text)
    (waiting,) = stub.ListChallenges(
        api.ListChallengesRequest(), metadata=(("authorization", f"Bearer {bot}"),)
    ).challenges
    game_id = pending.get_attribute("data-game")
    assert waiting.game_id == game_id and waiting.challenger.name == "zara"

    arbiter.engine(bot, "--accept-challenges")  # the bot comes: it accepts, the game opens
    wait(browser, lambda d: d.current_url.endswith(f"/play/game/{game_id}"), 120)

    def typed(mine: int, turn_id: int, plays: list[pb.LegalPlay]) -> None:
        type_play(browser, plays[-1].notation)

    seat = (("authorization", f"Bearer {person}"),)
    final = play_out(browser, stub, game_id, seat, typed)
    assert final.status == pb.GAME_STATUS_FINISHED
    assert final.result.termination == pb.TERMINATION_NORMAL  # borne off: a whole game
    assert {final.white.name, final.black.name} == {"zara", "random-bot"}
    won = final.result.winner == final.your_color
    assert page(browser)["status"].startswith("You win" if won else "random-bot wins")


def test_many_challenges_wait_on_the_page_at_once(arbiter, browser):
    """A browser opens few connections to one server (six): the page holds no stream per
    challenge it sent, so with six waiting it still makes more, and each answer reaches
    it, after a reload too: a declined one says so, an accepted one opens its game."""
    stub = arbiter.stub
    person = stub.RegisterPlayer(api.RegisterPlayerRequest(name="zara", bot=False)).token
    names = [f"bot{i}" for i in range(7)]
    bots = {n: stub.RegisterPlayer(api.RegisterPlayerRequest(name=n)).token for n in names}
    sign_in(browser, arbiter.http_url, person)
    form = wait(browser, lambda d: (f := d.find_element(By.ID, "challenge")).is_displayed() and f)
    form.find_element(By.ID, "me").send_keys("zara")
    for n, name in enumerate(names, start=1):
        opponent = form.find_element(By.ID, "opponent")
        opponent.clear()
        opponent.send_keys(name)
        form.find_element(By.ID, "challenge-button").click()
        wait(browser, lambda d, n=n: len(d.find_elements(By.CSS_SELECTOR, "#sent li")) == n, 20)
    browser.refresh()  # a reload keeps the list (the tab's storage) and asks again

    def waiting(d) -> dict:
        rows = d.find_elements(By.CSS_SELECTOR, "#sent li")
        shown = {li.text.split(" ")[1]: li for li in rows if "waiting for an answer" in li.text}
        return len(shown) == len(names) and shown

    items = wait(browser, waiting)
    order = [li.text.split(" ")[1] for li in browser.find_elements(By.CSS_SELECTOR, "#sent li")]
    assert order == names[::-1]  # the newest first, as before the reload

    def challenge_to(name: str) -> api.Challenge:
        md = (("authorization", f"Bearer {bots[name]}"),)
        (waiting,) = stub.ListChallenges(api.ListChallengesRequest(), metadata=md).challenges
        return waiting, md

    declined, md = challenge_to("bot2")
    stub.DeclineChallenge(api.DeclineChallengeRequest(match_id=declined.match_id), metadata=md)
    wait(browser, lambda _: "declined" in items["bot2"].text)
    assert "waiting for an answer" in items["bot5"].text
    # the person withdraws one: the bot's list of challenges no longer has it
    items["bot3"].find_element(By.CSS_SELECTOR, "button.withdraw").click()
    wait(browser, lambda _: "withdrawn" in items["bot3"].text)
    md3 = (("authorization", f"Bearer {bots['bot3']}"),)
    assert not stub.ListChallenges(api.ListChallengesRequest(), metadata=md3).challenges
    accepted, md = challenge_to("bot5")
    stub.AcceptChallenge(api.AcceptChallengeRequest(match_id=accepted.match_id), metadata=md)
    wait(browser, lambda d: d.current_url.endswith(f"/play/game/{accepted.game_id}"))
    seated = stub.GetGame(api.GetGameRequest(game_id=accepted.game_id), metadata=md).state
    assert not seated.challenge_pending and seated.status == pb.GAME_STATUS_WAITING


def slow_answers(method: str) -> str:
    """A script that holds the page's answers to ``method`` while ``__hold`` is set, as a
    slow network would, and counts the answers the page has finished with (``__settled``:
    counted once the page's code after the answer has run)."""
    return """
const real = window.fetch;
window.__hold = false; window.__held = []; window.__settled = 0;
window.fetch = async function (url, init) {
  const response = await real(url, init);
  if (!String(url).endsWith("/METHOD")) return response;
  if (window.__hold) await new Promise((release) => window.__held.push(release));
  const json = response.json.bind(response);
  response.json = async function () {
    const value = await json();
    setTimeout(function () { window.__settled += 1; }, 0);
    return value;
  };
  return response;
};
""".replace("METHOD", method)


def test_a_late_answer_never_brings_back_a_declined_challenge(arbiter, browser):
    """The challenges list is asked again on every challenge news. An answer asked before a
    decline and arriving after it (a slow network, a loaded server) must not bring the
    declined challenge back: only the newest answer is shown."""
    stub = arbiter.stub
    token = {}
    for name in ("bob", "alice", "carol", "dave"):
        token[name] = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name)).token

    def challenge(name: str) -> api.CreateMatchResponse:
        return stub.CreateMatch(
            api.CreateMatchRequest(
                first=api.SeatSpec(player_name=name), second=api.SeatSpec(player_name="bob")
            ),
            metadata=(("authorization", f"Bearer {token[name]}"),),
        )

    def listed(d) -> list[str]:
        return [li.text.split(" ")[1] for li in d.find_elements(By.CSS_SELECTOR, "#challenges li")]

    browser.get(arbiter.http_url + "/play")
    browser.execute_script(slow_answers("ListChallenges"))
    browser.find_element(By.ID, "token").send_keys(token["bob"])  # (no reload: it stays)
    browser.find_element(By.ID, "signin-button").click()
    wait(browser, lambda d: d.execute_script("return window.__settled") == 1)
    assert listed(browser) == []
    for n, name in enumerate(("alice", "carol"), start=2):  # each news: the list asked again
        challenge(name)
        wait(browser, lambda d, n=n: d.execute_script("return window.__settled") == n)
    assert sorted(listed(browser)) == ["alice", "carol"]

    browser.execute_script("window.__hold = true;")
    challenge("dave")  # its news asks again; the answer (alice, carol, dave) is held
    wait(browser, lambda d: d.execute_script("return window.__held.length") == 1)
    browser.execute_script("window.__hold = false;")
    carol = browser.find_element(By.XPATH, '//*[@id="challenges"]/li[contains(., "carol")]')
    carol.find_element(By.CSS_SELECTOR, ".decline").click()
    wait(browser, lambda d: d.execute_script("return window.__settled") == 4)
    assert sorted(listed(browser)) == ["alice", "dave"]

    browser.execute_script("window.__held.shift()();")  # the old answer arrives at last
    wait(browser, lambda d: d.execute_script("return window.__settled") == 5)
    assert sorted(listed(browser)) == ["alice", "dave"]


def test_a_play_is_taken_while_the_answer_to_the_last_is_still_on_its_way(arbiter, browser):
    """The game's stream can bring the person's next turn before the answer to their last
    play (a loaded server, a slow network). That turn's play is taken at once: an answer
    still on its way for an earlier turn never holds up, nor silently drops, a new one."""
    stub = arbiter.stub
    r, seat = against_the_bot(arbiter)
    sign_in(browser, arbiter.http_url, r.first_seat_token)
    wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, f'#games li[data-game="{r.game_id}"]'))
    browser.get(f"{arbiter.http_url}/play/game/{r.game_id}")
    browser.execute_script(slow_answers("SubmitPlay"))

    def my_turn(d) -> int:
        return int(page(d)["turn"] or 0)

    def state() -> pb.GameState:
        return stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state

    first = wait(browser, my_turn, 60)
    browser.execute_script("window.__hold = true;")
    type_play(browser, state().legal_plays[-1].notation)
    wait(browser, lambda d: d.execute_script("return window.__held.length") == 1)
    second = wait(browser, lambda d: (t := my_turn(d)) != first and t)  # the answer still held
    assert state().turn_id == second
    browser.execute_script("window.__hold = false;")
    type_play(browser, state().legal_plays[-1].notation)
    wait(browser, lambda _: state().turn_id != second)  # the arbiter has the second play
    assert browser.execute_script("return window.__held.length") == 1
    wait(browser, lambda d: d.execute_script("return window.__settled") == 1)
    browser.execute_script("window.__held.shift()();")  # the first answer arrives at last
    wait(browser, lambda d: d.execute_script("return window.__settled") == 2)
    assert "Refused" not in page(browser)["message"]


def test_a_page_opened_mid_turn_shows_the_time_left_now(arbiter, browser):
    """The page replays the game from its start and counted the clock from each event's
    arrival: opened (or reloaded) 40 s into a turn, it showed the whole turn's time, and a
    person could lose on time believing they had plenty. It counts from when the server
    read the clocks (each event's time)."""
    stub = arbiter.stub
    r, seat = on_its_page(arbiter, browser, options=pb.GameOptions(turn_time_ms=60_000))
    wait(browser, lambda d: int(page(d)["turn"] or 0), 60)  # the person's turn

    def left_on_page() -> float:
        shown = browser.find_element(
            By.CSS_SELECTOR, ".clock.running"
        ).text  # "person (you) · 0:55"
        minutes, seconds = shown.rsplit(" ", 1)[1].split(":")
        return 60 * int(minutes) + int(seconds)

    time.sleep(5)  # (the turn's clock runs: the condition under test, not an event waited on)
    browser.refresh()
    wait(browser, lambda d: int(page(d)["turn"] or 0), 60)
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".clock.running"))
    state = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state
    mine = state.white_clock if state.your_color == pb.COLOR_WHITE else state.black_clock
    assert abs(left_on_page() - mine.remaining_ms / 1000) < 2.5, (left_on_page(), mine)


def test_only_a_point_with_your_checker_on_it_can_be_picked_up(arbiter, browser):
    """With 6-4 on the first turn (24/18 18/14) the page let a person pick up the empty
    point 18, a later step's start, and move a ghost checker from it to 14.
    A step starts only where one of the mover's checkers stands now."""
    # the opening throw makes the first seat white, then 6-4
    on_its_page(arbiter, browser, dice=[2, 1, 6, 4])
    wait(browser, lambda d: page(d)["turn"] == "1")
    click_point(browser, 18)  # empty: nothing is picked up
    assert page(browser)["selected"] == 0 and page(browser)["targets"] == []
    click_point(browser, 24)  # the head: its checker goes to 18 or 20, and on to 14 (one
    wait(browser, lambda d: page(d)["selected"] == 1)  # play, either order: RULES §7)
    assert sorted(page(browser)["targets"]) == [14, 18, 20]


def test_the_next_game_of_a_match_opens_by_itself(arbiter, browser):
    """A match's next game is called off when a seat does not come within its start
    timeout: a person who did not click "next game" within a minute lost the match. The
    page now opens it by itself, ten seconds after the game ended."""
    stub = arbiter.stub
    r, seat = on_its_page(arbiter, browser, target_points=3)
    wait(browser, lambda d: int(page(d)["turn"] or 0), 60)
    stub.Resign(api.ResignRequest(game_id=r.game_id), metadata=seat)
    state = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state
    assert state.next_game_id
    wait(browser, lambda d: "opens in" in d.find_element(By.ID, "next-game").text)
    wait(browser, lambda d: d.current_url.endswith(f"/play/game/{state.next_game_id}"), 30)
    # the match's score by player (white-black flipped as the colours changed)
    wait(
        browser, lambda d: "match to 3: you 0, random-bot 2" in d.find_element(By.ID, "title").text
    )


def in_points_of(notation: str, side: Color, viewer: Color, rules_name: str = "long") -> str:
    """``side``'s play written in ``viewer``'s point numbers (the library's point index)."""
    rules = variant(rules_name)
    mine = {rules.point_index(viewer, p): p for p in range(1, 25)}

    def part(text: str) -> str:
        name = text.rstrip("*")
        return (str(mine[rules.point_index(side, int(name))]) if name.isdigit() else name) + (
            "*" if text.endswith("*") else ""
        )

    return " ".join("/".join(part(x) for x in move.split("/")) for move in notation.split())


def test_the_opponents_play_is_written_in_your_point_numbers(arbiter, browser):
    """The board is drawn in the person's numbers, but the opponent's plays were written in
    the opponent's ("They played 24/18 18/13" for a checker on your 12, 6 and 1)."""
    stub = arbiter.stub
    # the person white, 3-1; then black 6-5
    r, seat = on_its_page(arbiter, browser, dice=[2, 1, 3, 1, 6, 5])
    wait(browser, lambda d: page(d)["turn"] == "1")
    state = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state
    type_play(browser, state.legal_plays[0].notation)
    wait(browser, lambda d: "They played" in page(d)["message"])
    events = stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id, from_start=True))
    black = next(
        ev.play
        for ev in events
        if ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.side == pb.COLOR_BLACK
    )
    events.cancel()
    mine = in_points_of(black.notation, Color.BLACK, Color.WHITE)
    assert mine != black.notation  # (the numbers differ: the test means something)
    assert page(browser)["message"] == f"They played {mine}"
    assert browser.find_elements(By.CSS_SELECTOR, "#moves li")[1].text == f"b 6-5 {mine}"


def test_a_phones_width_fits_the_pages_and_their_news_is_read_out(arbiter, browser):
    """At a phone's width (390 px) the sign-in form, the home page and a game (its panel
    below the board) fit the window; the status and the messages are live regions, read
    out by screen readers."""

    def fits(d) -> bool:
        return d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")

    r, _ = against_the_bot(arbiter, dice=[2, 1, 6, 4])
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{arbiter.http_url}/play")
        wait(browser, lambda d: d.find_element(By.ID, "signin").is_displayed())
        assert fits(browser)
        sign_in(browser, arbiter.http_url, r.first_seat_token)
        wait(
            browser,
            lambda d: d.find_element(By.CSS_SELECTOR, f'#games li[data-game="{r.game_id}"]'),
        )
        assert fits(browser)
        browser.get(f"{arbiter.http_url}/play/game/{r.game_id}")
        wait(browser, lambda d: page(d)["turn"] == "1")
        assert fits(browser)
        board = browser.find_element(By.ID, "board").rect
        panel = browser.find_element(By.CSS_SELECTOR, "#play aside").rect
        assert panel["y"] >= board["y"] + board["height"] - 1
    finally:
        browser.set_window_size(1200, 1000)
    for region in ("status", "message"):
        assert browser.find_element(By.ID, region).get_attribute("aria-live") == "polite"


def test_a_page_opened_on_many_challenges_asks_for_them_a_few_times_and_shows_every_term(
    arbiter, browser
):
    """The page replays one challenge news per challenge waiting, and asked the whole list
    again for each: a player with thousands waiting had its browser ask thousands of times.
    News that comes while the list is being asked is answered by one more ask. A challenge
    shows every term that can decide its games before it is accepted (a limit of refused
    plays lost a person's game to one typo, unannounced)."""
    stub = arbiter.stub
    bob = stub.RegisterPlayer(api.RegisterPlayerRequest(name="bob", bot=False)).token
    fans = [stub.RegisterPlayer(api.RegisterPlayerRequest(name=f"fan{i}")).token for i in range(4)]
    for n in range(20):
        stub.CreateMatch(
            api.CreateMatchRequest(
                first=api.SeatSpec(player_name=f"fan{n % 4}"),
                second=api.SeatSpec(player_name="bob"),
                options=pb.GameOptions(illegal_play_limit=2, koks=True, time_bank_ms=30_000),
            ),
            metadata=(("authorization", f"Bearer {fans[n % 4]}"),),
        )
    browser.get(arbiter.http_url + "/play")
    browser.execute_script(
        """const real = window.fetch; window.__asked = 0;
        window.fetch = function (url, init) {
          if (String(url).endsWith("/ListChallenges")) window.__asked += 1;
          return real(url, init);
        };"""
    )
    browser.find_element(By.ID, "token").send_keys(bob)
    browser.find_element(By.ID, "signin-button").click()
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#challenges li")) == 20)
    assert browser.execute_script("return window.__asked") <= 4
    shown = text_of(browser, "#challenges li")
    for term in ("lost after 2 refused plays", "koks counts 3", "time bank 30 s"):
        assert term in shown, shown


def click_24_20_14(driver, stub, game_id: str, seat) -> pb.GameState:
    """On the person's first turn, 6-4: pick the checker on 24 (18, 20 and 14 offered),
    move it to 20, then on to 14, and send; the state once the arbiter has the play."""
    wait(driver, lambda d: int(page(d)["turn"] or 0), 60)
    click_point(driver, 24)
    wait(driver, lambda d: {20, 18, 14} <= set(page(d)["targets"]))
    click_point(driver, 20)  # the 4 first
    wait(driver, lambda d: "24/20" in page(d)["building"])
    click_point(driver, 20)  # the same checker on
    wait(driver, lambda d: 14 in page(d)["targets"])
    click_point(driver, 14)
    wait(driver, lambda d: page(d)["send"])
    driver.find_element(By.ID, "send").click()

    def played(_) -> pb.GameState | bool:
        state = stub.GetGame(api.GetGameRequest(game_id=game_id), metadata=seat).state
        return state.turn_id > 1 and state

    return wait(driver, played)


def test_a_checker_moved_twice_may_take_its_dice_in_either_order(arbiter, browser):
    """White's first 6-4 from the head has one legal play, 24/14, which the arbiter lists
    as 24/18 18/14: the page offered only that order, where the terminal client takes
    24/20 20/14 as well (the same end position, RULES §7). Both orders are offered now."""
    stub = arbiter.stub
    r, seat = on_its_page(arbiter, browser, dice=[2, 1, 6, 4])  # the opening, white's 6-4
    state = click_24_20_14(browser, stub, r.game_id, seat)
    counts = [int(c) for c in state.position.split("/")[1].split(",")]
    assert counts[0] == 14 and counts[10] == 1  # white: 24/14 (its 14 is index 10)
    assert "Refused" not in page(browser)["message"]


def test_text_that_is_no_play_is_not_sent(arbiter, browser):
    """Typed text that is not written as a play (`hint`, a point alone) is answered on the
    page and never sent: the arbiter counts refused plays, and a match may set a limit
    (one here: a single refusal would lose the game)."""
    stub = arbiter.stub
    limit = pb.GameOptions(illegal_play_limit=1)
    r, seat = on_its_page(arbiter, browser, dice=[2, 1, 6, 4], options=limit)
    wait(browser, lambda d: page(d)["turn"] == "1")
    for text in ("hint", "24", "24/"):
        for _ in range(3):  # (typed again if the page was loaded anew meanwhile)
            browser.execute_script("document.getElementById('message').textContent = ''")
            type_play(browser, text)
            with contextlib.suppress(TimeoutException):
                wait(browser, lambda d: page(d)["message"].startswith("Not a play: write its"), 5)
                break
        else:
            raise AssertionError(f"{text!r} was not answered on the page: {page(browser)}")
    state = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state
    assert state.status == pb.GAME_STATUS_IN_PROGRESS and state.turn_id == 1  # nothing refused
    type_play(browser, "24/14")  # a play: sent, and taken
    wait(browser, lambda d: page(d)["turn"] != "1")


def test_short_nardy_the_order_that_passes_a_blot_by_is_the_play_that_does_not_hit(
    arbiter, browser
):
    """§8: 24/18* 18/14 hits the blot on 18, 24/20 20/14 does not: two plays. Built as
    24/20 then 20/14 on the page, the play sent is the one that does not hit (the hitting
    play taken in the other order ended as it does, and was sent instead)."""
    start = "w/1,-14,0,0,0,0,-1,0,0,0,0,0,0,0,0,0,0,0,14,0,0,0,0,0/0,0"  # black's blot: 18
    stub = arbiter.stub
    r, seat = on_its_page(
        arbiter, browser, options=pb.GameOptions(variant="short"), start_position=start,
        dice=[6, 4, 3, 2],
    )  # fmt: skip
    click_24_20_14(browser, stub, r.game_id, seat)
    events = stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=r.game_id, from_start=True), metadata=seat, timeout=30
    )
    first = next(e for e in events if e.type == pb.EVENT_TYPE_PLAY_MADE)
    events.cancel()
    assert first.play.notation == "24/20 20/14", first.play.notation  # no hit
