"""Post-game analysis (engines/analysis.py, ``nardy analyse``) on known positions of both
variants: an obvious blunder is flagged, the best play is not (loss 0), forced plays and
passes are skipped, and the command reads a record file and writes JSON.

Long nardy is judged by the network (exact bear-off tables in a race, RULES.md §4-5),
short nardy by gnubg (RULES.md §8; needs ``make gnubg``) or, without it, greedy.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engines import gnubg as gnubg_module
from engines.analysis import BAD, DOUBTFUL, VERY_BAD, analyse_game, mark, report
from engines.registry import make_engine, make_judge
from nardy import Color
from nardy.record import RecordError, loads

# Long nardy, a race (§4): white's last four checkers on its 6, 5 and 1 (two) points,
# black's six on its 3, 2 and 1 points. 6-5 bears off two: 6/off 5/off leaves two on the
# 1 point, off next turn for sure; 6/1 5/off leaves three and lets black win with a double.
LONG_RACE = "w/0,0,0,0,0,0,0,0,0,-2,-2,-2,0,0,0,0,0,0,1,1,0,0,0,2"
# Short nardy, the same race (§8-9): white's 6, 5 and 1 (two) points against black's five
# checkers at home; 6/1 5/off leaves three on the 1 point, and black wins with a double
# unless white throws one.
SHORT_RACE = "w/0,0,-2,-2,-1,0,0,0,0,0,0,0,0,0,0,0,0,0,1,1,0,0,0,2/0,0"


def record(variant: str, start: str | None, *games: list[str]) -> str:
    """A record of one game per list of turn lines, each from ``start``."""
    out = ["; nardy record 1"]
    for n, turns in enumerate(games, 1):
        out += [f"[Game {n}]", f"Variant: {variant}", "White: alice", "Black: bob"]
        if start:
            out.append(f"Start: {start}")
        out += [f"{i:4d} {t}" for i, t in enumerate(turns, 1)]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def long_judge():
    judge, passed = make_judge("long")
    assert judge.name == "network" and passed == []
    return judge


@pytest.fixture(scope="module")
def short_judge(gnubg_installed):
    judge, passed = make_judge("short")
    assert judge.name == "gnubg" and passed == []
    yield judge
    judge.close()


def test_marks_follow_the_thresholds():
    assert (DOUBTFUL, BAD, VERY_BAD) == (0.04, 0.08, 0.16)
    assert [mark(x) for x in (0, 0.039, 0.04, 0.079, 0.08, 0.159, 0.16, 1.2)] == [
        "", "", "?!", "?!", "?", "?", "??", "??",
    ]  # fmt: skip


@pytest.mark.parametrize("ply", [0, 1])
def test_long_bear_off_inefficiency_is_a_blunder(long_judge, ply):
    best, worse = loads(record("long", LONG_RACE, ["w 6-5 6/off 5/off"], ["w 6-5 6/1 5/off"]))
    good = analyse_game(best, long_judge, ply)
    [p] = good.plays
    assert (p.loss, p.mark, p.best, p.played) == (0.0, "", "6/off 5/off", "6/off 5/off")
    assert good.sides[Color.WHITE].error_rate == 0.0
    bad = analyse_game(worse, long_judge, ply)
    [p] = bad.plays
    assert p.played == "6/1 5/off" and p.best == "6/off 5/off"
    assert p.loss >= VERY_BAD and p.mark == "??", p
    assert p.best_equity == pytest.approx(1.0, abs=1e-6)  # the race is won for sure (§4)
    white = bad.sides[Color.WHITE]
    assert (white.name, white.plays, white.marks["??"]) == ("alice", 1, 1)
    assert white.error_rate == pytest.approx(1000 * p.loss)
    assert bad.blunders() == [p]


def test_forced_plays_and_passes_are_skipped(long_judge):
    # §7: white's 6-5 from the start has one play (24/13), and so has black's
    [game] = loads(record("long", None, ["w 6-5 24/13", "b 6-5 24/13"]))
    out = analyse_game(game, long_judge)
    assert out.plays == [] and out.skipped == 2
    assert out.sides[Color.WHITE].plays == 0 and out.sides[Color.WHITE].error_rate == 0.0
    # §8: white on the bar against a closed home board passes
    blocked = "w/-2,-2,-2,-2,-2,-2,-3," + "0," * 16 + "14/1,0"
    [game] = loads(record("short", blocked, ["w 6-5 -"]))
    out = analyse_game(game, make_engine("greedy", variant_name="short"))
    assert out.plays == [] and out.skipped == 1


def test_an_illegal_record_is_refused(long_judge):
    [game] = loads(record("long", None, ["w 6-5 24/18 24/19"]))
    with pytest.raises(RecordError, match="turn 1"):
        analyse_game(game, long_judge)


def test_short_blot_instead_of_a_point_is_a_blunder(short_judge):
    # §8: the opening 3-1 makes the 5 point (8/5 6/5); 13/10 6/5 leaves two blots
    best, worse = loads(record("short", None, ["w 3-1 8/5 6/5"], ["w 3-1 13/10 6/5"]))
    [p] = analyse_game(best, short_judge).plays
    assert (p.loss, p.mark) == (0.0, "")
    [p] = analyse_game(worse, short_judge).plays
    assert p.best == "8/5 6/5" and p.loss >= VERY_BAD and p.mark == "??", p


@pytest.mark.parametrize("ply", [0, 1])
def test_short_bear_off_inefficiency_is_a_blunder(short_judge, ply):
    best, worse = loads(record("short", SHORT_RACE, ["w 6-5 6/off 5/off"], ["w 6-5 6/1 5/off"]))
    [p] = analyse_game(best, short_judge, ply).plays
    assert (p.loss, p.mark) == (0.0, "")
    assert p.best_equity == pytest.approx(1.0, abs=1e-3)  # a single game, won (§8)
    [p] = analyse_game(worse, short_judge, ply).plays
    assert p.best == "6/off 5/off" and p.mark == "??" and p.loss >= VERY_BAD, p


def test_short_without_gnubg_is_judged_by_greedy_unmarked(monkeypatch):
    monkeypatch.setattr(gnubg_module, "gnubg_path", lambda: None)
    judge, passed = make_judge("short")
    assert judge.name == "greedy" and passed
    [game] = loads(record("short", None, ["w 3-1 13/10 6/5"]))
    out = analyse_game(game, judge)
    [p] = out.plays
    assert p.best == "8/5 6/5" and p.loss > 0 and p.mark == ""  # its score is not equity
    assert report([out])["units"] == "score"
    with pytest.raises(ValueError, match="greedy judges at 0 ply"):
        analyse_game(game, judge, 1)


def test_the_command_writes_json_for_a_record_file(tmp_path):
    path = tmp_path / "race.nrd"
    path.write_text(record("long", LONG_RACE, ["w 6-5 6/off 5/off"], ["w 6-5 6/1 5/off"]))
    out = subprocess.run(
        [sys.executable, "-m", "clients", "analyse", str(path), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["format"], data["judge"], data["ply"], data["units"]) == (
        "nardy-analysis", "network", 0, "points",
    )  # fmt: skip
    first, second = data["games"]
    assert first["plays"][0]["loss"] == 0 and first["plays"][0]["mark"] == ""
    p = second["plays"][0]
    assert (p["turn"], p["side"], p["dice"], p["played"], p["best"], p["mark"]) == (
        1, "w", [6, 5], "6/1 5/off", "6/off 5/off", "??",
    )  # fmt: skip
    assert second["blunders"] == [1]
    assert second["sides"]["white"]["very_bad"] == 1
    alice = data["players"]["alice"]
    assert alice["plays"] == 2 and alice["error_rate"] == pytest.approx(500 * p["loss"], abs=0.1)


def test_the_command_as_text_and_its_errors(tmp_path, gnubg_installed):
    path = tmp_path / "short.nrd"
    path.write_text(record("short", None, ["w 3-1 13/10 6/5", "b 6-5 24/18 18/13"]))
    out = subprocess.run(
        [sys.executable, "-m", "clients", "analyse", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "judge gnubg at 0 ply (money equity in points, cubeless)" in out.stdout
    assert "13/10 6/5" in out.stdout and "8/5 6/5" in out.stdout and "??" in out.stdout
    assert "white alice: 1 play judged, error rate" in out.stdout
    bad = tmp_path / "bad.nrd"
    bad.write_text(record("short", None, ["w 3-1 13/7"]))
    for args, status, says in (
        ([str(bad)], 2, "game 1 turn 1"),
        ([str(tmp_path / "none.nrd")], 2, "none.nrd: no such file"),
        (["some-game-id", "--server", "127.0.0.1:1"], 1, "127.0.0.1:1"),
        ([str(path), "--ply", "7"], 2, "gnubg judges at 0, 1, 2, 3 ply"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "clients", "analyse", *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert out.returncode == status and says in out.stderr, (args, out.stderr)
