"""Short nardy (backgammon) rules: the standard cases of RULES.md §8-9, §3.6, §4.

Positions are written in each side's own points (``tests/short/helpers.py``) or as §9
position text; end positions are always with the opponent to move.
"""

from __future__ import annotations

from collections import Counter

import pytest

from nardy.game import Color, IllegalPlay, NotationError, PositionError, Termination
from nardy.short.movegen import Step, legal_plays
from nardy.short.notation import parse_moves
from nardy.short.position import BAR, OFF, Position
from nardy.short.scoring import Kind, forfeit, result
from nardy.short.turn import TurnBuilder, match_play

from .helpers import B, W, pos

START = "w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0"


def notations(position: Position, dice) -> set[str]:
    return {p.notation() for p in legal_plays(position, dice)}


def ends(position: Position, dice) -> set[Position]:
    return {p.end for p in legal_plays(position, dice)}


def moved(position: Position, dice, text: str) -> Position:
    return match_play(position, dice, text).end


# -- §9 position text ------------------------------------------------------------------


def test_start_position_text():
    """§8/§9: 2 on the 24, 5 on the 13, 3 on the 8, 5 on the 6 for each side."""
    start = Position.start()
    assert start.text() == START
    assert Position.parse(START) == start
    for color in Color:
        assert [start.count(color, p) for p in (24, 13, 8, 6)] == [2, 5, 3, 5]
        assert start.borne_off(color) == 0 and start.on_bar(color) == 0
        assert start.pips(color) == 167


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,-2/0,0", "24 point counts"),
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2", "white bar"),
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0", "2 bar counts"),
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/1,0", "16 checkers"),
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,-1", "negative"),
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-3/0,0", "black has 16"),
        ("w/2,x,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0", "a=1"),
        ("w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,y", "BLACK bar"),
        ("x/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0", "side to move"),
        ("w/" + ",".join(["0"] * 24) + "/0,0", "both sides"),
        ("garbage", "expected"),
    ],
)
def test_bad_position_text_names_the_problem(text, needle):
    """§9: the position text is checked, 15 per side counting the bar and borne off."""
    with pytest.raises(PositionError, match=needle):
        Position.parse(text)


def test_checkers_on_the_bar_count_toward_fifteen():
    """§9: borne off = 15 - on board - on bar."""
    p = Position.parse("b/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,4,0,0,0,0,-1/1,1")
    assert p.on_bar(W) == 1 and p.borne_off(W) == 0
    assert p.on_bar(B) == 1 and p.borne_off(B) == 0
    assert p.count(W, BAR) == 1 and p.pips(W) == 167 - 6 + 25


# -- §9 worked examples -----------------------------------------------------------------


def test_three_one_from_the_start_makes_the_five_point():
    """§9: 3-1 from the start has ``8/5 6/5`` among its plays."""
    start = Position.start()
    assert "8/5 6/5" in notations(start, (3, 1))
    assert moved(start, (3, 1), "8/5 6/5") == moved(start, (1, 3), "6/5 8/5")
    assert len(ends(start, (3, 1))) == 16


def test_six_six_from_the_start_uses_four_sixes():
    """§9: 6-6 from the start has exactly the plays that use four sixes: each six is
    24/18 (two checkers; 18/12 lands on black's 13-point), 13/7 (7/1 is closed) or 8/2."""
    plays = legal_plays(Position.start(), (6, 6))
    assert all(len(p.steps) == 4 for p in plays)
    got = {frozenset(Counter((s.src, s.dst) for s in p.steps).items()) for p in plays}
    expected = set()
    for a in range(3):
        for c in range(4):
            b = 4 - a - c
            if b >= 0:
                counts = {(24, 18): a, (13, 7): b, (8, 2): c}
                expected.add(frozenset((k, v) for k, v in counts.items() if v))
    assert got == expected and len(plays) == 11


FIVE_POINT_BOARD = pos(W, {13: 6, 8: 3, 6: 5}, {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 13: 5}, bar=(1, 0))


