"""The "random" engine: a uniformly random legal play (seedable)."""

from __future__ import annotations

import random

from engines.base import Engine, Play, Position
from nardy.variant import Variant


class RandomEngine(Engine):
    """Picks one of the legal plays uniformly at random."""

    name = "random"

    def __init__(
        self, seed: int | None = None, level: int | None = None, rules: Variant | None = None
    ) -> None:
        super().__init__(rules=rules)
        self.rng = random.Random(seed)

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        return self.rng.choice(plays)
