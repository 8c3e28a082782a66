"""The web view's analysis of an ended game (server/edge/web/analysis.py): refused while the
game is on, made once in a child process and kept, bounded for everyone together, and
shown on the replay page as marks on the move list (a real browser)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from nardy.client import SimpleClient
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.edge.web.analysis import Analyses, Busy

# Long nardy, a race (RULES.md §4): white's 6, 5 and 1 (two) points against black's six
# checkers at home; 6-5: 6/off 5/off wins for sure, 6/1 5/off is a blunder.
LONG_RACE = "w/0,0,0,0,0,0,0,0,0,-2,-2,-2,0,0,0,0,0,0,1,1,0,0,0,2"


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def blunder_first(turn):
    """White's seat: 6/1 5/off on its first turn (a blunder), then the first legal play."""
    if turn.dice == (6, 5) and turn.position.text() == LONG_RACE:
        end = turn.variant.match_play(turn.position, turn.dice, "6/1 5/off").end.text()
        return next(lp for lp in turn.legal if lp.end_position == end)
    return turn.legal[0]


@pytest.fixture
def game(tmp_path):
    """An arbiter with its web view and a game, not started yet, where white will blunder
    at once; ``game.play()`` plays it to its end."""
    with EmbeddedServer(db=str(tmp_path / "a.db"), http_port=0) as srv:
        with SimpleClient(srv.address) as client:
            r = client.create_match(
                options=pb.GameOptions(turn_time_ms=60_000),
                start_position=LONG_RACE,
                dice=[6, 5, 2, 1],
                first_seat_color=pb.COLOR_WHITE,
            )
        srv.game_id = r.game_id

        def play() -> None:
            seats = [(r.first_seat_token, blunder_first), (r.second_seat_token, None)]
            with ThreadPoolExecutor(2) as pool:
                done = [
                    pool.submit(_seat, srv.address, token, fn or (lambda t: t.legal[0]), r.game_id)
                    for token, fn in seats
                ]
                for f in done:
                    assert f.result(timeout=120).status == pb.GAME_STATUS_FINISHED

        srv.play = play
        yield srv


def _seat(address: str, token: str, fn, game_id: str):
    with SimpleClient(address, token) as seat:
        return seat.play(game_id, fn)


def test_an_ended_game_is_analysed_once_and_kept(game):
    url = f"{game.http_url}/api/game/{game.game_id}/analysis"
    status, body = get(url)
    assert status == 409 and b"not over" in body  # no help before the game is over
    game.play()
    status, body = get(url)
    assert status == 200, body
    data = json.loads(body)
    assert (data["format"], data["judge"], data["units"]) == ("nardy-analysis", "network", "points")
    p = data["games"][0]["plays"][0]
    assert (p["turn"], p["played"], p["best"], p["mark"]) == (1, "6/1 5/off", "6/off 5/off", "??")
    # the seats are open (no registered player): named as guests', as boards name them
    sides = data["games"][0]["sides"]
    assert (sides["white"]["name"], sides["black"]["name"]) == ("guest player 1", "guest player 2")
    t0 = time.perf_counter()
    assert get(url) == (200, body)  # kept: no second child process
    assert time.perf_counter() - t0 < 2
    assert get(f"{game.http_url}/api/game/nosuchgame/analysis")[0] == 404
    # the command fetches the same game from the arbiter by its id
    out = subprocess.run(
        [sys.executable, "-m", "clients", "analyse", game.game_id, "--server", game.address,
         "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    fetched = json.loads(out.stdout)["games"][0]
    assert fetched["plays"][0] == p and fetched["sides"]["white"]["name"] == "guest player 1"


def test_analyses_are_bounded_for_everyone():
    """One running and none waiting: a second game's analysis is refused while the first
    is made; the same game's is shared."""

    async def main():
        analyses = Analyses(running=1, waiting=0)
        record = "; nardy record 1\n[Game 1]\nVariant: long\n   1 w 6-5 24/13\n"
        first = asyncio.ensure_future(analyses.analysis("a", record))
        second = asyncio.ensure_future(analyses.analysis("a", record))
        await asyncio.sleep(0)
        with pytest.raises(Busy):
            await analyses.analysis("b", record)
        a, b = await first, await second
        assert a == b and json.loads(a)["games"][0]["skipped"] == 1
        assert analyses.kept_for("a") == a and not analyses.pending("a")
        await analyses.close()

    asyncio.run(main())


def test_the_replay_page_shows_the_marks(game, browser):
    game.play()
    browser.get(f"{game.http_url}/game/{game.game_id}")
    assert not browser.find_elements(By.CSS_SELECTOR, "#moves .mark")
    browser.find_element(By.ID, "analyse").click()
    WebDriverWait(browser, 120).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#moves li .mark"))
    first = browser.find_elements(By.CSS_SELECTOR, "#moves li")[0]
    assert first.text.endswith("??")
    assert "best 6/off 5/off" in first.get_attribute("title")
    out = browser.find_element(By.ID, "analysis-out").text
    assert "judge network" in out and "error rate" in out
    # kept now: another ply of the replay shows the marks at once
    browser.get(f"{game.http_url}/game/{game.game_id}?ply=0")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#moves li .mark"))
    first = browser.find_elements(By.CSS_SELECTOR, "#moves li")[0]
    # asked again: the marks are replaced, not added (a play shows its mark once)
    browser.execute_script("document.getElementById('analysis-out').textContent = ''")
    browser.find_element(By.ID, "analyse").click()
    WebDriverWait(browser, 30).until(
        lambda d: "error rate" in d.find_element(By.ID, "analysis-out").text
    )
    assert len(first.find_elements(By.CSS_SELECTOR, ".mark")) == 1
    assert first.text.endswith(" ??") and not first.text.endswith("?? ??")