def test_entering_against_a_five_point_board_needs_a_six():
    """§9: black holds a=0..4 (its points 1..5), a=5 is open: only a 6 enters (bar/19),
    before any other step; with no 6 nothing can be played."""
    assert FIVE_POINT_BOARD.board[:6] == (-2, -2, -2, -2, -2, 0)
    for dice in [(6, 5), (6, 1), (3, 6)]:
        plays = legal_plays(FIVE_POINT_BOARD, dice)
        assert plays and all(p.steps[0] == Step(BAR, 19, 6) for p in plays)
        assert all(len(p.steps) == 2 for p in plays)
    for dice in [(5, 4), (1, 2), (5, 5)]:
        assert legal_plays(FIVE_POINT_BOARD, dice) == []
    # 6-6: enter on 19, then three more sixes from the bar-free board
    assert all(len(p.steps) == 4 for p in legal_plays(FIVE_POINT_BOARD, (6, 6)))


CLOSED_BOARD = pos(W, {13: 6, 8: 3, 6: 5}, {q: 2 for q in range(1, 7)} | {13: 3}, bar=(1, 0))


@pytest.mark.parametrize("dice", [(a, b) for a in range(1, 7) for b in range(a, 7)])
def test_no_entry_on_a_closed_board(dice):
    """§8/§9: with a=0..5 all closed the checker on the bar cannot enter, so nothing moves:
    the turn passes with the position unchanged and black to move."""
    assert legal_plays(CLOSED_BOARD, dice) == []
    builder = TurnBuilder(CLOSED_BOARD, dice)
    assert builder.complete and builder.play().end == CLOSED_BOARD.passed()
    assert match_play(CLOSED_BOARD, dice, "-").end.text() == "b" + CLOSED_BOARD.text()[1:]
    with pytest.raises(IllegalPlay, match=f"cannot enter: point {25 - dice[0]} is closed"):
        builder.step(BAR, 25 - dice[0])
    with pytest.raises(IllegalPlay, match="bar must enter first"):
        builder.step(13, 13 - dice[0])


# -- hitting and entering -----------------------------------------------------------------


def test_a_hit_mid_turn_sends_the_blot_to_the_bar_and_the_checker_moves_on():
    """§8: 24/18* 18/13 hits black's blot on white's 18 (a=6) on the way; black's 19
    (a=5) is closed, so the shorthand 24/13 can only go through 18."""
    p = Position.parse("w/2,0,0,0,0,-5,-1,-2,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0")
    play = match_play(p, (6, 5), "24/13")
    assert play.notation() == "24/18* 18/13"
    assert play.end.text() == "b/1,0,0,0,0,-5,0,-2,0,0,0,6,-5,0,0,0,3,0,5,0,0,0,0,-2/0,1"
    assert match_play(p, (6, 5), "24/18*/13").end == play.end
    assert match_play(p, (5, 6), "24/18 18/13").end == play.end  # * is optional
    assert "24/18* 13/8" in notations(p, (6, 5))


def test_hitting_two_blots_in_one_turn():
    """§8: each landing on a blot is a hit and every hit checker goes to the bar, also when
    one checker hits twice."""
    p = pos(W, {13: 15}, {15: 1, 18: 1, 1: 13})  # black's 15 and 18: white's 10 and 7
    assert moved(p, (6, 3), "13/10* 13/7*").bar == (0, 2)
    assert moved(p, (3, 3), "13/10*/7*(2)").bar == (0, 2)
    assert moved(p, (3, 3), "13/10*/7*/4/1").count(W, 1) == 1
    assert moved(p, (5, 2), "13/8 13/11").bar == (0, 0)


def test_a_blot_hit_and_left_alone_stays_on_the_bar():
    """§8: a checker hits on 18 and moves on: the blot is on the bar, 18 is empty."""
    p = pos(W, {20: 1, 6: 14}, {7: 1, 1: 14})  # black's 7 is white's 18
    end = moved(p, (2, 5), "20/18* 18/13")
    assert end.on_bar(B) == 1 and end.count(W, 18) == 0 and end.count(B, 7) == 0
    assert end.count(W, 13) == 1


def test_a_checker_enters_and_moves_on_with_the_same_roll():
    """§8: bar/19 19/16 (and bar/22 22/16) are one play written bar/16."""
    p = pos(W, {6: 14}, {1: 15}, bar=(1, 0))
    plays = legal_plays(p, (6, 3))
    assert "bar/19 19/16" in {q.notation() for q in plays}
    assert match_play(p, (6, 3), "bar/16").end == match_play(p, (3, 6), "bar/22 22/16").end
    # a double: the entered checker may keep going with the other three
    assert "bar/21 21/17 17/13 13/9" in notations(p, (4, 4))
    assert moved(p, (4, 4), "bar/9").count(W, 9) == 1


