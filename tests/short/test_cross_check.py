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

from .naive import KINDS, naive_plays, random_dice, random_position

SEED = 2026
SELF_PLAY = 2000
RANDOM = 3000  # 600 of each kind
SHOW = 10


def self_play_cases(rng: random.Random, n: int) -> list[tuple[Position, tuple[int, int]]]:
    cases: list[tuple[Position, tuple[int, int]]] = []
    while len(cases) < n:
        pos = Position.start()
        while pos.winner is None and len(cases) < n:
            dice = random_dice(rng)
            cases.append((pos, dice))
            plays = legal_plays(pos, dice)
            pos = rng.choice(plays).end if plays else pos.passed()
    return cases


def random_cases(rng: random.Random, n: int) -> list[tuple[Position, tuple[int, int]]]:
    return [(random_position(rng, KINDS[i % len(KINDS)]), random_dice(rng)) for i in range(n)]


def mismatches(cases) -> list[str]:
    bad = []
    for pos, dice in cases:
        got = {p.end.text() for p in legal_plays(pos, dice)}
        ref = naive_plays(pos, dice)
        if got != ref:
            bad.append(
                f"position {pos.text()} dice {dice[0]}-{dice[1]}:\n"
                f"    only in legal_plays: {sorted(got - ref)}\n"
                f"    only in naive:       {sorted(ref - got)}"
            )
    return bad


def report(bad: list[str], total: int) -> str:
    return f"{len(bad)} of {total} cases differ; first {min(SHOW, len(bad))}:\n" + "\n".join(
        bad[:SHOW]
    )


@pytest.mark.slow
def test_cross_check_self_play():
    cases = self_play_cases(random.Random(SEED), SELF_PLAY)
    assert len(cases) == SELF_PLAY
    assert sum(pos.bar != (0, 0) for pos, _ in cases) > SELF_PLAY // 20  # hits happen
    bad = mismatches(cases)
    assert not bad, report(bad, len(cases))


@pytest.mark.slow
def test_cross_check_random_valid_positions():
    cases = random_cases(random.Random(SEED), RANDOM)
    on_bar = [p for p, _ in cases if p.on_bar(p.turn)]
    bear_off = [p for p, _ in cases if not any(p.count(p.turn, q) for q in range(7, 26))]
    assert len(on_bar) >= RANDOM // 5 and len(bear_off) >= RANDOM // 10
    bad = mismatches(cases)
    assert not bad, report(bad, len(cases))
