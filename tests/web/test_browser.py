"""The web view in a real browser: a live game's board advances without a reload, a
finished game replays with its move list, and a ladder's page shows the ladder RPCs' table."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.core import tables
from server.edge.web import pages
from tests.server.conftest import held_core

ENGINE = [sys.executable, "-m", "clients", "engine", "random"]


def _auth(token: str):
    return (("authorization", f"Bearer {token}"),)


def _engine(address: str, token: str) -> subprocess.Popen:
    env = {**os.environ, "NARDY_SERVER": address, "NARDY_TOKEN": token}
    return subprocess.Popen(ENGINE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


pytestmark = pytest.mark.arbiter(http_port=0)  # the web view on a port of its own


@pytest.fixture
def arbiter(arbiter):
    """The arbiter (tests/conftest.py) with stubs, and engines to start on its seats."""
    channel = grpc.insecure_channel(arbiter.address)
    arbiter.stub = api_grpc.ArbiterServiceStub(channel)
    arbiter.ladders = ladder_grpc.LadderServiceStub(channel)
    procs: list[subprocess.Popen] = []
    arbiter.engine = lambda token: procs.append(_engine(arbiter.address, token))
    try:
        yield arbiter
    finally:
        for p in procs:
            p.kill()
            p.wait()
        channel.close()


def live_board(driver) -> tuple[int, str]:
    """The live board's turn and position, read in one go (the page swaps it every second)."""
    got = driver.execute_script(
        "const b = document.querySelector('#live svg.nardy-board');"
        "return b ? [b.dataset.turn, b.dataset.position] : null;"
    )
    return (int(got[0]), got[1]) if got else (0, "")


