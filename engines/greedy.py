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


def values_long(rules: Variant, position: Position, plays: list[Play], match) -> list[float]:
    """Long nardy's values by :mod:`engines.evaluate`: equities in points (match-aware)."""
    return evaluate_ends(plays, position.turn, values_for(match))


def values_short(rules: Variant, position: Position, plays: list[Play], match) -> list[float]:
    """Short nardy's values by :mod:`engines.evaluate_short`: scores, not equities."""
    mover = position.turn
    return [evaluate_short.evaluate(rules, p.end, mover) for p in plays]


# The evaluation for each variant greedy plays (engines/registry.py lists the same ones),
# and whether its values are equities in points (analysis marks only those).
BEST = {"long": (values_long, True), "short": (values_short, False)}


class GreedyEngine(Engine):
    """Evaluates the end position of every legal play and takes the best, by its
    variant's evaluation (:data:`BEST`)."""

    name = "greedy"
    judge_plies = (0,)  # analysis: its evaluation, one ply

    @property
    def judge_in_points(self) -> bool:
        """Whether its variant's evaluation is an equity in points (:data:`BEST`)."""
        return BEST[self.rules.name][1]

    def __init__(
        self, seed: int | None = None, level: int | None = None, rules: Variant | None = None
    ) -> None:
        super().__init__(rules=rules)

    def judge(
        self, position: Position, dice: tuple[int, int], plays: list[Play], played: int, ply: int
    ) -> dict[int, float]:
        """Every play's value by the evaluation, for the side to move (analysis)."""
        return dict(enumerate(self._values(position, plays, None)))

    def _values(self, position: Position, plays: list[Play], match) -> list[float]:
        return BEST[self.rules.name][0](self.rules, position, plays, match)

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        scores = self._values(position, plays, match)
        return plays[max(range(len(plays)), key=lambda i: (scores[i], -i))]
