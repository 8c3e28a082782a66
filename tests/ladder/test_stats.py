"""Ladder statistics: Elo error bars, the pair-based SPRT, OpenSkill tables, Wilson intervals."""

import json
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nardy.stats import (
    MAX_ELO,
    Z95,
    SkillTable,
    SprtState,
    elo_from_score,
    elo_games,
    elo_pairs,
    elo_text,
    pair_counts,
    score_from_elo,
    sprt_bounds,
    sprt_llr,
    wilson,
)

# --- Elo <-> score ---------------------------------------------------------------------------


def test_elo_score_known_values():
    assert elo_from_score(0.5) == 0.0
    # 0.75 = 1 / (1 + 10^(-d/400))  <=>  10^(d/400) = 3  <=>  d = 400 log10 3 = 190.85
    assert elo_from_score(0.75) == pytest.approx(400 * math.log10(3))
    assert score_from_elo(400) == pytest.approx(10 / 11)  # 1 / (1 + 10^-1)
    assert score_from_elo(-400) == pytest.approx(1 / 11)


def test_elo_from_score_is_clamped_and_finite():
    assert elo_from_score(1.0) == pytest.approx(MAX_ELO)
    assert elo_from_score(0.0) == pytest.approx(-MAX_ELO)
    assert elo_from_score(1.7) == elo_from_score(1.0)
    assert 2300 < MAX_ELO < 2500
    assert score_from_elo(-1e6) == 0.0 and score_from_elo(1e6) == 1.0  # no overflow


@given(st.floats(min_value=-800, max_value=800))
def test_elo_score_round_trip(x):
    assert elo_from_score(score_from_elo(x)) == pytest.approx(x, abs=1e-6)


# --- Elo from games --------------------------------------------------------------------------


def test_elo_games_60_40_by_hand():
    # score s = 60/100 = 0.6 -> Elo = 400 log10(0.6/0.4) = 400 log10 1.5 = 70.44
    # se = sqrt(s (1-s) / n) = sqrt(0.24 / 100) = 0.04899; 1.96 se = 0.09602
    # score interval [0.50398, 0.69602]
    #   low  = 400 log10(0.50398 / 0.49602) = 400 log10 1.01605 = 2.77
    #   high = 400 log10(0.69602 / 0.30398) = 400 log10 2.28969 = 143.91
    # LOS = Phi((60 - 40) / sqrt(100)) = Phi(2) = 0.97725
    e = elo_games(60, 40)
    assert e.score == 0.6 and e.n == 100
    assert e.elo == pytest.approx(70.437, abs=1e-3)
    assert e.low == pytest.approx(2.77, abs=0.01)
    assert e.high == pytest.approx(143.91, abs=0.01)
    assert e.los == pytest.approx(0.97725, abs=1e-5)
    assert e.margin == pytest.approx((143.91 - 2.77) / 2, abs=0.01)
    assert str(e) == "Elo +70.4 [+2.8, +143.9] LOS 97.7% score 0.600 n=100"


def test_elo_games_edge_cases():
    empty = elo_games(0, 0)
    assert empty.elo == 0 and empty.los == 0.5 and empty.low == -math.inf and empty.n == 0
    # a sweep: se = 0 and the normal interval would collapse at the clamp (the standings
    # showed +2400 [+2400, +2400]); Wilson's bounds it on the side seen: 10/10 games, at
    # least a score of 0.722 (+166 Elo)
    sweep = elo_games(10, 0)
    assert sweep.elo == sweep.high == pytest.approx(MAX_ELO)
    assert sweep.low == pytest.approx(elo_from_score(wilson(10, 10, Z95)[0]))
    assert sweep.low == pytest.approx(166.2, abs=0.1)
    lost = elo_pairs((4, 0, 0))  # every pair lost: at most ...
    assert lost.elo == lost.low == pytest.approx(-MAX_ELO) and -200 < lost.high < -100
    even = elo_pairs((0, 6, 0))  # every pair split: an open interval around 0
    assert even.elo == 0 and even.low == pytest.approx(-even.high) and even.high > 100
    assert sweep.los == pytest.approx(0.99922, abs=1e-5)  # Phi(10 / sqrt 10) = Phi(3.162)
    with pytest.raises(ValueError):
        elo_games(-1, 3)


@pytest.mark.parametrize(("wins", "losses"), [(60, 40), (3, 17), (50, 50), (1, 0)])
def test_elo_games_swap_symmetry(wins, losses):
    a, b = elo_games(wins, losses), elo_games(losses, wins)
    assert b.elo == pytest.approx(-a.elo, abs=1e-9)
    assert b.low == pytest.approx(-a.high, abs=1e-9)
    assert b.high == pytest.approx(-a.low, abs=1e-9)
    assert a.los + b.los == pytest.approx(1.0)


