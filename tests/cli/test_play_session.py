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


@pytest.mark.parametrize("size", [(50, 16), (60, 20)])
def test_a_terminal_too_small_for_the_board_says_so(size):
    # 60x20 is wide enough for the compact board but a few rows short of it with its
    # status, a message and the prompt: said, rather than the board's top scrolled away
    child = spawn("play", *START_ARGS, "--dice", "3,1", size=size)
    child.expect(rf"The terminal is {size[0]}x{size[1]}: the board needs at least")
    child.expect(r"5\dx2\d")  # (wrapped to the terminal's width)
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


def test_help_and_every_play_too_long_for_the_room_under_the_board_take_its_place():
    # 80x24: the full board leaves six lines for messages; help has twelve, and the 3-3 of
    # this position 61 plays. Each is shown in the board's place (the plays in columns,
    # those that do not fit counted) until Enter, and that Enter does not submit the play
    # begun.
    spread = "w/9,0,1,1,1,1,1,0,0,0,0,0,-14,0,0,0,0,0,0,0,0,0,0,1"
    child = spawn(
        "play", *START_ARGS, "--dice", "3,3", "--start", spread, "--turn-time-ms", "60000",
        size=(80, 24),
    )  # fmt: skip
    child.expect("Your turn: 3-3")
    child.sendline("24/21")
    child.expect("Moved 24/21")
    child.sendline("help")
    child.expect("Commands \\(your turn\\):")
    child.expect("analyse       once a game is over")  # the last line too
    child.expect("\\(Enter: back to the board\\)")
    child.sendline("")
    child.expect("13  14  15  16  17  18")  # the board again
    child.sendline("hint all")
    child.expect("61 legal plays:")
    child.expect(r"\d+\. \S+.*  +\d+\. \S+")  # side by side
    child.expect(r"\.\.\. and \d+ more \(a taller terminal, or --plain, shows them\)")
    child.expect("\\(Enter: back to the board\\)")
    child.sendline("")
    child.sendline("undo")  # the step begun is still there: the Enters only closed the pages
    child.expect("Took back 24/21")
    child.sendline("quit")
    child.sendline("y")
    assert finish(child) == 0