def table(driver, rows: str) -> list[list[str]]:
    """The cells of the rows matching ``rows``, read in one go."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map("
        "tr => [...tr.querySelectorAll('td')].map(td => td.textContent));",
        rows,
    )


@pytest.mark.slow
def test_a_live_game_advances_on_the_page(arbiter, browser):
    """The test holds one seat and plays only after the browser shows the turn; the other
    seat is a real engine process."""
    r = arbiter.stub.CreateMatch(
        api.CreateMatchRequest(
            options=pb.GameOptions(turn_time_ms=60_000),
            seed=7,
            first=api.SeatSpec(display_name="tester"),
            second=api.SeatSpec(display_name="random-bot"),
        )
    )
    arbiter.engine(r.second_seat_token)
    stream = arbiter.stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=r.game_id), metadata=_auth(r.first_seat_token)
    )
    browser.get(f"{arbiter.http_url}/game/{r.game_id}")
    seen: list[int] = []
    positions: set[str] = set()
    for ev in stream:
        st = ev.state
        if ev.type != pb.EVENT_TYPE_TURN_STARTED or st.side_to_move != st.your_color:
            continue
        # the page, loaded once, catches up with this turn by itself
        WebDriverWait(browser, 15, poll_frequency=0.1).until(
            lambda d, t=st.turn_id: live_board(d)[0] == t
        )
        assert live_board(browser) == (st.turn_id, st.position)
        seen.append(st.turn_id)
        positions.add(st.position)
        if len(seen) == 3:
            break
        arbiter.stub.SubmitPlay(
            api.SubmitPlayRequest(
                game_id=r.game_id, turn_id=st.turn_id, end_position=st.legal_plays[0].end_position
            ),
            metadata=_auth(r.first_seat_token),
        )
    stream.cancel()
    assert len(seen) == 3 and seen == sorted(seen) and len(positions) == 3
    assert "tester" in browser.page_source and "random-bot" in browser.page_source
    moves = browser.find_elements(By.CSS_SELECTOR, "#moves li")
    assert len(moves) >= 4  # two of ours, two (or more) of the engine's
    # the front page lists the game with its live board
    browser.get(arbiter.http_url + "/")
    boards = browser.find_elements(By.CSS_SELECTOR, f'svg.nardy-board[data-game="{r.game_id}"]')
    assert len(boards) == 1

    # resign: the game's page becomes a replay with its move list
    arbiter.stub.Resign(api.ResignRequest(game_id=r.game_id), metadata=_auth(r.first_seat_token))
    browser.get(f"{arbiter.http_url}/game/{r.game_id}?ply=1")
    nav = browser.find_element(By.CSS_SELECTOR, "nav.replay")
    total = int(nav.get_attribute("data-total"))
    assert total == len(browser.find_elements(By.CSS_SELECTOR, "#moves li")) >= 4
    current = browser.find_element(By.CSS_SELECTOR, "#moves li.current")
    assert current.text.startswith(("w ", "b "))
    browser.find_element(By.ID, "nav-next").click()
    WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "nav.replay").get_attribute("data-ply") == "2"
    )
    assert "wins by" in browser.find_element(By.CSS_SELECTOR, "p.status").text


def test_ladder_page_shows_the_ladder_rpcs(arbiter, browser):
    arbiter.ladders.CreateLadder(
        lpb.CreateLadderRequest(
            name="web", options=lpb.LadderOptions(turn_time_ms=3000, max_games=4)
        ),
        metadata=_auth(arbiter.admin_token),  # ladders are the operator's
    )
    for name in ("alpha", "beta"):
        token = arbiter.stub.RegisterPlayer(api.RegisterPlayerRequest(name=name, bot=True)).token
        arbiter.engine(token)
        arbiter.ladders.JoinLadder(
            lpb.JoinLadderRequest(ladder="web", ready=True), metadata=_auth(token)
        )
    deadline = time.monotonic() + 90
    while True:
        st = arbiter.ladders.GetStandings(lpb.GetStandingsRequest(ladder="web"))
        if st.finished_games >= 4 and not st.games_in_progress:
            break
        assert time.monotonic() < deadline, "the ladder did not finish its games"
        time.sleep(0.2)
    browser.get(f"{arbiter.http_url}/ladder/web")
    WebDriverWait(browser, 10, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: (
            f"{st.finished_games} games finished" in d.find_element(By.ID, "ladder-summary").text
        )
    )
    rows = table(browser, "#standings tr[data-player]")
    assert len(rows) == len(st.rows) == 2
    for cells, row in zip(rows, st.rows, strict=True):
        assert cells[0] == str(row.rank)
        assert cells[1] == row.player.name
        assert cells[4] == str(row.games)
        assert cells[5] == f"{row.wins}-{row.losses}"
        assert cells[6] == f"{row.points_for}-{row.points_against}"
        assert cells[7] == f"{row.mars_wins}/{row.mars_losses}"
    cross = arbiter.ladders.GetCrosstable(lpb.GetCrosstableRequest(ladder="web"))
    a = next(c for c in cross.cells if c.player == st.rows[0].player.name)
    first = table(browser, "#crosstable tr")[1]
    assert f"{a.wins}-{a.losses} ({a.pairs_won}/{a.pairs_split}/{a.pairs_lost})" in first
    # the JSON the page is built from is the RPC's message
    browser.get(f"{arbiter.http_url}/api/ladder/web")
    assert '"finishedGames": 4' in browser.page_source


def test_a_finished_games_first_view_leaves_its_page_whole(arbiter):
    """Opening a finished game reads its events back: each counts against the visitor's
    rate. With bursts of 100, a whole game's 200-400 events put the visitor in debt, and
    the page's own stylesheet and scripts were refused (429): an unstyled page without its
    replay keys. A page's script and style are never refused now, bursts hold a few whole
    games, and a refusal says when to come back (Retry-After)."""
    r = arbiter.stub.CreateMatch(
        api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=60_000))
    )
    for token in (r.first_seat_token, r.second_seat_token):
        arbiter.engine(token)
    for ev in arbiter.stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id)):
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            break
    assert ev.seq > 100  # more than the bursts of old

    def get(path: str) -> tuple[int, dict[str, str]]:
        try:
            with urllib.request.urlopen(arbiter.http_url + path, timeout=20) as answer:
                answer.read()
                return answer.status, dict(answer.headers)
        except urllib.error.HTTPError as e:
            get.body = e.read()
            return e.code, dict(e.headers)

    # (and what the JSON API does not have is said in JSON)
    for path in ("/api/ladder/nope", "/api/game/nope"):
        status, headers = get(path)
        assert status == 404 and headers["Content-Type"].startswith("application/json")
        assert json.loads(get.body)["code"] == "NOT_FOUND"
    assert get(f"/game/{r.game_id}")[0] == 200
    for asset in ("/static/style.css", "/static/live.js", "/static/analysis.js"):
        assert get(asset)[0] == 200, asset
    while (answer := get("/no-such-page"))[0] != 429:  # until the visitor's budget is spent
        assert answer[0] == 404
    assert int(answer[1]["Retry-After"]) >= 1
    assert get("/static/style.css")[0] == 200  # still


def test_a_declined_challenges_page_names_its_players_and_offers_no_analysis(arbiter):
    """A game that never started has no colours: its page said "white vs black", and
    offered to analyse its no plays."""
    alice, bob = (
        arbiter.stub.RegisterPlayer(api.RegisterPlayerRequest(name=n, bot=True)).token
        for n in ("alice", "bob")
    )
    r = arbiter.stub.CreateMatch(
        api.CreateMatchRequest(
            first=api.SeatSpec(player_name="alice"), second=api.SeatSpec(player_name="bob")
        ),
        metadata=_auth(alice),
    )
    arbiter.stub.DeclineChallenge(
        api.DeclineChallengeRequest(match_id=r.match_id), metadata=_auth(bob)
    )
    with urllib.request.urlopen(f"{arbiter.http_url}/game/{r.game_id}", timeout=20) as page:
        html = page.read().decode()
    assert "alice vs bob" in html and "analyse this game" not in html


def test_a_result_that_counts_nowhere_says_so(arbiter):
    """Open seats take any name not registered, and a set-up game any dice: a stranger
    staged "victim resigns, mars" and it showed on the front page like any result. A
    result that is not rated says so, on the game's page and in the list."""
    victim = api.SeatSpec(display_name="victim")
    game = resigned_game(arbiter, first=victim, second=api.SeatSpec(display_name="me"))
    for path in (f"/game/{game}", "/"):
        with urllib.request.urlopen(arbiter.http_url + path, timeout=20) as page:
            html = page.read().decode()
        assert "not rated (open seats)" in html, path
        # (an open seat's name is its creator's choice, a look-alike of a registered
        # player's too: it is shown as a guest's)
        assert "guest victim" in html and "guest me" in html, path