def test_two_on_the_bar_and_only_one_can_enter():
    """§8: with two checkers on the bar only one of which can enter, the other die is
    lost: it may not be played by a checker on the board."""
    board = {q: 2 for q in (1, 2, 4, 5, 6)}  # black's 3 (white's 22, a=2) is open
    p = pos(W, {13: 13}, board | {13: 5}, bar=(2, 0))
    assert [q.notation() for q in legal_plays(p, (3, 5))] == ["bar/22"]
    # 3-3: both enter on 22; 22/19 is closed (black's 6), so two threes from 13
    assert notations(p, (3, 3)) == {"bar/22 bar/22 13/10 13/10", "bar/22 bar/22 13/10 10/7"}
    builder = TurnBuilder(p, (5, 3))
    with pytest.raises(IllegalPlay, match="bar must enter first"):
        builder.step(13, 8)
    builder.step(BAR, 22)
    assert builder.complete and builder.play().end.bar == (1, 0)


def test_a_double_after_entering_must_keep_playing():
    """§3.6/§8: one checker on the bar, 2-2: enter and play all three other twos."""
    p = pos(W, {13: 14}, {q: 2 for q in (1, 3, 4, 5, 6)} | {13: 5}, bar=(1, 0))
    plays = legal_plays(p, (2, 2))
    assert plays and all(len(q.steps) == 4 and q.steps[0].src == BAR for q in plays)
    assert all(s.src != BAR for q in plays for s in q.steps[1:])


def test_entering_hits_a_blot_in_the_opponent_home():
    """§8: the entering checker lands on a blot: it is hit."""
    p = pos(W, {6: 14}, {4: 1, 13: 14}, bar=(1, 0))  # black blot on its 4 = white's 21
    play = match_play(p, (4, 1), "bar/21* 6/5")
    assert play.steps[0] == Step(BAR, 21, 4, True) and play.end.bar == (0, 1)


# -- must play (§3.6) ---------------------------------------------------------------------


def test_the_larger_die_when_either_can_be_played_but_not_both():
    """§3.6: 13/7 or 13/8, then the other die lands on the closed 2-point: the 6 wins."""
    p = pos(W, {13: 1}, {23: 2, 24: 13})  # black's 23 is white's 2
    assert notations(p, (6, 5)) == {"13/7"}
    builder = TurnBuilder(p, (6, 5))
    with pytest.raises(IllegalPlay, match="larger die"):
        builder.step(13, 8)
    # only the smaller can be played: it must be
    q = pos(W, {13: 1}, {23: 2, 18: 2, 24: 11})  # black's 18 is white's 7
    assert notations(q, (6, 5)) == {"13/8"}


def test_both_dice_must_be_played_when_some_order_allows_it():
    """§3.6: the 6 alone blocks the 5, but 5 then 6 plays both: only that is legal."""
    p = pos(W, {13: 1}, {18: 2, 24: 13})  # white's 7 closed: 13/8/2 plays both
    assert notations(p, (6, 5)) == {"13/8 8/2"}


# -- bearing off (§4) ---------------------------------------------------------------------


def test_bear_off_exact():
    """§4.2: a die bears off a checker from the point of its number."""
    p = pos(W, {6: 1, 5: 1, 3: 2}, {1: 15})
    assert "6/off 5/off" in notations(p, (6, 5))


def test_bear_off_from_the_highest_point_with_a_larger_die():
    """§4.4: no checker on the die's point or higher: the highest checker bears off."""
    p = pos(W, {3: 1, 2: 1}, {1: 15})
    assert notations(p, (6, 5)) == {"3/off 2/off"}
    assert result(legal_plays(p, (6, 5))[0].end).kind is Kind.GAMMON


def test_a_die_with_a_checker_on_a_higher_point_moves_inside():
    """§4.3: with a checker on 6 a 5 or a 4 cannot bear off from 3: 6/1 or 6/2 first, then
    3 is the highest point and bears off (§4.4 becoming possible mid-turn)."""
    p = pos(W, {6: 1, 3: 1}, {1: 15})
    assert notations(p, (5, 4)) == {"6/1 3/off", "6/2 3/off"}
    builder = TurnBuilder(p, (5, 4))
    with pytest.raises(IllegalPlay, match="higher point"):
        builder.step(3, OFF)


