"""The "greedy" engine: 1-ply, the play whose end position evaluates best for the mover."""

from __future__ import annotations

from engines.base import Engine
from engines.evaluate import Values, evaluate, values_for
from nardy import Play, Position


def rank(plays: list[Play], color, values: Values) -> list[tuple[float, int, Play]]:
    """``(equity, index, play)`` for every play, best first (ties keep the given order)."""
    scored = [(evaluate(p.end, color, values), i, p) for i, p in enumerate(plays)]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return scored


class GreedyEngine(Engine):
    """Evaluates the end position of every legal play and takes the best."""

    name = "greedy"

    def __init__(self, seed: int | None = None, level: int | None = None) -> None:
        pass

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        return rank(plays, position.turn, values_for(match))[0][2]
