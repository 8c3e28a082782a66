"""The "greedy" engine: 1-ply, the play whose end position evaluates best for the mover."""

from __future__ import annotations

from engines import evaluate_short
from engines.base import Engine, Play, Position
from engines.evaluate import Values, evaluate_ends, values_for
from nardy.variant import Variant


def rank(plays: list[Play], color, values: Values) -> list[tuple[float, int, Play]]:
    """``(equity, index, play)`` for every play, best first (ties keep the given order)."""
    scores = evaluate_ends(plays, color, values)
    scored = list(zip(scores, range(len(plays)), plays, strict=True))
    scored.sort(key=lambda x: (-x[0], x[1]))
    return scored


def best_long(rules: Variant, position: Position, plays: list[Play], match) -> Play:
    """Long nardy's best end by :mod:`engines.evaluate` (match-aware values)."""
    return rank(plays, position.turn, values_for(match))[0][2]


def best_short(rules: Variant, position: Position, plays: list[Play], match) -> Play:
    """Short nardy's best end by :mod:`engines.evaluate_short` (ties: the first)."""
    mover = position.turn
    scores = [evaluate_short.evaluate(rules, p.end, mover) for p in plays]
    return plays[max(range(len(plays)), key=lambda i: (scores[i], -i))]


# The evaluation for each variant greedy plays (engines/registry.py lists the same ones).
BEST = {"long": best_long, "short": best_short}


class GreedyEngine(Engine):
    """Evaluates the end position of every legal play and takes the best, by its
    variant's evaluation (:data:`BEST`)."""

    name = "greedy"

    def __init__(
        self, seed: int | None = None, level: int | None = None, rules: Variant | None = None
    ) -> None:
        super().__init__(rules=rules)

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        return BEST[self.rules.name](self.rules, position, plays, match)
