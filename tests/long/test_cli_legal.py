"""`nardy legal` as a real process: single turns, the streaming batch filter, bad input (§1, §7)."""

from __future__ import annotations

import subprocess
import sys

import pytest

START = "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"


def legal(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clients", "legal", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_single_turn_prints_sorted_end_positions():
    """§7: 3-3 from the start has exactly two end positions."""
    out = legal(START, "33")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "b/13,0,0,0,0,0,2,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0",
        "b/13,0,0,1,0,0,0,0,0,1,0,0,-15,0,0,0,0,0,0,0,0,0,0,0",
    ]
    assert legal(START, "6-5").stdout.splitlines() == [
        "b/14,0,0,0,0,0,0,0,0,0,0,1,-15,0,0,0,0,0,0,0,0,0,0,0"
    ]


def test_no_legal_play_prints_the_board_with_the_opponent_to_move():
    """§1/§3.6: all black checkers on its head and its 19 (a=17) held by white: 5-5 has no
    legal play, so the board is printed unchanged with white to move."""
    blocked = "b/14,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,1,0,0,0,0,0,0"
    out = legal(blocked, "55")
    assert out.returncode == 0
    assert out.stdout.split() == ["w" + blocked[1:]]


def test_batch_mode_streams_one_line_per_input_line_in_order():
    lines = [f"{START} 65", f"{START} 33", f"{START} 2-2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "clients", "legal"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    answers = []
    for line in lines:  # streaming: each answer arrives before the next line is written
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        answers.append(proc.stdout.readline().split())
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert [len(a) for a in answers] == [1, 2, 1]
    assert answers[1] == sorted(answers[1])


@pytest.mark.parametrize(
    ("position", "dice", "needle"),
    [
        ("w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0", "65", "24 point counts"),
        ("w/16,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0", "65", "16 checkers"),
        ("x/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0", "65", "side to move"),
        ("w/15,a,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0", "65", "not a whole number"),
        ("garbage", "65", "expected"),
        (START, "75", "1 to 6"),
        (START, "6", "two numbers"),
    ],
)
def test_bad_input_exits_non_zero_naming_the_problem(position, dice, needle):
    out = legal(position, dice)
    assert out.returncode != 0
    assert needle in out.stderr
    assert out.stdout == ""


def test_batch_mode_names_the_bad_line():
    out = legal(stdin=f"{START} 65\n{START} 77\n")
    assert out.returncode != 0
    assert "line 2" in out.stderr and "1 to 6" in out.stderr
    assert len(out.stdout.splitlines()) == 1  # the good line was answered first
