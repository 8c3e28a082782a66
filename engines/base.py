"""What every bundled engine shares: the ``choose`` contract and its trivial cases."""

from __future__ import annotations

from typing import Any

from nardy.match import DEFAULT_VARIANT
from nardy.variant import Variant, variant

Play = Any  # a play of the engine's variant (nardy.variant.GamePlay)
Position = Any  # a position of the engine's variant (nardy.variant.GamePosition)


class Engine:
    """An engine picks one of a turn's legal plays. Subclasses implement :meth:`pick`,
    which is called only when there is a real choice (two plays or more).

    ``rules`` is the variant the engine plays (the default variant unless told otherwise);
    ``variants`` the names of those it can play (the registry sets them from its list)."""

    name = "engine"
    variants: tuple[str, ...] = (DEFAULT_VARIANT,)  # also for subclasses that skip __init__

    def __init__(self, *, rules: Variant | None = None) -> None:
        self.rules = rules or variant(DEFAULT_VARIANT)
        self.variants = (self.rules.name,)

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
        if len(plays) == 1:
            return plays[0]  # a forced play: no thinking
        return self.pick(position, dice, plays, time_left_ms=time_left_ms, match=match)

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        raise NotImplementedError
