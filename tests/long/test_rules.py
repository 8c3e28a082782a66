"""Unit tests of the long nardy rules core against docs/RULES.md.

Section numbers (§3.5 etc.) refer to RULES.md. Positions are built from absolute indices
(§1: white's point p is a = 24 - p, black's point q is a = (36 - q) % 24). Every expected
set of end positions is also checked against the independent reference generator in
``tests/long/reference.py``.
"""

from __future__ import annotations

import pytest

from nardy import (
    Color,
    GameResult,
    IllegalPlay,
    Kind,
    Match,
    NotationError,
    Position,
    PositionError,
    Step,
    Termination,
    TurnBuilder,
    forfeit,
    legal_plays,
    match_play,
    opening_throw,
    result,
)
from tests.long.reference import reference_plays

W, B = Color.WHITE, Color.BLACK
START = "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"


def make(side: str, counts: dict[int, int]) -> Position:
    """A position from ``{absolute index: signed count}`` (white +, black -)."""
    board = [0] * 24
    for a, c in counts.items():
        board[a] = c
    return Position.parse(f"{side}/" + ",".join(map(str, board)))


def wa(p: int) -> int:
    """Absolute index of white's point p (§1)."""
    return 24 - p


def ba(q: int) -> int:
    """Absolute index of black's point q (§1)."""
    return (36 - q) % 24


def ends(pos: Position, dice: tuple[int, int]) -> set[str]:
    """End-position texts of the legal plays, checked against the reference generator."""
    got = {p.end.text() for p in legal_plays(pos, dice)}
    ref = reference_plays(pos, dice)
    assert got == ref, f"{pos.text()} {dice}: movegen {got - ref} vs reference {ref - got}"
    return got


def illegal(pos: Position, dice: tuple[int, int], text: str, *reason: str) -> str:
    """``text`` must be refused; the message must mention every ``reason``."""
    with pytest.raises(IllegalPlay) as exc:
        match_play(pos, dice, text)
    msg = str(exc.value)
    for r in reason:
        assert r in msg, f"{text!r}: expected {r!r} in {msg!r}"
    return msg


def holds(pos: Position, color: Color, absolute: list[int]) -> bool:
    sign = color.sign
    return all(pos.board[a] * sign > 0 for a in absolute)


# -- §1: coordinates and position text -------------------------------------------------------


def test_start_position_text():
    s = Position.start()
    assert s.text() == START
    assert Position.parse(START) == s
    assert s.turn is W
    assert s.count(W, 24) == 15 and s.count(B, 24) == 15
    assert s.borne_off(W) == 0 and s.borne_off(B) == 0
    assert s.winner is None


def test_the_winner_is_the_side_with_nothing_left_on_the_board():
    """§5: a side wins once all 15 of its checkers are borne off, whoever is to move."""
    assert make("b", {wa(1): 1, 12: -1}).winner is None
    assert make("b", {12: -15}).winner is W
    assert make("w", {wa(3): 2}).winner is B
    assert make("w", {wa(3): 2, 5: -1}).winner is None


def test_player_relative_points():
    """§1: a = 24 - p for white, a = (36 - q) % 24 for black; the opponent's head is 12."""
    pos = make("w", {0: 14, 11: 1, 12: -14, 23: -1})
    assert pos.count(W, 13) == 1  # white's 13 is a=11
    assert pos.count(B, 13) == 1  # black's 13 is a=23
    assert pos.count(W, 12) == 0 and pos.board[wa(12)] == -14  # white's 12: black's head
    assert pos.count(B, 1) == 0 and pos.board[ba(1)] == 1  # black's 1 is a=11
    assert pos.borne_off(W) == 0 and pos.borne_off(B) == 0


def test_first_turn_is_all_fifteen_on_head():
    """§1: a side is on its first turn exactly when all 15 are on its head."""
    after = make("b", {0: 14, 11: 1, 12: -15})
    assert after.is_first_turn(B) and after.is_first_turn()
    assert not after.is_first_turn(W)


