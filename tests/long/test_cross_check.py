"""Seeded cross-check of :func:`nardy.legal_plays` against the reference generator.

Positions come from random self-play games from the start (every position met, with its
dice) and from random valid positions of every kind in ``tests/long/reference.py``: scattered,
bear-off (§4), nearly home (§4.1 mid-turn), checkers on the head (§3.4) and six-point
windows (§3.5). Both generators must give the same set of end positions (§3.7).
"""

from __future__ import annotations

import random

import pytest

from nardy import Position, legal_plays
from tests.crosscheck import CrossCheck, report
from tests.long.reference import KINDS, random_dice, random_position, reference_plays

SEED = 1234
SELF_PLAY = 3000  # positions recorded from random games
RANDOM = 5000  # random valid positions (1000 of each kind)

CHECK = CrossCheck(
    Position.start, legal_plays, reference_plays, random_position, random_dice, KINDS
)


@pytest.mark.slow
def test_cross_check_self_play():
    cases = CHECK.self_play_cases(random.Random(SEED), SELF_PLAY)
    assert len(cases) == SELF_PLAY
    bad = CHECK.mismatches(cases)
    assert not bad, report(bad, len(cases))


@pytest.mark.slow
def test_cross_check_random_valid_positions():
    cases = CHECK.random_cases(random.Random(SEED), RANDOM)
    assert len(cases) == RANDOM
    bear_off = [pos for pos, _ in cases if not any(pos.count(pos.turn, p) for p in range(7, 25))]
    assert len(bear_off) >= RANDOM // len(KINDS)  # §4 positions are well represented
    bad = CHECK.mismatches(cases)
    assert not bad, report(bad, len(cases))
