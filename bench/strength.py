"""Engine strength: in-process self-play (no gRPC) with duplicate dice.

* greedy vs random: 200 games, colours alternating, greedy's win rate with a 95% Wilson
  interval;
* expectimax (full level) vs greedy: 200 duplicate-dice pairs (400 games): both games of
  a pair use the same dice sequence with the colours swapped, which cancels most of the
  luck. Score, win rate and points share with 95% confidence intervals from the pair
  results, plus the average thinking time per move of each engine.

Games are spread over two worker processes. Run ``python -m bench.strength`` (or
``python bench/strength.py``); ``main(quick=True)`` plays a handful of games as a smoke
test.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import sys
import time
from dataclasses import dataclass, field

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engines.registry import make_engine  # noqa: E402
from nardy import Color, Position, legal_plays, result  # noqa: E402

WORKERS = 2
Z95 = 1.959964


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


def play_game(white, black, dice_seed: int, *, max_turns: int = 2000) -> GameRecord:
    """Play one game between two engine objects; turn ``i`` uses the ``i``-th roll of the
    sequence seeded by ``dice_seed`` (so two games with one seed have the same dice)."""
    rng = random.Random(dice_seed)
    pos = Position.start()
    engines = {Color.WHITE: white, Color.BLACK: black}
    names = {Color.WHITE: f"white:{white.name}", Color.BLACK: f"black:{black.name}"}
    think = {n: 0.0 for n in names.values()}
    moves = {n: 0 for n in names.values()}
    turns = 0
    while result(pos) is None:
        if turns >= max_turns:
            raise RuntimeError(f"game with seed {dice_seed} did not finish")
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        turns += 1
        plays = legal_plays(pos, dice)
        if not plays:
            pos = pos.passed()
            continue
        name = names[pos.turn]
        t0 = time.perf_counter()
        play = engines[pos.turn].choose(pos, dice, plays)
        think[name] += time.perf_counter() - t0
        moves[name] += 1
        if play not in plays:
            raise RuntimeError(f"{name} returned a play that is not legal")
        pos = play.end
    res = result(pos)
    return GameRecord(white.name, black.name, res.winner, res.points, turns, think, moves)


# -- statistics ---------------------------------------------------------------------------


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def mean_ci(xs: list[float], z: float = Z95) -> tuple[float, float, float]:
    """Mean and normal-approximation interval of independent samples."""
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, m, m
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = z * sd / math.sqrt(n)
    return m, m - h, m + h


# -- jobs (run in worker processes) -------------------------------------------------------


def _single(job: tuple) -> list[GameRecord]:
    """One game: ``(white spec, black spec, dice seed)``; a spec is ``(name, level, seed)``."""
    wspec, bspec, seed = job
    return [play_game(make_engine(*wspec), make_engine(*bspec), seed)]


def _pair(job: tuple) -> list[GameRecord]:
    """A duplicate pair: the same dice seed with the colours swapped."""
    aspec, bspec, seed = job
    return [
        play_game(make_engine(*aspec), make_engine(*bspec), seed),
        play_game(make_engine(*bspec), make_engine(*aspec), seed),
    ]


def _run(fn, jobs: list, label: str) -> list[list[GameRecord]]:
    t0 = time.perf_counter()
    out = []
    with multiprocessing.Pool(WORKERS) as pool:
        for i, r in enumerate(pool.imap(fn, jobs), 1):
            out.append(r)
            if i % max(1, len(jobs) // 10) == 0 or i == len(jobs):
                print(
                    f"  {label}: {i}/{len(jobs)} jobs, {time.perf_counter() - t0:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return out


def _times(games: list[GameRecord], engine: str) -> tuple[float, int]:
    secs = sum(v for g in games for k, v in g.think.items() if k.split(":")[1] == engine)
    n = sum(v for g in games for k, v in g.moves.items() if k.split(":")[1] == engine)
    return secs, n


def _winner_name(g: GameRecord) -> str:
    return g.white if g.winner is Color.WHITE else g.black


# -- the benchmark ------------------------------------------------------------------------


def greedy_vs_random(games: int, seed: int = 1) -> dict:
    specs = [("greedy", None, seed), ("random", None, seed)]
    jobs = []
    for i in range(games):
        w, b = (specs[0], specs[1]) if i % 2 == 0 else (specs[1], specs[0])
        jobs.append((w, (b[0], b[1], b[2] + i), seed * 100_000 + i))
    recs = [g for r in _run(_single, jobs, "greedy vs random") for g in r]
    wins = sum(_winner_name(g) == "greedy" for g in recs)
    lo, hi = wilson(wins, len(recs))
    return {
        "games": len(recs),
        "wins": wins,
        "rate": wins / len(recs),
        "ci": (lo, hi),
        "records": recs,
    }


def expectimax_vs_greedy(pairs: int, seed: int = 2, level: int = 3) -> dict:
    a, b = ("expectimax", level, seed), ("greedy", None, seed)
    jobs = [(a, b, seed * 100_000 + i) for i in range(pairs)]
    results = _run(_pair, jobs, "expectimax vs greedy")
    wins_pp, net_pp, pts_for, pts_against = [], [], [], []
    for pair in results:
        w = f = ag = 0
        for g in pair:
            if _winner_name(g) == "expectimax":
                w += 1
                f += g.points
            else:
                ag += g.points
        wins_pp.append(w / 2)
        net_pp.append((f - ag) / 2)
        pts_for.append(f)
        pts_against.append(ag)
    recs = [g for pair in results for g in pair]
    rate = mean_ci(wins_pp)
    net = mean_ci(net_pp)
    total_f, total_a = sum(pts_for), sum(pts_against)
    share = total_f / (total_f + total_a)
    # ratio estimator over pairs (delta method)
    mean_tot = (total_f + total_a) / len(results)
    zs = [(f - share * (f + ag)) / mean_tot for f, ag in zip(pts_for, pts_against, strict=True)]
    _, zlo, zhi = mean_ci(zs)
    return {
        "pairs": len(results),
        "games": len(recs),
        "rate": rate,
        "net": net,
        "points": (total_f, total_a),
        "share": (share, share + zlo, share + zhi),
        "mars": sum(g.points == 2 for g in recs),
        "records": recs,
    }


def _fmt_ci(x: float, lo: float, hi: float, pct: bool = True) -> str:
    if pct:
        return f"{100 * x:5.1f}%  [{100 * lo:5.1f}%, {100 * hi:5.1f}%]"
    return f"{x:+.3f}  [{lo:+.3f}, {hi:+.3f}]"


def main(quick: bool = False) -> None:
    n_single, n_pairs = (6, 3) if quick else (200, 200)
    t0 = time.perf_counter()
    gr = greedy_vs_random(n_single)
    ex = expectimax_vs_greedy(n_pairs)
    elapsed = time.perf_counter() - t0
    all_recs = gr["records"] + ex["records"]
    rows = []
    rows.append(
        (
            "greedy vs random",
            f"{gr['games']} games",
            f"greedy wins {gr['wins']}/{gr['games']}",
            "win rate " + _fmt_ci(gr["rate"], *gr["ci"]) + " (Wilson)",
        )
    )
    m, lo, hi = ex["rate"]
    rows.append(
        (
            "expectimax vs greedy",
            f"{ex['pairs']} pairs / {ex['games']} games",
            f"points {ex['points'][0]}-{ex['points'][1]} (mars games {ex['mars']})",
            "win rate " + _fmt_ci(m, lo, hi),
        )
    )
    s, slo, shi = ex["share"]
    rows.append(("", "", "", "points share " + _fmt_ci(s, slo, shi)))
    m, lo, hi = ex["net"]
    rows.append(("", "", "", "net points/game " + _fmt_ci(m, lo, hi, pct=False)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    print()
    print("Engine strength (in-process, duplicate dice for the expectimax pairs)")
    print("-" * 100)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    print("-" * 100)
    print("Average thinking time per move (turns with at least one legal play):")
    for name, recs in (
        ("random", gr["records"]),
        ("greedy", all_recs),
        ("expectimax", ex["records"]),
    ):
        secs, n = _times(recs, name)
        if n:
            print(f"  {name:<11} {1000 * secs / n:8.2f} ms  over {n} moves")
    print(f"(total {elapsed:.0f} s on {WORKERS} worker processes)")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