def test_passed_keeps_the_board():
    """§1: a turn with no legal play leaves the board, opponent to move."""
    s = Position.start()
    assert s.passed().board == s.board and s.passed().turn is B


@pytest.mark.parametrize(
    "text",
    [
        "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0",  # 23 counts
        "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,0",  # 25 counts
        "w/16,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0",  # 16 white checkers
        "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,-1",  # 16 black checkers
        "x/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0",  # bad side letter
        "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,a",  # not a number
        "hello",  # garbage
        "",
        "w/0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0",  # both sides all off
    ],
)
def test_bad_position_text(text):
    with pytest.raises(PositionError):
        Position.parse(text)
    assert issubclass(PositionError, ValueError)


# -- §7: the worked examples ------------------------------------------------------------------

S = Position.start()


@pytest.mark.parametrize(
    ("dice", "expected"),
    [
        # 24/13 only: one checker from the head takes both dice
        ((6, 5), [{0: 14, 11: 1, 12: -15}]),
        # 24/18(2) only: first-turn exception; 18/12 would land on black's head
        ((6, 6), [{0: 13, 6: 2, 12: -15}]),
        # 24/16(2) only: each head checker uses two 4s before black's head blocks it
        ((4, 4), [{0: 13, 8: 2, 12: -15}]),
        # 24/15 24/21 and 24/18(2)
        ((3, 3), [{0: 13, 9: 1, 3: 1, 12: -15}, {0: 13, 6: 2, 12: -15}]),
        # 24/16 only (one checker): 2-2 is not an exception double
        ((2, 2), [{0: 14, 8: 1, 12: -15}]),
        # 24/4 only: one checker, four steps
        ((5, 5), [{0: 14, 20: 1, 12: -15}]),
    ],
)
def test_section7_opening_rolls(dice, expected):
    """§7 table (with §3.4 head rule and its first-turn exception)."""
    assert ends(S, dice) == {make("b", e).text() for e in expected}


def test_section7_opening_notation():
    """§7 / §1: the shorthands of the table read as the plays they name."""
    exp = {
        (6, 5): "b/14,0,0,0,0,0,0,0,0,0,0,1,-15,0,0,0,0,0,0,0,0,0,0,0",
        (6, 6): make("b", {0: 13, 6: 2, 12: -15}).text(),
        (4, 4): make("b", {0: 13, 8: 2, 12: -15}).text(),
        (2, 2): make("b", {0: 14, 8: 1, 12: -15}).text(),
        (5, 5): make("b", {0: 14, 20: 1, 12: -15}).text(),
    }
    assert match_play(S, (6, 5), "24/13").end.text() == exp[6, 5]
    assert match_play(S, (5, 6), "24/18 18/13").end.text() == exp[6, 5]
    assert match_play(S, (6, 5), "24/19 19/13").end.text() == exp[6, 5]
    assert match_play(S, (6, 6), "24/18(2)").end.text() == exp[6, 6]
    assert match_play(S, (4, 4), "24/16(2)").end.text() == exp[4, 4]
    assert match_play(S, (4, 4), "24/20 20/16 24/20 20/16").end.text() == exp[4, 4]
    assert match_play(S, (2, 2), "24/16").end.text() == exp[2, 2]
    assert match_play(S, (5, 5), "24/4").end.text() == exp[5, 5]
    three = {match_play(S, (3, 3), t).end.text() for t in ("24/15 24/21", "24/18(2)")}
    assert three == ends(S, (3, 3))


def test_section7_black_first_turn_after_white_55():
    """§7: black 4-4 after white's 5-5: only 24/20(2), two of the four dice (§3.6);
    black's 16 is white's 4 (a=20), which is closed (§3.2)."""
    pos = Position.parse("b/14,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,1,0,0,0")
    assert pos.is_first_turn()
    expected = make("w", {0: 14, 20: 1, 12: -13, ba(20): -2}).text()
    assert ends(pos, (4, 4)) == {expected}
    (play,) = legal_plays(pos, (4, 4))
    assert len(play.steps) == 2
    assert match_play(pos, (4, 4), "24/20(2)").end.text() == expected
    illegal(pos, (4, 4), "24/20 20/16", "held by the opponent")