# --- Elo from duplicate-dice pairs -----------------------------------------------------------


def test_elo_pairs_binomial_counts_match_independent_games():
    # (10, 20, 10) is exactly what independent fair games give (1:2:1), so it must agree with
    # 40-40 in 80 games.  Pair scores 0, 1/2, 1: mean = (20*0.5 + 10) / 40 = 0.5,
    # E[x^2] = (20*0.25 + 10) / 40 = 0.375, var = 0.375 - 0.25 = 0.125, se = sqrt(0.125/40)
    # = 0.0559 = sqrt(0.25/80), the games' se.  1.96 se = 0.1096 -> [0.3904, 0.6096]
    # -> Elo 400 log10(0.6096/0.3904) = +-77.4
    p, g = elo_pairs((10, 20, 10)), elo_games(40, 40)
    assert p.elo == 0.0 and p.score == 0.5 and p.n == 40 and p.los == 0.5
    assert p.high == pytest.approx(77.4, abs=0.1) and p.low == pytest.approx(-77.4, abs=0.1)
    assert p.high == pytest.approx(g.high) and p.low == pytest.approx(g.low)


def test_elo_pairs_correlation_changes_the_interval():
    # Duplicate dice make splits common (A's two games negatively correlated): (5, 30, 5)
    #   mean 0.5, E[x^2] = (30*0.25 + 5)/40 = 0.3125, var = 0.0625, se = sqrt(0.0625/40)
    #   = 0.03953 < 0.0559 -> narrower than 40-40 games: 1.96 se = 0.07748 -> +-54.3 Elo
    # Sweeps only (20, 0, 20) (positively correlated games): var = 20/40 - 0.25 = 0.25,
    #   se = 0.0791 -> wider: 1.96 se = 0.15495 -> 400 log10(0.65495/0.34505) = +-111.3 Elo
    games = elo_games(40, 40)
    split, sweep = elo_pairs((5, 30, 5)), elo_pairs((20, 0, 20))
    assert split.elo == sweep.elo == 0.0
    assert split.high == pytest.approx(54.3, abs=0.1) and split.low == pytest.approx(-54.3, abs=0.1)
    assert sweep.high == pytest.approx(111.3, abs=0.1)
    assert split.margin < games.margin < sweep.margin


def test_elo_pairs_lopsided_by_hand():
    # (0, 10, 30): mean = (5 + 30)/40 = 0.875 -> Elo 400 log10 7 = 338.04
    # E[x^2] = (2.5 + 30)/40 = 0.8125, var = 0.8125 - 0.765625 = 0.046875,
    # se = sqrt(0.046875/40) = 0.034233, LOS = Phi(0.375 / 0.034233) = Phi(10.95) ~ 1
    e = elo_pairs((0, 10, 30))
    assert e.score == 0.875
    assert e.elo == pytest.approx(400 * math.log10(7))
    se = math.sqrt(0.046875 / 40)
    assert e.low == pytest.approx(elo_from_score(0.875 - 1.959964 * se), abs=1e-3)
    assert e.los == pytest.approx(1.0)


@pytest.mark.parametrize("counts", [(3, 10, 27), (12, 5, 1), (0, 7, 0), (4, 0, 9)])
def test_elo_pairs_swap_symmetry(counts):
    a, b = elo_pairs(counts), elo_pairs(counts[::-1])  # B's view: A's 0s are B's 2s
    assert b.elo == pytest.approx(-a.elo, abs=1e-9)
    assert b.low == pytest.approx(-a.high, abs=1e-9)
    assert a.los + b.los == pytest.approx(1.0)


def test_pair_counts_and_validation():
    assert pair_counts([0, 1, 1, 2, 2, 2]) == (1, 2, 3)
    with pytest.raises(ValueError):
        pair_counts([3])
    with pytest.raises(ValueError):
        elo_pairs((1, -1, 0))
    assert elo_pairs((0, 0, 0)).n == 0


# --- SPRT ------------------------------------------------------------------------------------


def test_sprt_bounds():
    # log(0.05/0.95) = -2.9444, log(0.95/0.05) = +2.9444
    lower, upper = sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944, abs=1e-3) and upper == pytest.approx(2.944, abs=1e-3)
    assert sprt_bounds(0.05, 0.1) == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    with pytest.raises(ValueError):
        sprt_bounds(0.6, 0.5)


