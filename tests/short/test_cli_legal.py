"""`nardy legal --variant short` as a real process: single turns, batch mode, bad input (§9)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nardy.short.movegen import legal_plays
from nardy.short.position import Position

START = "w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0"
CLOSED = "w/-2,-2,-2,-2,-2,-2,0,0,0,0,0,6,-3,0,0,0,3,0,5,0,0,0,0,0/1,0"


def legal(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clients", "legal", "--variant", "short", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_single_turn_prints_every_end_position_sorted():
    """§9: 3-1 from the start: every end position with black to move, sorted; 8/5 6/5 is
    among them."""
    out = legal(START, "31")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == sorted(lines) and len(lines) == 16
    assert all(line.startswith("b/") for line in lines)
    assert "b/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,2,0,4,2,0,0,0,-2/0,0" in lines  # 8/5 6/5
    expected = sorted(p.end.text() for p in legal_plays(Position.parse(START), (3, 1)))
    assert lines == expected


def test_closed_board_prints_the_position_unchanged_with_the_opponent_to_move():
    """§8/§9: a checker on the bar against a closed board: nothing moves."""
    out = legal(CLOSED, "6-6")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["b" + CLOSED[1:]]


def test_batch_mode_streams_one_line_per_input_line():
    proc = subprocess.Popen(
        [sys.executable, "-m", "clients", "legal", "--variant", "short"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    answers = []
    for line in [f"{START} 31", f"{CLOSED} 55", f"{START} 66"]:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        answers.append(proc.stdout.readline().split())
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert [len(a) for a in answers] == [16, 1, 11]
    assert all(a == sorted(a) for a in answers)


@pytest.mark.parametrize(
    ("position", "dice", "needle"),
    [
        (START[:-4], "31", "white bar"),
        (START.replace("/0,0", "/1,0"), "31", "16 checkers"),
        (START.replace("-2/", "-3/"), "31", "black has 16"),
        (START.replace(",-5,0,-3", ",-5,z,-3"), "31", "not a whole number"),
        (START, "70", "1 to 6"),
        ("w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0", "31", "expected"),
    ],
)
def test_bad_input_exits_2_naming_the_problem(position, dice, needle):
    out = legal(position, dice)
    assert out.returncode == 2
    assert needle in out.stderr and out.stdout == ""


def test_batch_mode_names_the_bad_line():
    out = legal(stdin=f"{START} 31\n{START} 3\n")
    assert out.returncode == 2
    assert "line 2" in out.stderr and "two numbers" in out.stderr
    assert len(out.stdout.splitlines()) == 1


def test_unknown_variant_is_refused():
    out = subprocess.run(
        [sys.executable, "-m", "clients", "legal", "--variant", "hyper", START, "31"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "unknown variant 'hyper'" in out.stderr