def test_a_crowd_on_a_live_game_shares_one_build_and_sees_each_play_at_once(arbiter):
    """Each view of a game in progress was built by the core and rendered anew: a few
    addresses polling a long game within their rates slowed its plays many times over.
    Its viewers now share one build and its pages, brought up to date with what changed
    since: a play acknowledged is on every page asked for after it."""
    r = arbiter.stub.CreateMatch(
        api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=60_000), seed=3)
    )
    seats = [_auth(r.first_seat_token), _auth(r.second_seat_token)]
    streams = [
        arbiter.stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id), metadata=md)
        for md in seats
    ]
    page = f"{arbiter.http_url}/fragment/game/{r.game_id}"

    def get(url: str) -> str:
        with urllib.request.urlopen(url, timeout=20) as answer:
            return answer.read().decode()

    def builds() -> float:
        lines = get(arbiter.http_url + "/metrics").splitlines()
        return float(
            next(x for x in lines if x.startswith("nardy_web_game_builds_total ")).split()[1]
        )

    def turn(stream) -> pb.GameState:
        for ev in stream:
            st = ev.state
            if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.side_to_move == st.your_color:
                return st
        raise AssertionError("the stream ended")

    with ThreadPoolExecutor(8) as crowd:
        for plays in range(4):
            st = turn(streams[plays % 2])  # (seats alternate, whoever is white)
            before = builds()
            pages = list(crowd.map(get, [page] * 24))
            assert len(set(pages)) == 1  # one build, one rendering, for all of them
            assert pages[0].count("<li") == plays
            assert builds() - before <= 1
            arbiter.stub.SubmitPlay(
                api.SubmitPlayRequest(
                    game_id=r.game_id,
                    turn_id=st.turn_id,
                    end_position=st.legal_plays[0].end_position,
                ),
                metadata=seats[plays % 2],
            )
            assert get(page).count("<li") == plays + 1  # acknowledged: shown
    for stream in streams:
        stream.cancel()