def test_sprt_llr_by_hand():
    # Each hypothesis is the trinomial nearest the sample with the hypothesis's mean. When
    # the sample's mean is mu1 itself, H1's is the sample (q1 = p) and the LLR is N times
    # the Kullback-Leibler divergence of the sample from H0's. (0, 10, 30), the pair never
    # lost counted 1e-3, has a mean of about 0.875; H0's trinomial (mean 1/2) is found here
    # by a search over every trinomial with that mean.
    p = [1e-3 / 40.001, 10 / 40.001, 30 / 40.001]
    mu1 = sum(pi * si for pi, si in zip(p, (0, 0.5, 1), strict=True))
    q0 = _nearest_by_brute_force(p, 0.5)
    kl = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q0, strict=True))
    assert sprt_llr((0, 10, 30), 0, elo_from_score(mu1)) == pytest.approx(40.001 * kl, rel=1e-6)
    # mean 0.5 halfway between symmetric hypotheses: mu0 + mu1 = 1 -> LLR = 0
    assert sprt_llr((10, 20, 10), -10, 10) == pytest.approx(0.0, abs=1e-12)
    # B's view of A's test: counts reversed, hypotheses negated (elo0 0 -> 0, elo1 10 -> -10)
    assert sprt_llr((12, 20, 8), 0, 10) == pytest.approx(sprt_llr((8, 20, 12), 0, -10))
    # many pairs, close hypotheses: the normal approximation's value (5.45)
    assert sprt_llr((400, 1000, 600), 0, 5) == pytest.approx(5.45, rel=0.03)


def _nearest_by_brute_force(p: list[float], mu: float) -> list[float]:
    """The trinomial over scores (0, 1/2, 1) with mean ``mu`` of the greatest likelihood
    of ``p``, by a fine search along the line of such trinomials (q2 - q0 = mu - 1/2)."""
    best, arg = -math.inf, None
    steps = 200_000
    for k in range(1, steps):
        q0 = k / steps * min(1.0, 1.5 - mu)
        q2 = q0 + mu - 0.5
        q1 = 1 - q0 - q2
        if q2 <= 0 or q1 <= 0:
            continue
        ll = sum(pi * math.log(qi) for pi, qi in zip(p, (q0, q1, q2), strict=True))
        if ll > best:
            best, arg = ll, [q0, q1, q2]
    return arg


def test_sprt_llr_matches_an_independent_maximum_likelihood():
    """Values computed by a reviewer's own implementation of the exact GSPRT. The normal
    approximation used before gave -3.14 and -3.19 for the first two, accepting H0 after
    17 and 25 pairs of which all but two split (its variance floor), and 14.75 for a
    sweep of ten pairs."""
    assert sprt_llr((0, 17, 0), 0, 50) == pytest.approx(-2.614, abs=1e-3)
    assert sprt_llr((1, 23, 1), 0, 50) == pytest.approx(-2.018, abs=1e-3)
    assert sprt_llr((0, 0, 10), 0, 50) == pytest.approx(1.336, abs=1e-3)
    assert sprt_llr((40, 100, 60), 0, 20) == pytest.approx(1.647, abs=1e-3)
    assert sprt_llr((5, 2, 13), 0, 50) == pytest.approx(1.053, abs=1e-3)


def test_sprt_llr_degenerate_inputs():
    assert sprt_llr((0, 0, 0), 0, 5) == 0.0
    assert sprt_llr((0, 0, 3), 0, 5) == 0.0  # fewer than min_pairs
    assert sprt_llr((0, 0, 3), 0, 5, min_pairs=1) > 0  # outcomes never seen: finite
    assert math.isfinite(sprt_llr((0, 40, 0), 0, 5)) and sprt_llr((0, 40, 0), 0, 5) < 0
    assert sprt_llr((40, 0, 0), 0, 5) < 0 < sprt_llr((0, 0, 40), 0, 5)


def test_sprt_state_summary_and_validation():
    s = SprtState(elo0=0, elo1=5)
    assert s.decision() is None
    # no LLR before the tenth pair: a 0.00 that jumps to 6 read as "no evidence yet"
    assert str(s) == "LLR - (from 10 pairs) (-2.94, 2.94) [0.00, 5.00]"
    for _ in range(10):
        s.record(1)
    assert str(s) == f"LLR {s.llr:.2f} (-2.94, 2.94) [0.00, 5.00]" and s.llr != 0
    with pytest.raises(ValueError):
        SprtState(elo0=5, elo1=0)
    with pytest.raises(ValueError):
        s.record(3)


