"""The board drawing as a pure function: layout, perspective, marks, clocks, no terminal."""

from __future__ import annotations

import re

from rich.console import Console

from clients.board import (
    COMPACT_WIDTH,
    fmt_clock,
    live_clocks,
    play_marks,
    render,
    render_plain,
    state_for,
)
from clients.follow import in_numbering
from nardy import Color, Position
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant

MID = "w/13,0,0,1,0,0,0,0,0,0,0,0,-14,0,0,0,0,0,0,0,0,0,0,1"


def board(st: pb.GameState, perspective: Color, **kw) -> str:
    """The plain board with a title line, so that rows are: 1 top numbers, 2 frame, 3-7 top
    stacks, 8 the bar row, 9-13 bottom stacks, 14 frame, 15 bottom numbers."""
    return render_plain(st, perspective, title="t", **kw)


def lines(text: str) -> list[str]:
    return text.split("\n")


def column(text: str, label: str, row: str) -> str:
    """The character of ``row`` under the point number ``label`` of the top or bottom row."""
    rows = lines(text)
    numbers = rows[1] if int(label) >= 13 else rows[15]
    i = re.search(rf"(?<!\d){label}(?!\d)", numbers).end() - 1  # checkers sit under the last digit
    return row[i] if i < len(row) else " "


def test_start_position_from_white():
    st = state_for(Position.start(), white="alice", black="bob")
    text = board(st, Color.WHITE, you=Color.WHITE)
    rows = lines(text)
    assert rows[0] == "t"
    # the person's numbers: 13..24 along the top, 12..1 along the bottom (home bottom right)
    assert rows[1].split() == [str(n) for n in range(13, 25)]
    assert rows[15].split() == [str(n) for n in range(12, 0, -1)]
    # white's head is top right (its 24), black's is bottom left (white's 12); 15 each
    top = rows[3]
    assert column(text, "24", top) == "O"
    assert "15" in rows[7].split("│")[3]  # the count replaces the fifth checker
    assert column(text, "12", rows[13]) == "X"
    # the heads are marked on the frame above 24 and below 12
    assert rows[2].rstrip().split()[0].endswith("H─┐")
    assert "└──H" in rows[14]
    assert "alice (you, white)" in text and "bob (black)" in text
    assert text.count("pips 360  off  0") == 2


def test_black_perspective_turns_the_board():
    st = state_for(Position.start())
    text = board(st, Color.BLACK, you=Color.BLACK)
    rows = lines(text)
    assert column(text, "24", rows[3]) == "X"  # black's head, top right from its side
    assert column(text, "12", rows[13]) == "O"
    assert "black (you, black)" in text


def test_targets_selected_dice_and_off():
    p = Position.parse(MID)
    st = state_for(p, dice=[6, 5])
    text = board(st, Color.WHITE, you=Color.WHITE, targets={18, 13}, selected=24, dice_left=[5])
    rows = lines(text)
    assert "[24]" in rows[1] and " 18*" in rows[1] and " 13*" in rows[1]
    assert column(text, "18", rows[3]) == "*"
    assert "(6)[5]" in text  # the six is used, the five is left
    text = render_plain(st, Color.WHITE, targets={0})
    assert "off* 0" in text


def test_clocks_and_live_countdown():
    st = state_for(Position.start(), dice=[3, 1])
    st.white_clock.remaining_ms = 65_000
    st.black_clock.remaining_ms = 120_000
    assert live_clocks(st, 2.5) == (62_500, 120_000)  # only the mover's clock runs
    text = render_plain(st, Color.WHITE, clocks=live_clocks(st, 2.5))
    assert "clock 1:03  < to move" in text and "clock 2:00" in text
    assert fmt_clock(999) == "0:01" and fmt_clock(0) == "0:00" and fmt_clock(None) == "-:--"
    st.status = pb.GAME_STATUS_FINISHED
    assert live_clocks(st, 10) == (65_000, 120_000)


