"""Engines playing each other in-process (no gRPC): one game, duplicate pairs, statistics.

Used by the strength bench (``python -m bench strength``) and by training's periodic
evaluation (``python -m engines.train``).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

from nardy import Color
from nardy.match import Opening
from nardy.stats import Z95, wilson
from nardy.variant import Variant, variant


@dataclass
class GameRecord:
    """One finished game: who won what, and the time each engine spent."""

    white: str
    black: str
    winner: Color
    points: int
    turns: int
    think: dict[str, float] = field(default_factory=dict)  # seconds per engine name
    moves: dict[str, int] = field(default_factory=dict)  # decisions per engine name


def play_game(
    white, black, dice_seed: int, *, max_turns: int = 2000, rules: Variant | None = None
) -> GameRecord:
    """Play one game of ``rules`` (long nardy unless told) between two engine objects;
    turn ``i`` uses the ``i``-th roll of the sequence seeded by ``dice_seed`` (so two games
    with one seed have the same dice). Where the variant's opening dice are white's first
    roll (short nardy, RULES.md §8) a double is thrown again for the first turn."""
    rules = rules or variant("long")
    rng = random.Random(dice_seed)
    opening = rules.default_opening is Opening.USE_OPENING_DICE
    pos = rules.start()
    engines = {Color.WHITE: white, Color.BLACK: black}
    names = {Color.WHITE: f"white:{white.name}", Color.BLACK: f"black:{black.name}"}
    think = {n: 0.0 for n in names.values()}
    moves = {n: 0 for n in names.values()}
    turns = 0
    while rules.result(pos) is None:
        if turns >= max_turns:
            raise RuntimeError(f"game with seed {dice_seed} did not finish")
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        while opening and turns == 0 and dice[0] == dice[1]:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
        turns += 1
        plays = rules.legal_plays(pos, dice)
        if not plays:
            pos = rules.passed(pos)
            continue
        name = names[pos.turn]
        t0 = time.perf_counter()
        play = engines[pos.turn].choose(pos, dice, plays)
        think[name] += time.perf_counter() - t0
        moves[name] += 1
        if play not in plays:
            raise RuntimeError(f"{name} returned a play that is not legal")
        pos = play.end
    res = rules.result(pos)
    return GameRecord(white.name, black.name, res.winner, res.points, turns, think, moves)


# -- statistics ---------------------------------------------------------------------------


def mean_ci(xs: list[float], z: float = Z95) -> tuple[float, float, float]:
    """Mean and normal-approximation interval of independent samples."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, m, m
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = z * sd / math.sqrt(n)
    return m, m - h, m + h


def rate_ci(pair_rates: list[float]) -> tuple[float, float, float]:
    """The win rate over duplicate pairs (each pair's 0, 1/2 or 1) and its interval: the
    normal one over the pairs, within [0, 1]; Wilson's over the games where the pairs do
    not vary (a sweep, a single pair), whose spread says nothing."""
    m, lo, hi = mean_ci(pair_rates)
    if hi - lo <= 0:
        lo, hi = wilson(round(2 * sum(pair_rates)), 2 * len(pair_rates))
    return m, max(lo, 0.0), min(hi, 1.0)


def pair_score(a, b, dice_seed: int) -> tuple[float, float]:
    """A duplicate pair between engine objects ``a`` and ``b``: the same dice with the
    colours swapped. Returns ``a``'s (wins, net points) over the two games, halved."""
    wins = points = 0.0
    for white, black in ((a, b), (b, a)):
        g = play_game(white, black, dice_seed)
        won = (g.winner is Color.WHITE) == (white is a)
        wins += won
        points += g.points if won else -g.points
    return wins / 2, points / 2
