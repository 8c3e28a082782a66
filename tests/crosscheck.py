"""The seeded cross-check both variants' rules run (tests/long/test_cross_check.py,
tests/short/test_cross_check.py): cases from random self-play and random valid positions,
and the legal plays' end positions against a reference generator's (RULES.md §3.7)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

SHOW = 10  # mismatches printed in the assertion message

Case = tuple[Any, tuple[int, int]]  # a position and its dice


class CrossCheck:
    """One variant's generator (``legal_plays``) against its reference (``reference``:
    the set of end positions' texts), with the reference's random positions and dice."""

    def __init__(
        self,
        start: Callable[[], Any],
        legal_plays: Callable[[Any, tuple[int, int]], list],
        reference: Callable[[Any, tuple[int, int]], set[str]],
        random_position: Callable[[random.Random, str], Any],
        random_dice: Callable[[random.Random], tuple[int, int]],
        kinds: Sequence[str],
    ) -> None:
        self.start = start
        self.legal_plays = legal_plays
        self.reference = reference
        self.random_position = random_position
        self.random_dice = random_dice
        self.kinds = kinds

    def self_play_cases(self, rng: random.Random, n: int) -> list[Case]:
        """Every position of random games from the start, with its dice, ``n`` in all."""
        cases: list[Case] = []
        while len(cases) < n:
            pos = self.start()  # a new random game
            while pos.winner is None and len(cases) < n:
                dice = self.random_dice(rng)
                cases.append((pos, dice))
                plays = self.legal_plays(pos, dice)
                pos = rng.choice(plays).end if plays else pos.passed()
        return cases

    def random_cases(self, rng: random.Random, n: int) -> list[Case]:
        """``n`` random valid positions, the reference's kinds in turn, with dice."""
        kinds = self.kinds
        return [
            (self.random_position(rng, kinds[i % len(kinds)]), self.random_dice(rng))
            for i in range(n)
        ]

    def mismatches(self, cases: list[Case]) -> list[str]:
        bad = []
        for pos, dice in cases:
            got = {p.end.text() for p in self.legal_plays(pos, dice)}
            ref = self.reference(pos, dice)
            if got != ref:
                bad.append(
                    f"position {pos.text()} dice {dice[0]}-{dice[1]}:\n"
                    f"    only in legal_plays: {sorted(got - ref)}\n"
                    f"    only in reference:   {sorted(ref - got)}"
                )
        return bad


def report(bad: list[str], total: int) -> str:
    first = min(SHOW, len(bad))
    return f"{len(bad)} of {total} cases differ; first {first}:\n" + "\n".join(bad[:SHOW])