def test_section7_bear_off_6_2():
    """§7 / §4: one checker on 5, fourteen on 3, dice 6-2: 5/off 3/1 and 5/3 3/off."""
    pos = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,1,0,14,0,0")
    a = make("b", {12: -15, 21: 13, 23: 1}).text()  # 5/off 3/1
    b = make("b", {12: -15, 21: 14}).text()  # 5/3 3/off
    assert ends(pos, (6, 2)) == {a, b}
    assert match_play(pos, (6, 2), "5/off 3/1").end.text() == a
    assert match_play(pos, (6, 2), "5/3 3/off").end.text() == b
    assert match_play(pos, (6, 2), "3/1 5/off").end.text() == a


def test_section7_six_point_rule_each_step():
    """§7 / §3.5: 24/19 first makes 19..14 with no black checker ahead: refused; the 1
    first (14/13 24/19) never makes a six-point run, so it is legal."""
    pos = Position.parse("w/10,0,0,0,0,0,1,1,1,1,1,0,-15,0,0,0,0,0,0,0,0,0,0,0")
    assert not pos.is_first_turn()
    got = ends(pos, (5, 1))
    legal = make("b", {0: 9, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 11: 1, 12: -15}).text()
    assert legal in got
    assert match_play(pos, (5, 1), "14/13 24/19").end.text() == legal
    illegal(pos, (5, 1), "24/19 14/13", "six-point")
    illegal(pos, (5, 1), "24/19 19/18", "six-point")  # the run exists after the first step
    # 24/18 must be read as 24/23/18: via 19 it would make the run at the in-between point
    assert match_play(pos, (5, 1), "24/18").end.text() == (
        make("b", {0: 9, 6: 2, 7: 1, 8: 1, 9: 1, 10: 1, 12: -15}).text()
    )
    for text in got:  # no end position holds 19..14 (a=5..10)
        assert not holds(Position.parse(text), W, [5, 6, 7, 8, 9, 10])


# -- §3.2, §3.3: open points ---------------------------------------------------------------


def test_cannot_land_on_opponent_point():
    """§3.2: a point with even one opposing checker is closed."""
    illegal(S, (6, 6), "24/18 18/12", "held by the opponent")
    pos = make("w", {0: 14, 10: 1, 12: -14, wa(8): -1})
    illegal(pos, (6, 5), "14/8 24/19", "held by the opponent")
    assert all(Position.parse(t).board[wa(8)] == -1 for t in ends(pos, (6, 5)))


def test_may_pass_over_closed_points():
    """§3.2: a checker may pass over closed points (here black's head, white's 12)."""
    pos = make("w", {0: 14, 10: 1, 12: -15})  # white's 14 at a=10
    got = ends(pos, (6, 5))
    assert make("b", {0: 13, 5: 1, 16: 1, 12: -15}).text() in got  # 24/19 14/8


def test_every_intermediate_point_must_be_open():
    """§3.3: 24/13 with 6-5 goes through 19 when 18 is closed; with both closed nothing."""
    pos = make("w", {0: 15, wa(18): -1, 12: -14})
    expected = make("b", {0: 14, 11: 1, wa(18): -1, 12: -14}).text()
    assert ends(pos, (6, 5)) == {expected}
    assert match_play(pos, (6, 5), "24/13").end.text() == expected
    illegal(pos, (6, 5), "24/18 18/13", "held by the opponent")
    both = make("w", {0: 15, wa(18): -1, wa(19): -1, 12: -13})
    assert ends(both, (6, 5)) == set()
    illegal(both, (6, 5), "24/13")


# -- §3.4: head rule -----------------------------------------------------------------------


def test_head_rule_one_checker_per_turn():
    """§3.4: at most one checker leaves the head (6-5 and 2-2 are no exception)."""
    illegal(S, (6, 5), "24/18 24/19", "head rule")
    illegal(S, (2, 2), "24/22 24/22", "head rule")
    illegal(S, (5, 5), "24/19 24/19", "head rule")
    illegal(S, (1, 1), "24/23 24/23", "head rule")