def test_a_viewer_gone_before_the_answer_leaves_nothing_in_the_log(arbiter, caplog, monkeypatch):
    """A look whose viewers had all gone before the core answered left its error (here: no
    such game) unread, logged with its traceback once let go: lines of log that anyone
    could make, one a request."""
    monkeypatch.setattr(pages, "GAMES_KEPT", 1)  # (each new game lets the last one go)

    def status(game: str, timeout: float = 20) -> int:
        try:
            with urllib.request.urlopen(
                f"{arbiter.http_url}/fragment/game/{game}", timeout=timeout
            ):
                return 200
        except urllib.error.HTTPError as e:
            return e.code

    with held_core(arbiter), pytest.raises(OSError):  # (the viewer gives up: no answer)
        status("gone", timeout=0.5)
    assert [status(f"nosuch{n}") for n in range(3)] == [404] * 3
    gc.collect()
    assert "never retrieved" not in caplog.text


def resigned_game(arbiter, **match) -> str:
    """A game (a match of ``match``'s fields) its first seat resigned at once: its id."""
    r = arbiter.stub.CreateMatch(api.CreateMatchRequest(**match))
    seats = [_auth(r.first_seat_token), _auth(r.second_seat_token)]
    streams = [
        arbiter.stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id), metadata=md)
        for md in seats
    ]
    for stream in streams:
        next(stream)
    arbiter.stub.Resign(api.ResignRequest(game_id=r.game_id), metadata=seats[0])
    for ev in streams[1]:
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            break
    for stream in streams:
        stream.cancel()
    return r.game_id


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


def test_whole_games_read_by_one_address_are_paid_for_before_they_are_read(arbiter):
    """A first look at a game reads it whole from the core; it was charged after the read
    (and not at all when a flood of other looks had let its place in the cache go), so
    one address could have hundreds of games read at once. Each costs its reader
    FIRST_LOOK requests up front: a fresh address's burst (400) pays for a few."""
    games = [resigned_game(arbiter) for _ in range(12)]
    started = time.monotonic()
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(status_of, [f"{arbiter.http_url}/game/{g}" for g in games]))
    refilled = (time.monotonic() - started) * 50  # (50 requests a second)
    paid = 1 + pages.FIRST_LOOK  # each: the request and its first look
    assert 3 <= answers.count(200) <= 400 // paid + 1 + refilled // paid, answers


