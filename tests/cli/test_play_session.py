"""`nardy play` beyond the moves: the saved record, the opponent's play in the person's
numbering with the last play marked, and terminals too narrow or too small for the board."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import ROOT, finish, spawn

B = r"(?:\x1b\[[0-9;]*m)*"  # style codes (bold) a live screen may put inside a line
START_ARGS = ("--engine", "random", "--colour", "white", "--name", "tester")


@pytest.mark.slow
def test_opponent_play_in_your_numbering_marked_and_the_game_saved(tmp_path):
    # white (the person) 3-1, then black 6-6 on its first turn: its only play is 24/18 24/18
    # in its own numbers (RULES §3.4), which is 12/6 12/6 in white's.
    records = tmp_path / "games"
    child = spawn(
        "play", *START_ARGS, "--dice", "3,1,6,6", "--records", str(records),
        "--turn-time-ms", "30000",
    )  # fmt: skip
    child.expect(r"Your roll 3-1 has one legal play: 24/21 21/20 \(played for you\)")
    # the last play is marked beside the point numbers, without colour too: black landed on 6;
    # the board, the opponent's play and the prompt may reach the screen in any order
    wanted = [
        "random played 6-6: 12/6 12/6",
        "Your turn",
        r"12  11  10   9   8   7\s+" + B + r"\s*6" + B + "•",
    ]
    seen: set[int] = set()
    while len(seen) < len(wanted):
        seen.add(child.expect(wanted))
    child.sendline("quit")
    child.expect(r"Leave now\? The game is played on this computer's own arbiter, which stops")
    child.sendline("y")
    child.expect(r"Saved the game record: (\S+\.nrd)")
    path = Path(child.match.group(1))
    child.expect(r"replay it with: nardy replay \S+")
    assert finish(child) == 0
    assert path.parent == records and path.exists()
    text = path.read_text()
    assert "White: tester" in text and "Black: random" in text
    assert re.search(r"\n\s+1 w 3-1 24/21 21/20\n\s+2 b 6-6 24/18 24/18\n", text), text
    # the record is one the rules accept (an unfinished game: no result)
    out = subprocess.run(
        [sys.executable, "-m", "clients", "import", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_ctrl_c_says_what_became_of_the_game():
    child = spawn("play", *START_ARGS, "--dice", "3,1")
    child.expect("random to play")
    child.proc.send_signal(signal.SIGINT)  # Ctrl-C (the test's pty is not a controlling tty)
    child.expect("nardy play: interrupted. The game is played on this computer's own arbiter")
    child.expect("ends unfinished")
    child.expect(r"Saved the game record: \S+\.nrd")
    assert finish(child) == 130


@pytest.mark.slow
def test_a_narrow_terminal_gets_the_compact_board():
    child = spawn("play", *START_ARGS, "--dice", "3,1", size=(70, 30))
    child.expect("random to play")
    # the side panel moves under the board: a player's name, pips and clock on one line
    child.expect(r"O" + B + r" tester" + B + r" \(you, white\)" + B + r"  pips \d+  off  0")
    child.sendline("quit")
    child.sendline("y")
    assert finish(child) == 0


def test_a_terminal_too_small_for_the_board_says_so():
    child = spawn("play", *START_ARGS, "--dice", "3,1", size=(50, 16))
    child.expect(r"The terminal is 50x16: the board needs at least")
    child.expect(r"58x20")  # (wrapped to the terminal's width)
    child.sendline("quit")
    child.sendline("y")
    assert finish(child) == 0


@pytest.mark.slow
def test_bad_arguments_are_refused():
    for args, message in (
        (("--turn-time-ms", "0"), "--turn-time-ms is a number of milliseconds above 0"),
        (("--engine", "greedy", "--level", "2"), "--level: the greedy engine has no levels"),
        (("--engine", "expectimax", "--level", "7"), "the expectimax engine has levels 0-3"),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "clients", "play", *args],
            capture_output=True, text=True, cwd=ROOT, timeout=60,
        )  # fmt: skip
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)


@pytest.mark.slow
def test_an_unreachable_arbiter_is_given_up_with_a_clear_message():
    import socket

    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    child = spawn("play", "--server", f"127.0.0.1:{port}", "--token", "t", "--give-up", "2")
    child.expect(r"Cannot reach the arbiter at 127\.0\.0\.1:\d+ \(unavailable\); trying again")
    child.expect(
        r"nardy play: cannot reach the arbiter at 127\.0\.0\.1:\d+ \(unavailable\); gave up"
    )
    assert finish(child) == 1
    assert "Traceback" not in child.before