def test_first_turn_exception_for_black():
    """§3.4 Decision: the exception applies to each side's first turn; black's first turn
    after white's opening 6-5 with 6-6 is 24/18(2) (18/12 would land on white's head)."""
    pos = make("b", {0: 14, 11: 1, 12: -15})
    assert ends(pos, (6, 6)) == {make("w", {0: 14, 11: 1, 12: -13, ba(18): -2}).text()}
    assert match_play(pos, (6, 6), "24/18(2)").end.text() == (
        make("w", {0: 14, 11: 1, 12: -13, ba(18): -2}).text()
    )
    assert ends(pos, (4, 4)) == {make("w", {0: 14, 11: 1, 12: -13, ba(16): -2}).text()}
    assert ends(pos, (3, 3)) == {
        make("w", {0: 14, 11: 1, 12: -13, ba(18): -2}).text(),
        make("w", {0: 14, 11: 1, 12: -13, ba(15): -1, ba(21): -1}).text(),
    }
    # 5-5 is no exception: one checker, 24/4 (black's 4 is a=8)
    assert ends(pos, (5, 5)) == {make("w", {0: 14, 11: 1, 12: -14, ba(4): -1}).text()}


def test_exception_does_not_apply_on_a_later_turn():
    """§3.4: white's second turn with 6-6 moves one head checker; 18/12 and 7/1 are
    closed (§3.2), so only 24/18 13/7 (two dice) remains."""
    pos = make("w", {0: 14, 11: 1, 12: -14, 23: -1})
    assert not pos.is_first_turn()
    expected = make("b", {0: 13, 6: 1, 17: 1, 12: -14, 23: -1}).text()
    assert ends(pos, (6, 6)) == {expected}
    assert match_play(pos, (6, 6), "24/18 13/7").end.text() == expected
    illegal(pos, (6, 6), "24/18 24/18", "head rule")
    # the same for black on its second turn
    pos_b = make("b", {0: 14, 11: 1, 12: -14, 23: -1})
    assert not pos_b.is_first_turn()
    plays = legal_plays(pos_b, (6, 6))
    assert plays
    for play in plays:
        assert play.end.count(B, 24) == 13
    ends(pos_b, (6, 6))


# -- §3.5: six-point rule ------------------------------------------------------------------

# White holding a=20,21,22,23 and a=0,1 (black's points 16..11) is a run (§3.5: a white
# run continues from a=23 to a=0). White's 7 (a=17) moving 6 to white's 1 (a=23) makes it.
WHITE_SEAM = {0: 10, 1: 1, 20: 1, 21: 1, 22: 1, 17: 1}
WHITE_SEAM_RUN = [20, 21, 22, 23, 0, 1]


def test_white_run_across_a23_a0_is_refused():
    """§3.5: black's checkers are all behind the run (on its head), none borne off."""
    pos = make("w", {**WHITE_SEAM, 12: -15})
    illegal(pos, (6, 1), "7/1 24/23", "six-point")
    illegal(pos, (6, 1), "24/23 7/1", "six-point")
    got = ends(pos, (6, 1))
    assert got
    assert not any(holds(Position.parse(t), W, WHITE_SEAM_RUN) for t in got)
    # black checkers behind the run along black's path do not help
    behind = make("w", {**WHITE_SEAM, 12: -14, 15: -1})
    illegal(behind, (6, 1), "7/1 24/23", "six-point")


def test_white_run_across_seam_legal_with_black_checker_ahead():
    """§3.5: an opposing checker ahead (black's 19 at a=5, past the run's last point a=1)."""
    pos = make("w", {**WHITE_SEAM, 12: -14, 5: -1})
    play = match_play(pos, (6, 1), "7/1 24/23")
    assert holds(play.end, W, WHITE_SEAM_RUN)
    assert play.end.text() in ends(pos, (6, 1))


def test_white_run_across_seam_legal_with_black_checker_borne_off():
    """§3.5: a borne-off checker counts as ahead."""
    pos = make("w", {**WHITE_SEAM, 12: -14})
    assert pos.borne_off(B) == 1
    play = match_play(pos, (6, 1), "7/1 24/23")
    assert holds(play.end, W, WHITE_SEAM_RUN)
    assert play.end.text() in ends(pos, (6, 1))


