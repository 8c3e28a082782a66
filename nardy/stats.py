"""Statistics of bot-vs-bot ladders: Elo with error bars, a pair-based SPRT, Bayesian ratings.

Anchors: fastchess / cutechess-cli (logistic Elo, normal-approximation error bars, LOS, the
generalized SPRT on pentanomial game pairs) and BASIL / Halite (OpenSkill ratings ranked by the
conservative estimate mu - 3 sigma).

Games are played in duplicate-dice pairs: the same dice sequence twice with colours swapped. A
pair's result for engine A is how many of its two games A won (0, 1 or 2; nardy has no draws),
so a match is summarised by trinomial counts ``(n0, n1, n2)`` -- the pair analogue of fastchess's
pentanomial counts. Game scores are 1/0 per game, whether the win was oin or mars. The two games
of a pair are correlated (the dice favour a seat, not a player, so splits are common), which is
why pair-based variance gives honest -- usually narrower -- error bars than treating the games
as independent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from openskill.models import PlackettLuce, PlackettLuceRating

__all__ = [
    "MAX_ELO",
    "SCORE_EPS",
    "Z95",
    "EloEstimate",
    "SkillTable",
    "SprtState",
    "elo_from_score",
    "elo_games",
    "elo_pairs",
    "pair_counts",
    "score_from_elo",
    "sprt_bounds",
    "sprt_llr",
    "wilson",
]

SCORE_EPS = 1e-6
"""Scores are clamped to [SCORE_EPS, 1 - SCORE_EPS] before conversion, so Elo stays finite."""
MAX_ELO = 400.0 * math.log10((1.0 - SCORE_EPS) / SCORE_EPS)
"""Largest Elo difference ``elo_from_score`` returns (about 2400)."""
Z95 = NormalDist().inv_cdf(0.975)
"""Two-sided 95% normal quantile, 1.959963..."""

_PHI = NormalDist().cdf

Counts = tuple[int, int, int]


# --- Elo <-> score ---------------------------------------------------------------------------


def elo_from_score(score: float) -> float:
    """Logistic Elo difference for an expected score: ``400 * log10(s / (1 - s))``.

    The score is clamped to ``[SCORE_EPS, 1 - SCORE_EPS]``, so 0 and 1 map to -/+ ``MAX_ELO``.
    """
    if score <= SCORE_EPS:
        return -MAX_ELO
    if score >= 1.0 - SCORE_EPS:
        return MAX_ELO
    return min(max(400.0 * math.log10(score / (1.0 - score)), -MAX_ELO), MAX_ELO)


def score_from_elo(elo: float) -> float:
    """Expected score for a logistic Elo difference: ``1 / (1 + 10 ** (-elo / 400))``."""
    if elo >= 0:
        return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))
    t = 10.0 ** (elo / 400.0)  # stable for very negative elo: no overflow
    return t / (1.0 + t)


# --- Elo estimates ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """An Elo difference (A minus B) with its 95% interval and likelihood of superiority.

    ``n`` counts games for ``elo_games`` and pairs for ``elo_pairs``.
    """

    elo: float
    low: float
    high: float
    los: float
    score: float
    n: int

    @property
    def margin(self) -> float:
        """Half the interval width: the "+/-" figure cutechess-cli prints."""
        return (self.high - self.low) / 2.0

    def __str__(self) -> str:
        return (
            f"Elo {self.elo:+.1f} [{self.low:+.1f}, {self.high:+.1f}] "
            f"LOS {self.los:.1%} score {self.score:.3f} n={self.n}"
        )


def elo_text(value: float, low: float, high: float, any_games: bool = True) -> str:
    """An Elo estimate and its interval as a table shows it: a bound where only one side
    is known (past about 2000 is beyond what the games can tell)."""
    if not any_games or (low <= -2000 and high >= 2000):  # (no whole pair yet)
        return "-"
    if abs(value) >= 2000:  # every pair won (or lost): no finite estimate, only a bound
        return f"all won (at least {low:+.0f})" if value > 0 else f"all lost (at most {high:+.0f})"
    if high >= 2000:  # a score over the interval's reach: one side of it only
        return f"{value:+.0f} (at least {low:+.0f})"
    if low <= -2000:
        return f"{value:+.0f} (at most {high:+.0f})"
    return f"{value:+.0f} [{low:+.0f}, {high:+.0f}]"


def _estimate(score: float, se: float, los: float, n: int, wins: int, games: int) -> EloEstimate:
    """The normal interval; when it collapses (se 0: a clean sweep, every pair split),
    Wilson's on the ``wins`` of ``games``, which stays open on the side not yet seen: a
    sweep of 4 pairs is "at least +128", not "exactly +2400"."""
    if se > 0:
        low, high = score - Z95 * se, score + Z95 * se
    else:
        low, high = wilson(wins, games, Z95)
    return EloEstimate(
        elo=elo_from_score(score),
        low=elo_from_score(low),
        high=elo_from_score(high),
        los=los,
        score=score,
        n=n,
    )


def _empty_estimate() -> EloEstimate:
    return EloEstimate(elo=0.0, low=-math.inf, high=math.inf, los=0.5, score=0.5, n=0)


def _los(z_num: float, z_den: float) -> float:
    """Phi(z_num / z_den), with a zero denominator meaning certainty in the sign of z_num."""
    if z_den > 0:
        return _PHI(z_num / z_den)
    return 0.5 if z_num == 0 else float(z_num > 0)


def elo_games(wins: int, losses: int) -> EloEstimate:
    """Elo of A from independent games (A's wins and losses).

    Score ``s = wins / n`` with standard error ``sqrt(s (1 - s) / n)``; the 95% interval
    ``s +/- Z95 * se`` is mapped through ``elo_from_score``. LOS is
    ``Phi((wins - losses) / sqrt(wins + losses))``. With no games the interval is infinite;
    with a clean sweep (where the normal one collapses) it is Wilson's.
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"negative game count: {wins=} {losses=}")
    n = wins + losses
    if n == 0:
        return _empty_estimate()
    score = wins / n
    se = math.sqrt(score * (1.0 - score) / n)
    return _estimate(score, se, _los(wins - losses, math.sqrt(n)), n, wins, n)


