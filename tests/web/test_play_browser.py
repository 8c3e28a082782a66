"""A person plays a whole game in a real browser against an engine process.

Headless Chromium signs in on /play with a seat token, finds its game on its list, and
plays every turn on /play/game/ID until the game ends: plays built by clicking checkers
(the points a checker can reach highlighted, an undo), plays typed in notation, and an
illegal attempt refused with the reason. The other seat is ``nardy engine random`` as a
process of its own. Meanwhile a spectator's tab of the read-only view follows the game.
The page's turns, highlights and result are checked against the arbiter (GetGame with the
seat's token over gRPC)."""

from __future__ import annotations

import os
import subprocess
import sys

import grpc
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer

ENGINE = [sys.executable, "-m", "nardy", "engine", "random"]
STALE = (StaleElementReferenceException,)


@pytest.fixture
def arbiter(tmp_path):
    with (
        EmbeddedServer(db=str(tmp_path / "a.db"), http_port=0) as srv,
        grpc.insecure_channel(srv.address) as channel,
    ):
        srv.stub = api_grpc.ArbiterServiceStub(channel)
        engines: list[subprocess.Popen] = []

        def engine(token: str) -> None:
            env = {**os.environ, "NARDY_SERVER": srv.address, "NARDY_TOKEN": token}
            log = open(tmp_path / f"engine{len(engines)}.log", "w")  # noqa: SIM115
            engines.append(subprocess.Popen(ENGINE, env=env, stdout=log, stderr=log))

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
    return WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=STALE).until(
        check
    )


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


def test_a_person_plays_a_whole_game_against_an_engine_in_the_browser(arbiter, browser):
    stub = arbiter.stub
    r = stub.CreateMatch(
        api.CreateMatchRequest(
            first=api.SeatSpec(display_name="person"),
            second=api.SeatSpec(display_name="random-bot"),
        )
    )
    seat = (("authorization", f"Bearer {r.first_seat_token}"),)
    arbiter.engine(r.second_seat_token)

    # sign in with the seat token; the game is on the list
    browser.get(arbiter.http_url + "/play")
    browser.find_element(By.ID, "token").send_keys(r.first_seat_token)
    browser.find_element(By.ID, "signin-button").click()
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

    mine = 0  # my turns played
    clicked = typed = refused = 0
    seen_by_spectator = False
    while True:
        shown = wait(
            browser,
            lambda d: (lambda p: p if p["turn"] or "win" in p["status"] else False)(page(d)),
            60,
        )
        if not shown["turn"]:
            break  # the game is over
        turn_id = int(shown["turn"])
        state = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state
        assert state.turn_id == turn_id and state.side_to_move == state.your_color
        assert shown["position"] == state.position
        assert "Your turn" in shown["status"]
        plays = list(state.legal_plays)
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
        wait(browser, lambda d, t=str(turn_id): page(d)["turn"] != t)
        mine += 1
        if mine == 4:  # the spectator's page caught up by itself
            browser.switch_to.window(spectator_tab)
            wait(browser, lambda d, t=turn_id: spectator_turn(d) > t)
            seen_by_spectator = True
            browser.switch_to.window(play_tab)

    final = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=seat).state
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
    listed; it declines one and accepts the other, which takes it to that game, where it
    resigns (two clicks)."""
    stub = arbiter.stub

    def register(name: str) -> tuple[str, tuple]:
        token = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name)).token
        return token, (("authorization", f"Bearer {token}"),)

    bob_token, bob = register("bob")
    challenges = {}
    for name in ("alice", "carol"):
        _, md = register(name)
        r = stub.CreateMatch(
            api.CreateMatchRequest(
                first=api.SeatSpec(player_name=name), second=api.SeatSpec(player_name="bob")
            ),
            metadata=md,
        )
        assert r.challenge
        challenges[name] = (r, md)

    browser.get(arbiter.http_url + "/play")
    browser.find_element(By.ID, "token").send_keys(bob_token)
    browser.find_element(By.ID, "signin-button").click()
    rows = wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#challenges li")) == 2)
    assert rows
    carol = challenges["carol"][0]
    browser.find_element(By.CSS_SELECTOR, f'li[data-match="{carol.match_id}"] .decline').click()
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#challenges li")) == 1)
    left = stub.ListChallenges(api.ListChallengesRequest(), metadata=bob).challenges
    assert [c.match_id for c in left] == [challenges["alice"][0].match_id]
    alice, alice_md = challenges["alice"]
    row = browser.find_element(By.CSS_SELECTOR, f'li[data-match="{alice.match_id}"]')
    assert "from alice" in row.text
    row.find_element(By.CSS_SELECTOR, ".accept").click()
    wait(browser, lambda d: d.current_url.endswith(f"/play/game/{alice.game_id}"))
    stream = stub.SubscribeGame(api.SubscribeGameRequest(game_id=alice.game_id), metadata=alice_md)
    wait(browser, lambda d: "Your turn" in page(d)["status"] or "to play" in page(d)["status"])
    resign = browser.find_element(By.ID, "resign")
    resign.click()
    assert resign.text == "Really resign?"
    resign.click()
    wait(browser, lambda d: page(d)["status"].startswith("alice wins"))
    for ev in stream:
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            assert ev.state.result.termination == pb.TERMINATION_RESIGNATION
            break
    stream.cancel()