def test_match_score_and_result():
    st = state_for(Position.start(), white="alice", black="bob", to_move=False)
    st.match.target, st.match.white_points, st.match.black_points = 3, 2, 1
    st.result.winner, st.result.kind, st.result.points = pb.COLOR_WHITE, pb.RESULT_KIND_MARS, 2
    text = render_plain(st, Color.WHITE, you=Color.BLACK)
    assert "match to 3" in text
    assert "pts 2" in text and "pts 1" in text
    assert "white wins: mars (+2)" in text


def test_a_game_waiting_says_whether_for_players_or_for_an_answer():
    st = state_for(Position.start(), white="alice", black="bob", to_move=False)
    st.status = pb.GAME_STATUS_WAITING
    assert "waiting for players" in render_plain(st, Color.WHITE)
    st.challenge_pending = True
    assert "a challenge: not yet accepted" in render_plain(st, Color.WHITE)


def test_ascii_and_colour():
    st = state_for(Position.start())
    ascii_board = render_plain(st, Color.WHITE, unicode=False)
    assert ascii_board.isascii() and "+--H" in ascii_board
    console = Console(force_terminal=True, color_system="256", width=120)
    with console.capture() as cap:
        console.print(render(st, Color.WHITE))
    assert "\x1b[" in cap.get()  # colour where the terminal has it
    plain = Console(force_terminal=False, width=120)
    with plain.capture() as cap:
        plain.print(render(st, Color.WHITE))
    assert "\x1b[" not in cap.get()
    assert max(len(line) for line in render_plain(st, Color.WHITE).split("\n")) <= 80


def test_the_opponents_play_keeps_its_hits_in_your_numbers():
    """Short nardy's hits were dropped when a play was written in the person's numbers
    ("bar/2 2/5" for "bar/23* 23/20*"): the only sign of being hit, twice."""
    state = pb.GameState()
    state.options.variant = "short"
    assert in_numbering(state, Color.WHITE, "bar/23* 23/20*", Color.BLACK) == "bar/2* 2/5*"
    assert in_numbering(state, Color.WHITE, "8/5(2) 6/off", Color.BLACK) == "17/20(2) 19/off"
    state.options.variant = "long"
    assert in_numbering(state, Color.BLACK, "24/18 18/13", Color.WHITE) == "12/6 6/1"
    assert in_numbering(state, Color.BLACK, "-", Color.WHITE) == "-"


def test_the_last_play_is_marked_where_it_landed_from_the_bar_too():
    """Every point a play's checkers ended on is marked, a checker entered from the bar
    included; a checker that moved on marks only its last point (short nardy, RULES §8)."""
    short = variant("short")
    marks = play_marks(short, Color.BLACK, "bar/1 12/17*")
    assert marks == {short.point_index(Color.BLACK, 1), short.point_index(Color.BLACK, 17)}
    assert play_marks(short, Color.WHITE, "bar/22 22/16 6/off") == {
        short.point_index(Color.WHITE, 16)
    }
    long = variant("long")
    assert play_marks(long, Color.WHITE, "24/18(2)") == {long.point_index(Color.WHITE, 18)}


def test_the_compact_board_keeps_within_its_width():
    """Under the board each player's entries run on as many lines as they need, none
    wider than the compact layout (a wrapped line would push the board off the screen)."""
    st = state_for(Position.start(), white="a_rather_long_player_name", black="bob")
    st.match.target = 5
    st.status = pb.GAME_STATUS_IN_PROGRESS
    st.side_to_move = pb.COLOR_WHITE
    text = render_plain(st, Color.WHITE, you=Color.WHITE, compact=True, title="t")
    rows = lines(text)
    assert max(len(row) for row in rows) < COMPACT_WIDTH, text
    mine = next(i for i, row in enumerate(rows) if "(you, white)" in row)
    assert "pips 360" in rows[mine] and rows[mine + 1].startswith("   clock"), text
    assert "< to move" in rows[mine + 1]
