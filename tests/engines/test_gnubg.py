"""The gnubg engine (engines/gnubg.py): GNU Backgammon as a short-nardy player (RULES.md §8).

Needs Debian's gnubg (``make gnubg``, part of ``make test``): without it these tests are
skipped on a developer's machine and fail in CI. A real game on the arbiter between
``nardy engine gnubg`` and ``nardy engine greedy`` must end with no fallback, and every
play gnubg's side made must be the play gnubg chooses for that turn.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import grpc
import pytest

from engines import gnubg as gnubg_module
from engines.base import Unavailable
from engines.gnubg import Gnubg, GnubgEngine, end_of, key, to_gnubg
from engines.registry import make_engine, make_judge
from nardy import Color, variant
from nardy.client import SimpleClient
from nardy.record import replay
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer

SHORT = variant("short")


@pytest.fixture(scope="module")
def installed(gnubg_installed) -> str:
    return gnubg_installed


@pytest.fixture(scope="module")
def engine(installed):
    e = make_engine("gnubg", variant_name="short")
    yield e
    e.close()


def choice(engine, text: str, dice: tuple[int, int]) -> str:
    position = SHORT.parse(text)
    return engine.choose(position, dice, SHORT.legal_plays(position, dice)).notation()


START = SHORT.start().text()
# White to move, bearing off its last two checkers (its 6 and 5 points) against black's
# five at home: only 6/off 5/off ends the game now.
LAST_TWO = "w/0,0,-2,-2,-1,0,0,0,0,0,0,0,0,0,0,0,0,0,1,1,0,0,0,0/0,0"


@pytest.mark.parametrize(
    ("text", "dice", "best"),
    [
        (START, (3, 1), "8/5 6/5"),  # the opening 3-1 makes the 5 point
        (START, (4, 2), "8/4 6/4"),  # 4-2 makes the 4 point
        (START, (6, 1), "13/7 8/7"),  # 6-1 makes the bar point
        (LAST_TWO, (6, 5), "6/off 5/off"),  # the game ends now
    ],
)
def test_gnubg_plays_the_obvious_best_play(engine, text, dice, best):
    assert choice(engine, text, dice) == best
    assert engine.fallbacks == 0


def test_every_gnubg_move_is_one_of_our_legal_plays(installed):
    """The board conversions both ways: for positions of self-play games, gnubg's hint
    lists every legal play once, each landing on one of ours (§3.7: distinct ends)."""
    rng = random.Random(3)
    g = Gnubg(installed)
    try:
        checked = 0
        position = SHORT.start()
        while SHORT.result(position) is None:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            plays = SHORT.legal_plays(position, dice)
            if not plays:
                position = SHORT.passed(position)
                continue
            request = {"op": "hint", "board": to_gnubg(SHORT, position), "dice": list(dice)}
            moves = g.ask({**request, "ply": 0})["moves"]
            ours = {key(SHORT.board(p.end)) for p in plays}
            theirs = [end_of(SHORT, position, [tuple(s) for s in m["steps"]]) for m in moves]
            assert len(set(theirs)) == len(theirs) == len(plays)
            assert set(theirs) == ours, position.text()
            checked += 1
            position = rng.choice(plays).end
        assert checked > 20
    finally:
        g.close()


def test_a_missing_gnubg_is_said_and_the_judge_falls_back(monkeypatch):
    with pytest.raises(Unavailable, match="cannot start gnubg"):
        Gnubg("/nonexistent/gnubg")
    monkeypatch.setattr(gnubg_module, "gnubg_path", lambda: None)
    with pytest.raises(Unavailable, match="gnubg is not installed"):
        GnubgEngine()
    judge, passed = make_judge("short")
    assert judge.name == "greedy" and not judge.judge_in_points
    assert passed and passed[0].startswith("gnubg: gnubg is not installed")


def test_bad_options_are_refused(installed):
    for args, why in (
        (["--ply", "9"], "the gnubg engine searches 0, 1, 2, 3 plies, not 9"),
        (["--level", "1"], "the gnubg engine has no levels"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "clients", "engine", "gnubg", "--token", "t", *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2 and why in out.stderr, out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "clients", "engine", "greedy", "--token", "t", "--ply", "1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2 and "the greedy engine has no --ply" in out.stderr


def test_a_real_game_against_greedy_has_no_fallback(installed, engine, tmp_path):
    """§8: a short game on the arbiter between two engine processes; gnubg's process says
    how many plays it chose and that none fell back, and each play of its side is the one
    gnubg (asked again here) chooses."""
    from clients.export import game_events
    from nardy.wire import record_of

    with EmbeddedServer() as server, SimpleClient(server.address) as client:
        r = client.create_match(
            options=pb.GameOptions(variant="short", turn_time_ms=20_000),
            first=api.SeatSpec(display_name="gnubg"),
            second=api.SeatSpec(display_name="greedy"),
        )
        procs = {}
        for name, token in (("gnubg", r.first_seat_token), ("greedy", r.second_seat_token)):
            procs[name] = subprocess.Popen(
                [sys.executable, "-m", "clients", "engine", name, "--server", server.address,
                 f"--token={token}", "--max-games", "1"],
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
        logs = {}
        try:
            for name, proc in procs.items():
                _, logs[name] = proc.communicate(timeout=300)
                assert proc.returncode == 0, logs[name]
        finally:
            for proc in procs.values():
                proc.kill()
        with grpc.insecure_channel(server.address) as channel:
            stub = api_grpc.ArbiterServiceStub(channel)
            record = record_of(game_events(stub, r.game_id))
    assert record.result is not None, "the game did not finish"
    assert "FALLBACK" not in logs["gnubg"]
    said = re.search(r"gnubg 0-ply chose (\d+) plays, (\d+) fallbacks", logs["gnubg"])
    assert said, logs["gnubg"]
    assert int(said.group(2)) == 0
    gnubg_side = Color.WHITE if record.headers["White"] == "guest gnubg" else Color.BLACK
    assert record.headers[gnubg_side.name.title()] == "guest gnubg"  # (an open seat)
    positions = replay(record)
    chosen = 0
    for t, before in zip(record.turns, positions, strict=False):
        plays = SHORT.legal_plays(before, t.dice)
        if t.side is gnubg_side and len(plays) > 1:
            mine = engine.choose(before, t.dice, plays)
            assert SHORT.match_play(before, t.dice, t.play).end == mine.end, t
            chosen += 1
    assert chosen == int(said.group(1)) > 0