def _duplicate_pair(rng: random.Random, elo: float) -> int:
    """A's wins in one duplicate pair: dice luck d helps A's seat in game 1, B's in game 2."""
    d = rng.gauss(0.0, 150.0)
    return (rng.random() < score_from_elo(elo + d)) + (rng.random() < score_from_elo(elo - d))


def _run_sprt(seed: int, true_elo: float, limit: int = 20_000) -> SprtState:
    rng = random.Random(seed)
    s = SprtState(elo0=0, elo1=20)
    while s.decision() is None and sum(s.counts) < limit:
        s.record(_duplicate_pair(rng, true_elo))
    return s


def test_sprt_accepts_h1_for_a_strong_engine():
    s = _run_sprt(seed=1, true_elo=80)
    assert s.decision() == "H1"
    assert elo_pairs(s.counts).elo > 20


def test_sprt_accepts_h0_at_elo0():
    s = _run_sprt(seed=2, true_elo=0)
    assert s.decision() == "H0"
    assert s.llr <= s.bounds[0]


# --- OpenSkill table -------------------------------------------------------------------------


def test_skill_table_ranks_the_unbeaten_player_first():
    table = SkillTable()
    rng = random.Random(7)
    for _ in range(10):
        table.record("champ", rng.choice(["b", "c", "d"]))
    for _ in range(10):
        x, y = rng.sample(["b", "c", "d"], 2)
        table.record(x, y)
    ranking = table.ordinal()
    assert ranking[0][0] == "champ"
    assert [v for _, v in ranking] == sorted((v for _, v in ranking), reverse=True)
    r = table.rating("champ")
    assert table.conservative("champ") == pytest.approx(r.mu - 3 * r.sigma)
    assert table.mu("champ") > 25 and table.sigma("champ") < 25 / 3


def test_skill_table_prior_and_validation():
    table = SkillTable()
    assert table.conservative("new") == pytest.approx(0.0)  # 25 - 3 * 25/3
    assert "new" in table and len(table) == 1
    with pytest.raises(ValueError):
        table.record("x", "x")


def test_skill_table_dict_round_trip():
    table = SkillTable()
    for w, lo in [("a", "b"), ("b", "c"), ("a", "c"), ("c", "b")]:
        table.record(w, lo)
    data = table.to_dict()
    assert all(isinstance(v, tuple) and len(v) == 2 for v in data.values())
    back = SkillTable.from_dict(json.loads(json.dumps(data)))  # lists after JSON
    assert back.to_dict() == data
    assert back.ordinal() == table.ordinal()
    back.record("a", "b")  # a restored table keeps rating
    table.record("a", "b")
    for name, (mu, sigma) in table.to_dict().items():
        assert back.to_dict()[name] == pytest.approx((mu, sigma))


# --- Wilson ----------------------------------------------------------------------------------


def test_wilson_known_values():
    # 5/10, z = 1.96: centre = (0.5 + 1.96^2/20) / (1 + 1.96^2/10) = 0.5
    # half = 1.96 sqrt(0.025 + 3.8416/400) / 1.38416 = 1.96 * 0.18602 / 1.38416 = 0.26341
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.23659, abs=1e-5) and high == pytest.approx(0.76341, abs=1e-5)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)
    lo3, hi3 = wilson(5, 10, z=3.0)
    assert lo3 < low and hi3 > high
    with pytest.raises(ValueError):
        wilson(11, 10)


def test_sprt_llr_of_a_sweep_is_on_the_scale_of_its_neighbours():
    # Ten pairs all won: about the evidence of nine won and one split, and nowhere near the
    # thousands a variance of zero would give (the runner once printed LLR 2654 here).
    swept, nearly = sprt_llr((0, 0, 10), 0, 20), sprt_llr((0, 1, 9), 0, 20)
    assert 0 < swept < 2 * nearly < 15
    # all pairs split: the two engines look equal, evidence slightly for H0
    assert -1 < sprt_llr((0, 10, 0), 0, 20) < 0


def test_the_runners_elo_text_says_what_is_known():
    """A row with games but no whole pair read "+0 [-inf, +inf]"; a sweep gives a bound."""
    assert elo_text(0.0, -math.inf, math.inf, True) == "-"
    assert elo_text(0.0, 0.0, 0.0, False) == "-"
    assert elo_text(2400.0, 287.4, math.inf, True) == "all won (at least +287)"
    assert elo_text(35.2, -10.4, 80.9, True) == "+35 [-10, +81]"
    # (a score above the interval's reach read "+720 [+120, +inf]")
    assert elo_text(720.0, 120.2, math.inf, True) == "+720 (at least +120)"
    assert elo_text(-720.0, -math.inf, -119.8, True) == "-720 (at most -120)"
