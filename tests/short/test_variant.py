"""Short nardy through the one game API (nardy/variant.py), RULES.md §8-9."""

from __future__ import annotations

import pytest

from nardy import Color, GameOptions, Opening, Termination, variant
from nardy.variant import BAR, OFF, available

START = "w/2,0,0,0,0,-5,0,-3,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0"


def test_short_nardy_is_a_variant():
    v = variant("short")
    assert v.name == "short" and "short" in available()
    assert v.start().text() == START and v.parse(START) == v.start()
    assert v.default_opening is Opening.USE_OPENING_DICE  # §8: the opening throw is played
    v.check(GameOptions(variant="short"))
    with pytest.raises(ValueError, match="no rule option koks"):
        v.check(GameOptions(variant="short", rules=frozenset({"koks"})))


def test_plays_hits_and_the_board_view():
    """§8/§9: a hit puts the blot on the bar; the board view shows bar and off."""
    v = variant("short")
    p = v.parse("w/2,0,0,0,0,-5,-1,-2,0,0,0,5,-5,0,0,0,3,0,5,0,0,0,0,-2/0,0")
    play = v.match_play(p, (6, 5), "24/13")
    assert play.notation() == "24/18* 18/13" and play in v.legal_plays(p, (6, 5))
    board = v.board(play.end)
    assert board.turn is Color.BLACK and board.bar == (0, 1) and board.off == (0, 0)
    assert v.parse_moves("bar/22 13/7* 6/off") == [(BAR, 22), (13, 7), (6, OFF)]
    assert v.point_index(Color.WHITE, 24) == 0 and v.point_index(Color.BLACK, 24) == 23
    assert v.pips(v.start(), Color.WHITE) == v.pips(v.start(), Color.BLACK) == 167


def test_turn_builder_and_results():
    v = variant("short")
    builder = v.turn_builder(v.start(), (3, 1))
    builder.step(8, 5)
    builder.step(6, 5)
    assert builder.complete and builder.play().end.count(Color.WHITE, 5) == 2
    assert v.result(v.start()) is None
    r = v.forfeit(v.start(), Color.BLACK, Termination.RESIGNATION)
    assert (r.winner, str(r.kind), r.points) == (Color.WHITE, "gammon", 2)  # §8
    assert v.kind("backgammon").points == 3 and v.kind("single").points == 1
    with pytest.raises(ValueError, match="no result 'mars'"):
        v.kind("mars")