def test_moving_inside_home_instead_of_bearing_off():
    """§4.5/§8: bearing off is never forced while a move inside home is legal: with 6-5
    the 5 may bear off from 5 or move 6/1."""
    p = pos(W, {6: 2, 5: 2}, {1: 15})
    assert notations(p, (6, 5)) == {"6/off 6/1", "6/off 5/off"}
    assert moved(p, (5, 5), "6/1(2) 5/off(2)").borne_off(W) == p.borne_off(W) + 2


def test_bear_off_becomes_possible_mid_turn():
    """§4.1: the step that brings the last checker home lets the next step bear off."""
    p = pos(W, {8: 1, 6: 4, 5: 10}, {1: 15})
    end = moved(p, (2, 6), "8/6 6/off")
    assert end.borne_off(W) == 1
    builder = TurnBuilder(p, (6, 2))
    with pytest.raises(IllegalPlay, match="all 15 checkers are home"):
        builder.step(6, OFF)
    # a checker entering from the bar is not home: no bear-off after it enters
    q = pos(W, {6: 14}, {13: 15}, bar=(1, 0))
    assert all(s.dst != OFF for p_ in legal_plays(q, (6, 6)) for s in p_.steps)


def test_bearing_off_the_last_checker_ends_the_game_and_the_other_dice_lapse():
    """§4.6: the 15th checker off ends the turn and the game; the dice left lapse."""
    p = pos(W, {2: 1}, {1: 15})
    [play] = legal_plays(p, (6, 6))
    assert play.notation() == "2/off" and play.end.winner is W
    # §3.6: both dice can be played (5/4 4/off), so the play counts both; 5/off with the
    # 6 alone ends in the same position, so it is the same play (§3.7)
    p = pos(W, {5: 1}, {1: 15})
    [play] = legal_plays(p, (6, 1))
    assert play.notation() == "5/4 4/off" and play.end.winner is W
    assert moved(p, (6, 1), "5/off") == play.end


def test_the_last_checker_hits_on_the_way_off_when_both_dice_can_be_played():
    """§3.6 with §4.6 and §8: a game ended with one die counts one die, so when another
    play uses both (5/1* 1/off) the last checker must hit on its way off; bearing it off
    with the 6 alone is not legal. Found against GNU Backgammon (tools/short_oracle.py)."""
    p = pos(W, {5: 1}, {24: 1, 6: 14})  # a black blot on white's 1 point
    [play] = legal_plays(p, (6, 4))
    assert play.notation() == "5/1* 1/off"
    assert play.end.winner is W and play.end.on_bar(B) == 1
    assert moved(p, (6, 4), "5/1*/off") == play.end
    builder = TurnBuilder(p, (6, 4))
    assert builder.legal_steps() == [Step(5, 1, 4, True)]  # not 5/off with the 6
    # so a written 5/off can only be read as the checker using both dice, hitting
    assert builder.step(5, OFF) == list(play.steps) and builder.play() == play


def test_a_double_bears_off_from_the_highest_point_each_time():
    """§4.4: every six bears off the then highest checker."""
    p = pos(W, {5: 1, 4: 1, 3: 1, 2: 1, 1: 1}, {1: 15})
    assert notations(p, (6, 6)) == {"5/off 4/off 3/off 2/off"}


# -- notation (§9) ------------------------------------------------------------------------


def test_notation_reads_bar_hits_off_and_shorthands():
    """§9/§1: bar/22, 13/7*, 6/off, chains, repeats; * is optional on reading."""
    assert parse_moves("bar/22 13/7* 6/off") == [(25, 22, False), (13, 7, True), (6, 0, False)]
    assert parse_moves("24/18*/13") == [(24, 18, True), (18, 13, False)]
    assert parse_moves("8/5(2)") == [(8, 5, False), (8, 5, False)]
    assert parse_moves("BAR/20*(2)") == [(25, 20, True), (25, 20, True)]
    assert parse_moves("-") == []
    for bad in [
        "13-7",
        "7/13",
        "bar",
        "0/off",
        "26/20",
        "13/7(5)",
        "off/3",
        "bar/off",
        "1\uff13/7",
    ]:
        with pytest.raises(NotationError):
            parse_moves(bad)