def test_white_no_run_across_a11_a12():
    """§3.5: no white run continues across black's home -> head seam (a=11 -> a=12):
    white on a=8..13 is not six consecutive points of black's path."""
    pos = make("w", {0: 9, 6: 1, 8: 1, 9: 1, 10: 1, 11: 1, 13: 1, 14: -5, 15: -5, 16: -5})
    play = match_play(pos, (6, 1), "18/12 24/23")
    assert holds(play.end, W, [8, 9, 10, 11, 12, 13])
    assert play.end.text() in ends(pos, (6, 1))


# Black holding a=8..11 (its 4..1) and a=12, a=13 (its 24, 23) is a run along white's path
# (§3.5: a black run continues from a=11 to a=12). Black's 7 (a=5) moving 6 to its 1 makes it.
BLACK_SEAM = {12: -8, 13: -1, 8: -1, 9: -1, 10: -1, 5: -1, 4: -1, 3: -1}
BLACK_SEAM_RUN = [8, 9, 10, 11, 12, 13]


def test_black_run_across_a11_a12_is_refused():
    pos = make("b", {**BLACK_SEAM, 0: 15})
    illegal(pos, (6, 1), "7/1", "six-point")
    got = ends(pos, (6, 1))
    assert got
    assert not any(holds(Position.parse(t), B, BLACK_SEAM_RUN) for t in got)


def test_black_run_across_a11_a12_legal_with_white_ahead_or_off():
    """§3.5: a white checker past a=13 on white's path, or one borne off."""
    for white in ({0: 14, 16: 1}, {0: 14}):
        pos = make("b", {**BLACK_SEAM, **white})
        play = match_play(pos, (6, 1), "7/1 24/23")
        assert holds(play.end, B, BLACK_SEAM_RUN)
        assert play.end.text() in ends(pos, (6, 1))


def test_black_no_run_across_a23_a0():
    """§3.5: no black run continues across white's home -> head seam (a=23 -> a=0):
    black on a=20..23, 0, 1 (its 16..11) is not six consecutive points of white's path."""
    pos = make("b", {12: -9, 18: -1, 20: -1, 21: -1, 22: -1, 23: -1, 1: -1, 14: 5, 15: 5, 16: 5})
    play = match_play(pos, (6, 1), "18/12 24/23")
    assert holds(play.end, B, [20, 21, 22, 23, 0, 1])
    assert play.end.text() in ends(pos, (6, 1))


def test_six_point_rule_inside_one_quarter():
    """§3.5: white's 18..13 (a=6..11, black's 6..1): nothing of black's path lies past it,
    so only a borne-off black checker makes it legal."""
    base = {0: 9, 6: 1, 7: 1, 8: 1, 9: 1, 10: 2}  # 24: 9, 18..15: 1, 14: 2
    pos = make("w", {**base, 12: -15})
    got = ends(pos, (2, 1))
    assert got
    assert not any(holds(Position.parse(t), W, [6, 7, 8, 9, 10, 11]) for t in got)
    illegal(pos, (2, 1), "14/13 24/22", "six-point")
    off = make("w", {**base, 12: -14})
    play = match_play(off, (2, 1), "14/13 24/22")
    assert holds(play.end, W, [6, 7, 8, 9, 10, 11])
    assert play.end.text() in ends(off, (2, 1))


# -- §3.6: must play -----------------------------------------------------------------------


def test_must_play_as_many_dice_as_possible():
    """§3.6: a play using fewer dice than possible is refused."""
    msg = illegal(S, (6, 5), "24/18", "§3.6")
    assert "2" in msg
    for play in legal_plays(S, (6, 5)):
        assert len(play.steps) == 2
    # §7 black 4-4: only two dice can be played, and two must be
    pos = Position.parse("b/14,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,1,0,0,0")
    illegal(pos, (4, 4), "24/20", "§3.6")


