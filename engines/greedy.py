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


class GreedyEngine(Engine):
    """Evaluates the end position of every legal play and takes the best: long nardy by
    :mod:`engines.evaluate`, short nardy by :mod:`engines.evaluate_short`."""

    name = "greedy"
    judge_plies = (0,)  # analysis: its evaluation, one ply

    @property
    def judge_in_points(self) -> bool:
        """Long nardy's evaluation is an equity in points; short nardy's a score."""
        return self.rules.name != "short"

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
        mover = position.turn
        if self.rules.name == "short":
            return [evaluate_short.evaluate(self.rules, p.end, mover) for p in plays]
        return evaluate_ends(plays, mover, values_for(match))

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
