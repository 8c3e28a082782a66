"""What every bundled engine shares: the ``choose`` contract and its trivial cases."""

from __future__ import annotations

from typing import Any

from nardy.match import DEFAULT_VARIANT
from nardy.variant import Variant, variant

Play = Any  # a play of the engine's variant (nardy.variant.GamePlay)
Position = Any  # a position of the engine's variant (nardy.variant.GamePosition)


class Unavailable(RuntimeError):
    """An engine that cannot run here: a program it needs is missing or does not start."""


class Engine:
    """An engine picks one of a turn's legal plays. Subclasses implement :meth:`pick`,
    which is called only when there is a real choice (two plays or more).

    ``rules`` is the variant the engine plays (the default variant unless told otherwise);
    ``variants`` the names of those it can play (the registry sets them from its list)."""

    name = "engine"
    #: The shortest turn time it accepts a challenge for (``nardy engine --accept-challenges``):
    #: every bundled engine but gnubg's deeper plies chooses well within it (the network at
    #: full strength: a mean of about 30 ms a move, the longest seen under 0.3 s;
    #: docs/ENGINES.md), and the searches take a third of the time left, whatever it is.
    turn_time_floor_ms = 1000
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

    def summary(self) -> str:
        """A line on what the engine did, for its log when it stops ("" for nothing)."""
        return ""

    def close(self) -> None:
        """Release what the engine holds (a process of its own); nothing by default."""

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
