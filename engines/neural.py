"""The "network" engine: the trained value network (engines/network.py) with search and levels,
for long and short nardy (each with its own network: engines/features.py).

* **0-ply**: every legal play's end position is judged by the network in one batch.
* **1-ply** (full strength): the 0-ply pass prunes the candidates to the best ``k`` within
  ``margin`` points of the best; each survivor is then judged by the average over the
  opponent's 21 rolls of the opponent's best reply (:func:`engines.network.lookahead`).
  Candidates are searched in 0-ply order; when the time budget (a third of the turn's time
  left, at most ``max_seconds``) runs out, the best of the fully searched candidates is
  played (when at least two were), else the 0-ply choice.
* **2-ply on close calls** (full strength): the best ``k2`` 1-ply candidates within
  ``margin2`` points of the 1-ply best are searched again two rolls deep
  (``lookahead(..., depth=2)``: each opponent roll's best reply, then the average over our
  21 rolls of our best answer), in 1-ply order while the budget lasts; the best of them at
  2 ply is played when at least two were searched, else the 1-ply choice.
* **Match play**: with the match score, plays are judged by match winning chances
  (:func:`match_outcomes`: a mars or gammon is worth no more than a single game when one
  point wins the match), else by points.
* **Levels** 0..3: 3 is full strength, 2 plays the network's 0-ply choice, and the lower
  levels slip like a person: their judgement gets noise and now and then they take the
  second or third choice when it looks close.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np

from engines import bearoff
from engines.base import Engine, Play, Position
from engines.evaluate import match_winning_chance
from engines.network import Network, equity, lookahead, shipped
from nardy.variant import Variant

SAFETY_MS = 50  # kept back from the time budget for messaging
JUDGE_K = 8  # analysis deeper than 0 ply: the candidates searched ...
JUDGE_MARGIN = 0.3  # ... within this many points of the 0-ply best


@dataclass(frozen=True)
class Level:
    ply: int  # 0: the network alone; 1: one roll of lookahead
    k: int  # candidates searched at 1 ply
    margin: float  # ... within this many points of the 0-ply best
    k2: int  # 1-ply candidates then searched at 2 ply (0: none) ...
    margin2: float  # ... within this many points of the 1-ply best
    noise: float  # standard deviation (points) of the noise added to each play's equity
    slip: float  # chance of taking the 2nd or 3rd choice ...
    slip_margin: float  # ... when it is within this many points of the best


LEVELS: dict[int, Level] = {
    0: Level(0, 1, 0.0, 0, 0.0, noise=0.30, slip=0.30, slip_margin=0.40),
    1: Level(0, 1, 0.0, 0, 0.0, noise=0.10, slip=0.12, slip_margin=0.15),
    2: Level(0, 1, 0.0, 0, 0.0, noise=0.0, slip=0.0, slip_margin=0.0),
    3: Level(1, 8, 0.30, 5, 0.16, noise=0.0, slip=0.0, slip_margin=0.0),
}
FULL = 3
#: The level ``nardy play`` offers a newcomer: it slips often enough to be beaten.
BEGINNER = 0


class NetworkEngine(Engine):
    """The value network with a 0-ply pruning pass and 1-ply lookahead; see the module doc."""

    name = "network"
    #: The depths :meth:`judge` searches (analysis: ``nardy analyse --ply``).
    judge_plies = (0, 1, 2)
    judge_in_points = True

    def __init__(
        self,
        level: int | None = None,
        seed: int | None = None,
        *,
        network: Network | None = None,
        max_seconds: float | None = 0.9,
        rules: Variant | None = None,
    ) -> None:
        level = FULL if level is None else level
        if level not in LEVELS:
            raise ValueError(f"level must be 0..{FULL}, not {level}")
        if rules is None and network is not None:
            rules = network.features.rules
        super().__init__(rules=rules)
        self.level = level
        self.params = LEVELS[level]
        self.given = network  # None: the shipped network of the variant of the game
        self.net = self._network()
        self.max_seconds = max_seconds
        #: the search's clock (seconds): read for the deadline and the searches' costs
        self.clock = time.perf_counter
        self.rng = random.Random(seed)
        self.timeouts = 0  # searches cut short by the clock
        self.deepened = 0  # choices made at 2 ply

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        if self.net.variant != self.rules.name:  # a game of another variant than the last
            self.net = self._network()
        budget = self.max_seconds
        if time_left_ms is not None:
            t = max(0.0, (time_left_ms / 3 - SAFETY_MS) / 1000)
            budget = t if budget is None else min(budget, t)
        deadline = None if budget is None else self.clock() + budget
        p = self.params
        values = match_outcomes(match, self.net.features.kinds)
        eq0 = equity(self.net.after(plays), values)
        order = np.argsort(-eq0, kind="stable")
        scores = {int(i): float(eq0[i]) for i in order}
        if p.ply >= 1:
            deep, cost = self._search(plays, scores, p.k, p.margin, 1, deadline, values)
            if deep is not None:
                scores = deep
                # two rolls deep: up to 21 more one-roll searches, one per reply
                deeper, _ = self._search(
                    plays, deep, p.k2, p.margin2, 2, deadline, values, cost * 22
                )
                if deeper is not None:
                    self.deepened += 1
                    scores = deeper
        return plays[self._choose(scores)]

    def judge(
        self, position: Position, dice: tuple[int, int], plays: list[Play], played: int, ply: int
    ) -> dict[int, float]:
        """Money equity (points, for the side to move) of plays, for analysis: every play
        at 0 ply; deeper, the best :data:`JUDGE_K` within :data:`JUDGE_MARGIN` points of
        the best at 0 ply and always ``plays[played]``, each looking ``ply`` rolls ahead."""
        eq0 = equity(self.net.after(plays))
        if ply == 0:
            return {i: float(v) for i, v in enumerate(eq0)}
        order = [int(i) for i in np.argsort(-eq0, kind="stable")]
        close = [i for i in order[:JUDGE_K] if eq0[i] >= eq0[order[0]] - JUDGE_MARGIN]
        return {
            i: float(equity(lookahead(self.net, plays[i].end, depth=ply)))
            for i in dict.fromkeys([*close, played])
        }

    def _network(self) -> Network:
        net = self.given or shipped(self.rules.name)
        if net.variant != self.rules.name:
            raise ValueError(f"a {net.variant} nardy network cannot play {self.rules.name} nardy")
        if net.bearoff:
            bearoff.table()  # loaded now, not in the first bear-off's time
        return net

    def _search(
        self,
        plays: list[Play],
        scores: dict[int, float],
        k: int,
        margin: float,
        depth: int,
        deadline: float | None,
        values,
        cost: float = 0.0,
    ) -> tuple[dict[int, float] | None, float]:
        """The ``depth``-ply values of the best ``k`` plays by ``scores`` within ``margin``
        points of the best, searched best first while time lasts (None when fewer than two
        of them are close enough or could be searched), and the longest one took (s).

        A candidate is begun only if it is expected to end by the deadline: a search is
        cut short only between chunks, so one begun late would overrun the turn's budget.
        ``cost`` is the expected seconds of the first; each later one is expected to take
        as long as the longest so far."""
        ranked = sorted(scores, key=lambda i: -scores[i])
        close = [i for i in ranked[:k] if scores[i] >= scores[ranked[0]] - margin]
        if len(close) < 2:
            return None, cost
        out: dict[int, float] = {}
        for i in close:
            start = self.clock()
            if deadline is not None and start + cost > deadline:
                self.timeouts += 1
                break
            v = lookahead(self.net, plays[i].end, deadline, depth=depth, clock=self.clock)
            if v is None:
                self.timeouts += 1
                break
            cost = max(cost, self.clock() - start)
            out[i] = float(equity(v, values))
        return (out if len(out) >= 2 else None), cost

    def _choose(self, scores: dict[int, float]) -> int:
        p = self.params
        ranked = [
            (v + (self.rng.gauss(0.0, p.noise) if p.noise else 0.0), i) for i, v in scores.items()
        ]
        ranked.sort(key=lambda x: -x[0])
        if p.slip and len(ranked) > 1 and self.rng.random() < p.slip:
            close = [x for x in ranked[1:3] if x[0] >= ranked[0][0] - p.slip_margin]
            if close:
                return self.rng.choice(close)[1]
        return ranked[0][1]


def match_outcomes(
    match: tuple[int, int, int] | None, kinds: int
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """What winning and losing by each of ``kinds`` kinds (1..kinds points) is worth in
    match winning chances at ``(target, my points, their points)``, rescaled so that a
    single game is worth about 1 (:func:`engines.evaluate.match_winning_chance`'s table);
    None for money play (points)."""
    if match is None or match[0] <= 0:
        return None
    target, mine, theirs = match
    need, opp = max(target - mine, 1), max(target - theirs, 1)
    wins = [match_winning_chance(need - k, opp) for k in range(1, kinds + 1)]
    losses = [match_winning_chance(need, opp - k) for k in range(1, kinds + 1)]
    mid, half = (wins[0] + losses[0]) / 2, (wins[0] - losses[0]) / 2 or 1.0
    return tuple((w - mid) / half for w in wins), tuple((w - mid) / half for w in losses)
