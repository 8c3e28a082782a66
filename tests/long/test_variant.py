"""The one game API (nardy/variant.py): variants by name, options, and long nardy behind it."""

from __future__ import annotations

import pytest

from nardy import Color, GameOptions, Termination, variant
from nardy.variant import available

START = "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"


def test_long_nardy_is_the_default_variant():
    v = variant("")
    assert v is variant("long") and v.name == "long"
    assert "long" in available()
    assert v.start().text() == START
    assert v.parse(START) == v.start()


def test_an_unknown_variant_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown variant 'chess'; known: long"):
        variant("chess")


def test_koks_is_a_long_nardy_house_rule():
    v = variant("long")
    v.check(GameOptions(rules=frozenset({"koks"})))
    with pytest.raises(ValueError, match="no rule option crawford"):
        v.check(GameOptions(rules=frozenset({"crawford"})))


def test_long_nardy_through_the_variant():
    """§7: 6-5 from the start is 24/13 only; the board view counts borne-off checkers (§1)."""
    v = variant("long")
    plays = v.legal_plays(v.start(), (6, 5))
    assert [p.notation() for p in plays] == ["24/18 18/13"]
    assert v.match_play(v.start(), (6, 5), "24/13").end == plays[0].end
    board = v.board(plays[0].end)
    assert board.turn is Color.BLACK and board.bar == (0, 0) and board.off == (0, 0)
    assert board.points[11] == 1 and board.points[0] == 14
    assert v.passed(v.start()).turn is Color.BLACK
    assert v.point_index(Color.WHITE, 24) == 0 and v.point_index(Color.BLACK, 24) == 12
    r = v.forfeit(v.start(), Color.WHITE, Termination.TIMEOUT)
    assert (r.winner, str(r.kind), r.points) == (Color.BLACK, "mars", 2)  # §5
    assert v.kind("koks").points == 3
    with pytest.raises(ValueError, match="no result 'gammon'"):
        v.kind("gammon")
