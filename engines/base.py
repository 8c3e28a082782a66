"""What every bundled engine shares: the ``choose`` contract and its trivial cases."""

from __future__ import annotations

from nardy import Play, Position


class Engine:
    """An engine picks one of a turn's legal plays. Subclasses implement :meth:`pick`,
    which is called only when there is a real choice (two plays or more)."""

    name = "engine"

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
