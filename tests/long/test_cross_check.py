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
from tests.long.reference import KINDS, random_dice, random_position, reference_plays

SEED = 1234
SELF_PLAY = 3000  # positions recorded from random games
RANDOM = 5000  # random valid positions (1000 of each kind)
SHOW = 10  # mismatches printed in the assertion message


def self_play_cases(rng: random.Random, n: int) -> list[tuple[Position, tuple[int, int]]]:
    cases: list[tuple[Position, tuple[int, int]]] = []
    while len(cases) < n:
        pos = Position.start()  # a new random game
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
        ref = reference_plays(pos, dice)
        if got != ref:
            bad.append(
                f"position {pos.text()} dice {dice[0]}-{dice[1]}:\n"
                f"    only in legal_plays: {sorted(got - ref)}\n"
                f"    only in reference:   {sorted(ref - got)}"
            )
    return bad


def report(bad: list[str], total: int) -> str:
    return f"{len(bad)} of {total} positions differ; first {min(SHOW, len(bad))}:\n" + "\n".join(
        bad[:SHOW]
    )


@pytest.mark.slow
def test_cross_check_self_play():
    cases = self_play_cases(random.Random(SEED), SELF_PLAY)
    assert len(cases) == SELF_PLAY
    bad = mismatches(cases)
    assert not bad, report(bad, len(cases))


@pytest.mark.slow
def test_cross_check_random_valid_positions():
    cases = random_cases(random.Random(SEED), RANDOM)
    assert len(cases) == RANDOM
    bear_off = [pos for pos, _ in cases if not any(pos.count(pos.turn, p) for p in range(7, 25))]
    assert len(bear_off) >= RANDOM // len(KINDS)  # §4 positions are well represented
    bad = mismatches(cases)
    assert not bad, report(bad, len(cases))
