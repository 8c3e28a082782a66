"""The "random" engine: a uniformly random legal play (seedable)."""

from __future__ import annotations

import random

from nardy import Play, Position


class RandomEngine:
    """Picks one of the legal plays uniformly at random."""

    name = "random"

    def __init__(self, seed: int | None = None, level: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None = None,
        match=None,
    ) -> Play:
        if not plays:
            raise ValueError("no legal play to choose from")
        return plays[0] if len(plays) == 1 else self.rng.choice(plays)