def _check_counts(counts: Sequence[int]) -> Counts:
    if len(counts) != 3 or any(c < 0 for c in counts):
        raise ValueError(f"pair counts must be three non-negative ints, got {counts!r}")
    n0, n1, n2 = counts
    return n0, n1, n2


def _pair_moments(n0: float, n1: float, n2: float) -> tuple[float, float, float]:
    """Number of pairs, mean and (population) variance of the pair score wins / 2."""
    n = n0 + n1 + n2
    mean = (0.5 * n1 + n2) / n
    var = max((0.25 * n1 + n2) / n - mean * mean, 0.0)
    return n, mean, var


def elo_pairs(counts: Sequence[int]) -> EloEstimate:
    """Elo of A from duplicate-dice pair counts ``(n0, n1, n2)`` (pairs where A won 0/1/2 games).

    The per-game score is the mean pair score ``(n1 / 2 + n2) / N``; its variance is taken from
    the empirical distribution of pair scores, so the correlation between the two games of a
    pair is accounted for. Interval: normal approximation, mapped through ``elo_from_score``;
    LOS: ``Phi((mean - 1/2) / se)``. ``n`` is the number of pairs.
    """
    n0, n1, n2 = _check_counts(counts)
    if n0 + n1 + n2 == 0:
        return _empty_estimate()
    n, mean, var = _pair_moments(n0, n1, n2)
    se = math.sqrt(var / n)
    return _estimate(mean, se, _los(mean - 0.5, se), int(n), n1 + 2 * n2, 2 * int(n))


def pair_counts(pair_wins: Iterable[int]) -> Counts:
    """Trinomial counts ``(n0, n1, n2)`` from A's wins (0, 1 or 2) in each pair."""
    c = [0, 0, 0]
    for w in pair_wins:
        if w not in (0, 1, 2):
            raise ValueError(f"a pair has 0, 1 or 2 wins, got {w!r}")
        c[w] += 1
    return c[0], c[1], c[2]


# --- SPRT ------------------------------------------------------------------------------------


PAIR_SCORES = (0.0, 0.5, 1.0)  # A's score in a pair it won 0, 1 or 2 games of
PSEUDO_COUNT = 1e-3  # stands for an outcome never seen, so that every outcome stays possible


def _closest(p: Sequence[float], mu: float) -> list[float]:
    """The distribution over :data:`PAIR_SCORES` with mean ``mu`` nearest ``p`` (the
    maximum-likelihood one): ``q_i = p_i / (1 + t (s_i - mu))``, ``t`` found by bisection
    on ``sum q_i (s_i - mu) = 0`` (decreasing in t) where every ``q_i`` stays positive."""
    d = [x - mu for x in PAIR_SCORES]
    lo, hi = -1.0 / d[-1], -1.0 / d[0]  # the open interval where every 1 + t d_i > 0
    for _ in range(200):
        t = (lo + hi) / 2
        if lo == t or hi == t:
            break
        if sum(pi * di / (1 + t * di) for pi, di in zip(p, d, strict=True)) > 0:
            lo = t
        else:
            hi = t
    t = (lo + hi) / 2
    return [pi / (1 + t * di) for pi, di in zip(p, d, strict=True)]


def sprt_llr(counts: Sequence[int], elo0: float, elo1: float, *, min_pairs: int = 10) -> float:
    """Generalized log-likelihood ratio of H1: elo1 against H0: elo0 (logistic Elo per game).

    The pairs' outcomes (A won 0, 1 or 2 games: a score of 0, 1/2 or 1) are a trinomial
    sample; each hypothesis is the trinomial with mean ``score_from_elo(elo)`` most likely
    to have given it (maximum likelihood under that mean), as fastchess's pentanomial
    GSPRT does with five outcomes::

        LLR = sum_i n_i * log(q1_i / q0_i)

    An outcome never seen counts 1e-3, so the LLR stays finite (a sweep of ten pairs is
    not proof of an infinite Elo). Below ``min_pairs`` pairs the LLR is 0.
    """
    n0, n1, n2 = _check_counts(counts)
    if n0 + n1 + n2 < max(min_pairs, 1):
        return 0.0
    seen = [float(c) if c else PSEUDO_COUNT for c in (n0, n1, n2)]
    total = sum(seen)
    p = [c / total for c in seen]
    q0 = _closest(p, score_from_elo(elo0))
    q1 = _closest(p, score_from_elo(elo1))
    return total * sum(pi * math.log(b / a) for pi, a, b in zip(p, q0, q1, strict=True))


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's SPRT stopping bounds ``(log(beta / (1 - alpha)), log((1 - beta) / alpha))``."""
    if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
        raise ValueError(f"need 0 < alpha, beta and alpha + beta < 1, got {alpha=} {beta=}")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