def test_the_front_page_shows_the_games_being_played_by_many(arbiter):
    """The live boards are the games whose last play came last, not the newest: games
    started and left (a day's turn each) pushed a game being played off the front page for
    a day. And one player's games fill a few boards, not all: a player who created its
    quota of matches and played in each took them all."""
    stub = arbiter.stub
    day = pb.GameOptions(turn_time_ms=86_400_000)
    streams = []  # (the seats stay: a seat that leaves may lose)

    def started(*md) -> tuple[api.CreateMatchResponse, pb.GameState]:
        request = api.CreateMatchRequest(options=day, first_seat_color=pb.COLOR_WHITE)
        r = stub.CreateMatch(request, metadata=md)
        for token in (r.second_seat_token, r.first_seat_token):
            request = api.SubscribeGameRequest(game_id=r.game_id)
            streams.append(stub.SubscribeGame(request, metadata=_auth(token)))
        for ev in streams[-1]:  # (white's: its first turn)
            if ev.type == pb.EVENT_TYPE_TURN_STARTED:
                return r, ev.state
        raise AssertionError("the stream ended")

    def front() -> str:
        with urllib.request.urlopen(arbiter.http_url + "/", timeout=20) as answer:
            return answer.read().decode()

    def shown(game_id: str) -> bool:
        return f'data-game="{game_id}"' in front()

    def play(r: api.CreateMatchResponse, turn: pb.GameState) -> None:
        end = turn.legal_plays[0].end_position
        stub.SubmitPlay(
            api.SubmitPlayRequest(game_id=r.game_id, turn_id=turn.turn_id, end_position=end),
            metadata=_auth(r.first_seat_token),
        )

    def soon(check) -> None:  # (the front page is built once a second)
        deadline = time.monotonic() + 30
        while not check():
            assert time.monotonic() < deadline, front()
            time.sleep(0.2)

    # the operator's open seats count as their own players: none is held to a few boards
    operator = ("authorization", f"Bearer {arbiter.admin_token}")
    played, turn = started(operator)
    left = [started(operator)[0].game_id for _ in range(pages.LIVE_GAMES)]  # newer, unplayed
    assert all(map(shown, left[:3])) and not shown(played.game_id)
    play(played, turn)
    soon(lambda: shown(played.game_id))
    page = front()
    assert page.count('class="game"') == pages.LIVE_GAMES and f'data-game="{left[0]}"' not in page

    # a stranger's games, each played after: BOARDS_EACH of them shown, not all
    theirs = [started() for _ in range(tables.BOARDS_EACH + 2)]
    for r, turn in theirs:
        play(r, turn)
    last = theirs[-1][0].game_id  # (played last: on a page built after every play)
    soon(lambda: f'data-game="{last}"' in front())
    page = front()
    assert sum(f'data-game="{r.game_id}"' in page for r, _ in theirs) == tables.BOARDS_EACH
    assert page.count('class="game"') == pages.LIVE_GAMES
    for stream in streams:
        stream.cancel()


def test_the_front_page_is_rendered_once_for_its_crowd(arbiter, monkeypatch):
    """The front page's two dozen boards were drawn again for every request (about 7 ms
    of the edge a request): two or three addresses within their rates slowed every game.
    Its viewers share one rendering of each answer of the core (asked once a second)."""
    drawn = []

    def counted(index):
        drawn.append(1)
        return render(index)

    render = pages._index_html
    monkeypatch.setattr(pages, "_index_html", counted)
    resigned_game(arbiter)  # (a finished game to list)
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        urls = [arbiter.http_url + p for p in ("/", "/fragment/index") * 15]
        assert set(pool.map(status_of, urls)) == {200}
    took = time.monotonic() - started
    assert 1 <= len(drawn) <= 2 + took, (len(drawn), took)


def test_a_finished_game_voided_later_is_shown_voided(arbiter, monkeypatch):
    """A finished game, once looked at, was kept as it was: voided by the operator (or
    its seed revealed when its ladder pair ended), its page still showed the old result.
    Its state is asked again now and then (ENDED_CHECKED_S)."""
    monkeypatch.setattr(pages, "ENDED_CHECKED_S", 0.1)
    game = resigned_game(arbiter)
    url = f"{arbiter.http_url}/api/game/{game}"

    def status() -> str:
        with urllib.request.urlopen(url, timeout=20) as answer:
            return json.loads(answer.read())["state"]["status"]

    assert status() == "GAME_STATUS_FINISHED"
    admin = admin_grpc.AdminServiceStub(grpc.insecure_channel(arbiter.address))
    admin.VoidGame(admin_pb.VoidGameRequest(game_id=game), metadata=_auth(arbiter.admin_token))
    deadline = time.monotonic() + 20
    while status() != "GAME_STATUS_ABORTED":
        assert time.monotonic() < deadline, "still shown as finished"