# White: 14 on the head, one on its 8 (a=16). Black closes white's 13 (a=11), 3 (a=21),
# 2 (a=22). 24/18 or 24/19 can be played alone, but never both dice.
LARGER = {0: 14, 16: 1, 12: -12, 11: -1, 21: -1, 22: -1}


def test_larger_die_rule():
    """§3.6: either die alone but not both: the larger (6) must be played."""
    pos = make("w", LARGER)
    assert ends(pos, (6, 5)) == {make("b", {**LARGER, 0: 13, 6: 1}).text()}
    assert ends(pos, (5, 6)) == {make("b", {**LARGER, 0: 13, 6: 1}).text()}
    illegal(pos, (6, 5), "24/19", "larger die")
    assert match_play(pos, (6, 5), "24/18").end.text() == make("b", {**LARGER, 0: 13, 6: 1}).text()


def test_only_the_smaller_die_playable():
    """§3.6: when only the smaller die can be played, it is played."""
    pos = make("w", {**LARGER, 12: -11, 6: -1})  # white's 18 closed too: no 6 at all
    expected = make("b", {**LARGER, 12: -11, 6: -1, 0: 13, 5: 1}).text()
    assert ends(pos, (6, 5)) == {expected}
    assert match_play(pos, (6, 5), "24/19").end.text() == expected


def test_no_legal_play_passes():
    """§3.6: nothing can be played: the turn passes; written '-' (§1)."""
    pos = make("w", {0: 15, 6: -1, 12: -14})  # first-turn 6-6, white's 18 closed
    assert legal_plays(pos, (6, 6)) == []
    assert reference_plays(pos, (6, 6)) == set()
    play = match_play(pos, (6, 6), "-")
    assert play.end == pos.passed() and play.steps == () and play.notation() == "-"
    illegal(pos, (6, 6), "24/18", "held by the opponent")
    tb = TurnBuilder(pos, (6, 6))
    assert tb.complete and tb.legal_steps() == []


# -- §4: bearing off -----------------------------------------------------------------------


def test_bear_off_exact_point():
    """§4.2: a die bears off a checker from the point of its number."""
    pos = make("w", {wa(6): 3, wa(2): 2, wa(1): 10, 12: -15})
    end = match_play(pos, (6, 2), "6/off 2/off").end
    assert end.text() == make("b", {wa(6): 2, wa(2): 1, wa(1): 10, 12: -15}).text()
    assert end.borne_off(W) == 2
    assert end.text() in ends(pos, (6, 2))


def test_bear_off_must_move_from_higher_point():
    """§4.3: the 4's point is empty and 6 is occupied: the 4 moves 6/2, it cannot bear
    off the checker on 3."""
    pos = make("w", {wa(6): 1, wa(3): 14, 12: -15})
    illegal(pos, (4, 1), "3/off 6/5", "higher point")
    got = ends(pos, (4, 1))
    assert got
    assert all(Position.parse(t).borne_off(W) == 0 for t in got)
    assert match_play(pos, (4, 1), "6/2 3/2").end.text() in got


def test_bear_off_from_highest_point():
    """§4.4: the die's point is empty and nothing is higher: bear off from the highest."""
    pos = make("w", {wa(3): 5, wa(2): 5, 12: -15})
    expected = make("b", {wa(3): 3, wa(2): 5, 12: -15}).text()
    assert ends(pos, (6, 5)) == {expected}
    assert match_play(pos, (6, 5), "3/off 3/off").end.text() == expected
    assert match_play(pos, (6, 5), "3/off(2)").end.text() == expected


def test_moving_inside_home_allowed():
    """§4.5: moving inside home instead of bearing off is allowed."""
    pos = make("w", {wa(6): 2, wa(1): 13, 12: -15})
    got = ends(pos, (2, 1))
    inside = match_play(pos, (2, 1), "6/4 6/5").end
    assert inside.borne_off(W) == 0 and inside.text() in got
    assert match_play(pos, (2, 1), "6/4 1/off").end.text() in got