@dataclass(slots=True)
class SprtState:
    """A running pair-based SPRT of H0: elo <= elo0 against H1: elo >= elo1 for engine A."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    counts: Counts = (0, 0, 0)
    min_pairs: int = field(default=10, repr=False)

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"need elo0 < elo1, got {self.elo0} and {self.elo1}")
        sprt_bounds(self.alpha, self.beta)  # validates alpha and beta
        self.counts = _check_counts(tuple(self.counts))

    def record(self, pair_wins: int) -> None:
        """Add one pair in which A won ``pair_wins`` (0, 1 or 2) games."""
        add = pair_counts([pair_wins])
        self.counts = (
            self.counts[0] + add[0],
            self.counts[1] + add[1],
            self.counts[2] + add[2],
        )

    @property
    def bounds(self) -> tuple[float, float]:
        return sprt_bounds(self.alpha, self.beta)

    @property
    def llr(self) -> float:
        return sprt_llr(self.counts, self.elo0, self.elo1, min_pairs=self.min_pairs)

    def decision(self) -> str | None:
        """``"H1"`` once the LLR reaches the upper bound, ``"H0"`` at the lower, else None."""
        lower, upper = self.bounds
        llr = self.llr
        if llr >= upper:
            return "H1"
        if llr <= lower:
            return "H0"
        return None

    def __str__(self) -> str:
        lower, upper = self.bounds
        pairs = sum(self.counts)
        llr = f"{self.llr:.2f}" if pairs >= self.min_pairs else f"- (from {self.min_pairs} pairs)"
        return f"LLR {llr} ({lower:.2f}, {upper:.2f}) [{self.elo0:.2f}, {self.elo1:.2f}]"


# --- Bayesian ratings ------------------------------------------------------------------------


class SkillTable:
    """OpenSkill (Plackett-Luce) ratings by player name, ranked by ``mu - 3 * sigma``.

    Unknown names start at the model's prior (mu 25, sigma 25/3, so conservative 0).
    """

    def __init__(self, model: PlackettLuce | None = None) -> None:
        self.model = model if model is not None else PlackettLuce()
        self._ratings: dict[str, PlackettLuceRating] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._ratings

    def __len__(self) -> int:
        return len(self._ratings)

    def rating(self, name: str) -> PlackettLuceRating:
        """The player's rating, created at the prior on first use."""
        r = self._ratings.get(name)
        if r is None:
            r = self._ratings[name] = self.model.rating(name=name)
        return r

    def record(self, winner: str, loser: str) -> None:
        """Update both players' ratings after ``winner`` beat ``loser`` in one game."""
        if winner == loser:
            raise ValueError(f"a player cannot beat itself: {winner!r}")
        [[w], [lo]] = self.model.rate([[self.rating(winner)], [self.rating(loser)]])
        self._ratings[winner], self._ratings[loser] = w, lo

    def mu(self, name: str) -> float:
        return self.rating(name).mu

    def sigma(self, name: str) -> float:
        return self.rating(name).sigma

    def conservative(self, name: str) -> float:
        """``mu - 3 * sigma``: a rating the player is very likely to be above."""
        r = self.rating(name)
        return r.mu - 3.0 * r.sigma

    def ordinal(self) -> list[tuple[str, float]]:
        """``(name, conservative)`` for every player, best first (ties by name)."""
        return sorted(
            ((name, self.conservative(name)) for name in self._ratings),
            key=lambda item: (-item[1], item[0]),
        )

    def to_dict(self) -> dict[str, tuple[float, float]]:
        """Plain ``name -> (mu, sigma)``, e.g. for JSON persistence."""
        return {name: (r.mu, r.sigma) for name, r in self._ratings.items()}

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Sequence[float]], model: PlackettLuce | None = None
    ) -> SkillTable:
        """Rebuild a table from ``to_dict`` output (lists, as from JSON, are accepted)."""
        table = cls(model)
        for name, (mu, sigma) in data.items():
            table._ratings[name] = table.model.rating(mu=float(mu), sigma=float(sigma), name=name)
        return table


# --- Binomial interval -----------------------------------------------------------------------


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; ``(0, 1)`` when ``n == 0``."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes=} {n=}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # (not a rounding error's
    high = 1.0 if successes == n else min(1.0, centre + half)  # 1e-17, printed -0.0%)
    return low, high
