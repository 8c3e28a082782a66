"""The "expectimax" engine: a 2-ply search over the opponent's rolls and best replies.

For each candidate play (the best few by the 1-ply evaluation) the engine averages, over
the opponent's 21 distinct rolls (each non-double 2/36, each double 1/36), the value of
the opponent's best reply by the evaluation (the reply that is worst for us: the match
is zero-sum). The candidate with the best average is played.

* Ordering and pruning: candidates are searched in 1-ply order; only the top ``k`` that
  are within ``margin`` of the 1-ply best are searched at all.
* Time: the search never plans to use more than a third of ``time_left_ms`` (less a
  safety margin); when it runs out it plays the best fully searched candidate, or the
  1-ply (greedy) choice when none was finished.
* Strength levels 0..3: level 3 is full strength. Lower levels search fewer candidates
  (level 0 only 1 ply) and, like a real player, sometimes slip: their scores get noise,
  and now and then they take the 2nd or 3rd best play when it is close.
* Match awareness: the evaluation's outcome values come from the match score, so mars
  (2 points) counts as much as it is worth in the match.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from engines.base import Engine
from engines.evaluate import evaluate, values_for, worst_end
from engines.greedy import rank
from nardy import Play, Position, legal_plays

#: The 21 distinct rolls and their probabilities.
ROLLS: tuple[tuple[tuple[int, int], float], ...] = tuple(
    ((a, b), (1 if a == b else 2) / 36) for a in range(6, 0, -1) for b in range(a, 0, -1)
)

SAFETY_MS = 50  # kept back from the time budget for messaging


@dataclass(frozen=True)
class Level:
    k: int  # candidates searched at 2 ply (1: no search)
    margin: float  # ... and only those within this equity of the 1-ply best
    noise: float  # standard deviation of the noise added to final scores
    slip: float  # chance of taking the 2nd or 3rd best play ...
    slip_margin: float  # ... when it is within this equity of the best


LEVELS: dict[int, Level] = {
    0: Level(k=1, margin=0.0, noise=0.12, slip=0.25, slip_margin=0.25),
    1: Level(k=3, margin=0.20, noise=0.04, slip=0.12, slip_margin=0.12),
    2: Level(k=5, margin=0.25, noise=0.01, slip=0.04, slip_margin=0.05),
    3: Level(k=8, margin=0.30, noise=0.0, slip=0.0, slip_margin=0.0),
}
FULL = 3


class ExpectimaxEngine(Engine):
    """2-ply expectimax over the evaluation; see the module docstring."""

    name = "expectimax"

    def __init__(
        self,
        level: int | None = None,
        seed: int | None = None,
        *,
        k: int | None = None,
        max_seconds: float | None = None,
    ) -> None:
        level = FULL if level is None else level
        if level not in LEVELS:
            raise ValueError(f"level must be 0..{FULL}, not {level}")
        self.level = level
        self.params = LEVELS[level]
        self.k = self.params.k if k is None else k
        self.max_seconds = max_seconds
        self.rng = random.Random(seed)
        self.timeouts = 0  # searches cut short by the clock

    # -- the search ---------------------------------------------------------------------
    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        start = time.perf_counter()
        budget = self.max_seconds
        if time_left_ms is not None:
            t = max(0.0, (time_left_ms / 3 - SAFETY_MS) / 1000)
            budget = t if budget is None else min(budget, t)
        deadline = None if budget is None else start + budget
        color = position.turn
        values = values_for(match)
        ranked = rank(plays, color, values)
        best1 = ranked[0][0]
        cands = [r for r in ranked[: self.k] if r[0] >= best1 - self.params.margin]
        scored: list[tuple[float, int, Play]] = []
        if len(cands) > 1:
            for _, i, play in cands:
                v = self.expected(play.end, color, values, deadline)
                if v is None:
                    self.timeouts += 1
                    break
                scored.append((v, i, play))
        if len(scored) < 2:
            scored = [(v, i, p) for v, i, p in ranked[: max(3, len(scored))]]
        return self._pick(scored)

    def expected(self, end: Position, color, values, deadline: float | None) -> float | None:
        """The average over the opponent's rolls of its best reply's value to ``color``
        (None when the deadline passes first)."""
        if end.winner is not None:
            return evaluate(end, color, values)
        total = 0.0
        for roll, weight in ROLLS:
            if deadline is not None and time.perf_counter() > deadline:
                return None
            replies = legal_plays(end, roll)
            if replies:
                worst = worst_end(replies, color, values)
            else:
                worst = evaluate(end.passed(), color, values)
            total += weight * worst
        return total

    def _pick(self, scored: list[tuple[float, int, Play]]) -> Play:
        p = self.params
        if p.noise:
            scored = [(v + self.rng.gauss(0.0, p.noise), i, play) for v, i, play in scored]
        scored.sort(key=lambda x: (-x[0], x[1]))
        if p.slip and len(scored) > 1 and self.rng.random() < p.slip:
            close = [x for x in scored[1:3] if x[0] >= scored[0][0] - p.slip_margin]
            if close:
                return self.rng.choice(close)[2]
        return scored[0][2]