def test_last_checker_home_then_bears_off_same_turn():
    """§4.1: a step bringing the last checker home lets the next step bear off."""
    pos = make("w", {wa(1): 14, wa(8): 1, 12: -15})
    expected = make("b", {wa(1): 14, 12: -15}).text()
    assert ends(pos, (6, 2)) == {expected}
    assert match_play(pos, (6, 2), "8/2 2/off").end.text() == expected
    assert match_play(pos, (6, 2), "8/6 6/off").end.text() == expected
    assert match_play(pos, (6, 2), "8/off").end.text() == expected


def test_cannot_bear_off_before_all_home():
    """§4.1: with a checker on 8, nothing may bear off yet."""
    pos = make("w", {wa(1): 14, wa(8): 1, 12: -15})
    illegal(pos, (6, 2), "1/off 8/2", "home")


def test_game_end_lapses_remaining_dice():
    """§4.6: bearing off the 15th checker ends the game; the other dice lapse."""
    pos = make("w", {wa(1): 1, 12: -15})
    (play,) = legal_plays(pos, (3, 3))
    assert len(play.steps) == 1
    assert play.end.winner is W
    assert ends(pos, (3, 3)) == {play.end.text()}
    assert match_play(pos, (3, 3), "1/off").end == play.end
    res = result(play.end)
    assert res.winner is W and res.kind is Kind.MARS


@pytest.mark.parametrize(
    ("counts", "dice"),
    [
        ({wa(3): 1, 12: -15}, (2, 1)),  # 3/1 1/off or 3/2 2/off
        ({wa(6): 2, 12: -15}, (6, 6)),  # 6/off 6/off
        ({wa(1): 2, 12: -15}, (5, 4)),  # 1/off 1/off
    ],
)
def test_when_the_game_can_end_no_partial_play_is_legal(counts, dice):
    """§3.6 with §4.6: when every die that can be played ends the game, a play that stops
    short (e.g. 3/1 alone with 2-1 from a lone checker on 3) uses fewer dice than
    possible and is not a legal play: the only end position is the finished game."""
    pos = make("w", counts)
    finished = make("b", {12: -15}).text()
    assert reference_plays(pos, dice) == {finished}
    got = {p.end.text() for p in legal_plays(pos, dice)}
    assert got == {finished}, f"{pos.text()} {dice}: extra plays {got - {finished}}"


# -- §1: notation --------------------------------------------------------------------------


def test_canonical_notation():
    (play,) = legal_plays(S, (6, 5))
    assert play.notation() == "24/18 18/13"
    assert play.steps == (Step(24, 18, 6), Step(18, 13, 5))


