"""Seeded cross-check of :func:`nardy.short.legal_plays` against the naive reference.

Cases come from random self-play games from the start (every position met, with its
dice) and from random valid positions of every kind in ``tests/short/naive.py``:
scattered, checkers on the bar against closed points (§8), bear-off (§4), nearly home
(§4.1 mid-turn) and contact-heavy boards full of blots (hits, §8). Both generators must
give the same set of end positions (§3.7).
"""

from __future__ import annotations

import random

import pytest

from nardy.short.movegen import legal_plays
from nardy.short.position import Position
from tests.crosscheck import CrossCheck, report

from .naive import KINDS, naive_plays, random_dice, random_position

SEED = 2026
SELF_PLAY = 2000
RANDOM = 3000  # 600 of each kind

CHECK = CrossCheck(Position.start, legal_plays, naive_plays, random_position, random_dice, KINDS)


@pytest.mark.slow
def test_cross_check_self_play():
    cases = CHECK.self_play_cases(random.Random(SEED), SELF_PLAY)
    assert len(cases) == SELF_PLAY
    assert sum(pos.bar != (0, 0) for pos, _ in cases) > SELF_PLAY // 20  # hits happen
    bad = CHECK.mismatches(cases)
    assert not bad, report(bad, len(cases))


@pytest.mark.slow
def test_cross_check_random_valid_positions():
    cases = CHECK.random_cases(random.Random(SEED), RANDOM)
    on_bar = [p for p, _ in cases if p.on_bar(p.turn)]
    bear_off = [p for p, _ in cases if not any(p.count(p.turn, q) for q in range(7, 26))]
    assert len(on_bar) >= RANDOM // 5 and len(bear_off) >= RANDOM // 10
    bad = CHECK.mismatches(cases)
    assert not bad, report(bad, len(cases))