def test_match_play_refuses_with_the_rule():
    start = Position.start()
    with pytest.raises(IllegalPlay, match="closed"):
        match_play(start, (6, 5), "13/7 6/1")
    with pytest.raises(IllegalPlay, match="a legal play uses 2"):
        match_play(start, (6, 5), "13/7")
    with pytest.raises(IllegalPlay, match="no checker"):
        match_play(start, (6, 5), "12/6 13/8")


def test_ambiguous_shorthand_is_settled_by_the_marks_or_refused():
    """§9: 24/13 with 6-5 through a blot on 18 or an open 19 ends in two positions: the
    written * decides (24/18*/13 hits, 24/13 does not), as backgammon programs write it."""
    p = pos(W, {24: 1, 6: 14}, {7: 1, 24: 14})  # black blot on its 7 = white's 18
    hit = match_play(p, (6, 5), "24/18*/13")
    quiet = match_play(p, (6, 5), "24/13")
    assert hit.end.on_bar(B) == 1 and quiet.end.on_bar(B) == 0
    assert quiet.notation() == "24/19 19/13"
    # both ways hit a blot on 13: the * there is optional, the unwritten 18 is not hit
    q = pos(W, {24: 1, 6: 14}, {7: 1, 12: 1, 24: 13})
    assert match_play(q, (6, 5), "24/13").notation() == "24/19 19/13*"
    assert match_play(q, (6, 5), "24/18*/13").notation() == "24/18* 18/13*"
    # blots on 18 and 19: 24/13 hits one of them either way, so it must be written out
    r = pos(W, {24: 1, 6: 14}, {7: 1, 6: 1, 24: 13})
    with pytest.raises(IllegalPlay, match="ambiguous"):
        match_play(r, (6, 5), "24/13")
    assert match_play(r, (6, 5), "24/19*/13").end.on_bar(B) == 1


# -- results (§8) -------------------------------------------------------------------------


def test_single_gammon_and_backgammon():
    """§8: 1 point; 2 if the loser bore off none; 3 if also a checker on the bar or in the
    winner's home (the loser's points 19..24)."""
    single = pos(B, {}, {6: 14})
    assert result(single) == result(single) and result(single).kind is Kind.SINGLE
    assert result(single).points == 1 and result(single).winner is W
    gammon = pos(B, {}, {18: 15})
    assert result(gammon).kind is Kind.GAMMON and result(gammon).points == 2
    in_home = pos(B, {}, {19: 1, 6: 14})
    assert result(in_home).kind is Kind.BACKGAMMON and result(in_home).points == 3
    on_bar = pos(B, {}, {6: 14}, bar=(0, 1))
    assert result(on_bar).kind is Kind.BACKGAMMON
    assert result(Position.start()) is None
    black_wins = pos(W, {24: 15}, {})
    assert result(black_wins).winner is B and result(black_wins).kind is Kind.BACKGAMMON
    assert result(pos(W, {1: 1}, {})).kind is Kind.SINGLE


@pytest.mark.parametrize(
    "why", [Termination.TIMEOUT, Termination.RESIGNATION, Termination.ABANDONMENT]
)
def test_forfeits_score_two_when_the_loser_bore_off_nothing(why):
    """§8 (as §5): timeout, resignation, abandonment: 2 if the loser bore off none, else 1;
    never a backgammon, even with checkers on the bar."""
    start = Position.start()
    r = forfeit(start, W, why)
    assert r.winner is B and r.kind is Kind.GAMMON and r.points == 2 and r.termination is why
    some_off = pos(W, {6: 14}, {1: 15}, bar=(0, 0))
    assert forfeit(some_off, W, why).points == 1
    on_bar = pos(W, {6: 14}, {6: 14}, bar=(0, 1))
    assert forfeit(on_bar, B, why).kind is Kind.GAMMON


def test_bearing_off_early_is_refused_for_that_reason_whatever_the_dice():
    """§4.1: with a checker outside the home, `6/off` is refused because not all are home,
    not for a point the dice would pass on the way (it said "point 1 is closed")."""
    p = pos(W, {9: 1, 6: 14}, {24: 2, 13: 13})  # black holds white's point 1
    with pytest.raises(IllegalPlay, match=r"6/off: cannot bear off until all 15 checkers are home"):
        match_play(p, (5, 1), "6/off")
    builder = TurnBuilder(p, (5, 1))
    with pytest.raises(IllegalPlay, match=r"all 15 checkers are home \(RULES §4.1\)"):
        builder.step(6, OFF)