@pytest.mark.parametrize(
    ("pos", "dice"),
    [
        (S, (6, 5)),
        (S, (3, 3)),
        (Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,1,0,14,0,0"), (6, 2)),
        (make("w", {0: 9, 3: 2, 6: 1, 9: 2, 16: 1, 12: -10, 14: -3, 20: -2}), (4, 4)),
        (make("b", {0: 9, 3: 2, 6: 1, 9: 2, 16: 1, 12: -10, 14: -3, 20: -2}), (6, 1)),
    ],
)
def test_notation_round_trip(pos, dice):
    """§1: every legal play's notation reads back as that play."""
    plays = legal_plays(pos, dice)
    assert plays
    for play in plays:
        assert match_play(pos, dice, play.notation()).end == play.end
        spelled = " ".join(f"{s.src}/{s.dst or 'off'}" for s in play.steps)
        assert match_play(pos, dice, spelled).end == play.end


def test_notation_errors():
    # (digits are ASCII: a full-width or Arabic-Indic one is not read as one)
    for text in ("hello", "24-18", "25/20", "18/24", "24/18(9)", "\uff124/18", "24/1\u0668"):
        with pytest.raises(NotationError):
            match_play(S, (6, 5), text)
    assert issubclass(NotationError, ValueError) and issubclass(IllegalPlay, ValueError)


def test_no_checker_on_point():
    illegal(S, (6, 5), "20/14 14/9", "no checker")


# -- TurnBuilder ---------------------------------------------------------------------------


def test_turn_builder_step_undo_play():
    tb = TurnBuilder(S, (6, 5))
    assert {(s.src, s.dst) for s in tb.legal_steps()} == {(24, 18), (24, 19)}
    assert not tb.complete
    tb.step(24, 18)
    assert [(s.src, s.dst) for s in tb.legal_steps()] == [(18, 13)]
    with pytest.raises(IllegalPlay, match="head rule"):
        tb.step(24, 19)
    assert tb.undo() == Step(24, 18, 6)
    assert tb.undo() is None
    tb.step(24, 13)
    assert tb.complete and tb.legal_steps() == []
    assert tb.play().end.text() == "b/14,0,0,0,0,0,0,0,0,0,0,1,-15,0,0,0,0,0,0,0,0,0,0,0"


def test_turn_builder_incomplete_play_refused():
    tb = TurnBuilder(S, (6, 5))
    tb.step(24, 18)
    with pytest.raises(IllegalPlay, match="§3.6"):
        tb.play()


# -- §5: results, scoring, match -----------------------------------------------------------


def test_result_none_while_playing():
    assert result(S) is None


def test_oin():
    """§5: the loser has borne off at least one: 1 point."""
    pos = make("b", {ba(3): -14})
    r = result(pos)
    assert (r.winner, r.kind, r.points) == (W, Kind.OIN, 1)
    assert result(pos, koks=True).kind is Kind.OIN


def test_mars():
    """§5: the loser has borne off none: 2 points."""
    pos = make("b", {ba(3): -15})
    r = result(pos)
    assert (r.winner, r.kind, r.points) == (W, Kind.MARS, 2)
    assert result(pos, koks=True).kind is Kind.MARS  # nothing in its 24..19


def test_koks_variant():
    """§5 variant koks = true: none off and a checker in its starting quarter (24..19)."""
    pos = make("b", {ba(3): -14, ba(19): -1})
    assert result(pos).kind is Kind.MARS
    r = result(pos, koks=True)
    assert (r.winner, r.kind, r.points) == (W, Kind.KOKS, 3)
    # black wins against white with a checker on white's 24 (its head)
    pos_w = make("w", {wa(24): 1, wa(5): 14})
    r = result(pos_w, koks=True)
    assert (r.winner, r.kind, r.points) == (B, Kind.KOKS, 3)


def test_forfeit():
    """§5: timeout/resignation/abandonment: mars if the loser bore off none, else oin."""
    r = forfeit(S, B, Termination.TIMEOUT)
    assert (r.winner, r.kind, r.points, r.termination) == (W, Kind.MARS, 2, Termination.TIMEOUT)
    pos = make("w", {wa(1): 10, 12: -15})
    r = forfeit(pos, W, Termination.RESIGNATION)
    assert (r.winner, r.kind, r.points) == (B, Kind.OIN, 1)


def test_opening_throw_repeats_ties():
    """§2: each side throws one die, ties are thrown again."""
    rolls = iter([3, 3, 2, 5])
    assert opening_throw(lambda: next(rolls)) == [(3, 3), (2, 5)]


def test_match_to_three_colours_alternate():
    """§2, §5: colours alternate after the first throw; points add up to the target."""
    m = Match(3)

    def no_throw():
        raise AssertionError("colours alternate: no throw after the first game")

    white, throws = m.next_white(lambda: [(2, 2), (3, 5)])  # player 1 throws higher
    assert white == 1 and throws == [(2, 2), (3, 5)]
    m.record(white, GameResult(W, Kind.OIN))
    assert m.scores == [0, 1] and not m.over and m.winner is None
    white, throws = m.next_white(no_throw)
    assert white == 0 and throws == []
    m.record(white, GameResult(W, Kind.OIN))  # player 0 wins as white
    assert m.scores == [1, 1]
    white, _ = m.next_white(no_throw)
    assert white == 1
    m.record(white, GameResult(B, Kind.MARS))  # player 0 wins as black: 2 points
    assert m.scores == [3, 1] and m.over and m.winner == 0
    with pytest.raises(ValueError):
        m.record(0, GameResult(W, Kind.OIN))
    with pytest.raises(ValueError):
        Match(0)
