"""Engine strength: in-process self-play (no gRPC) with duplicate dice, long and short nardy.

* greedy vs random (long nardy): 200 games, colours alternating, greedy's win rate with a
  95% Wilson interval;
* duplicate matches (:data:`MATCHES`), 200 pairs (400 games) each. Long nardy:
  expectimax (level 3) vs greedy, the network engine (full level) vs greedy, vs
  expectimax level 3 and vs the engine shipped before (its weights,
  ``engines/weights/long-prev.npz``, and its search),
  and the network alone (0 ply, level 2) vs greedy; short nardy (``short-...``): the
  network (full level, and 0 ply) vs greedy and vs random, greedy vs random, and greedy
  and the network vs GNU Backgammon (``gnubg``, at ``--gnubg-ply``, 0 by default; run only
  where gnubg is installed). Both games of a pair use the same dice sequence with the
  colours swapped, which cancels most of the luck. Win rate, points share (the engine's
  points over all points played for) and net points per game with 95% confidence
  intervals from the pair results, plus the average thinking time per move of each side;
* any other pairing: ``--engine SPEC --opponent SPEC [--variant short] [--seed S]``,
  a SPEC being ``NAME[:LEVEL[:WEIGHTS[:SEARCH]]]`` (e.g. ``network:0`` against
  ``network:3``, or ``network:3:engines/weights/long-prev.npz:previous``: the weights and
  the full level's search shipped before);
* the network engine's levels: ``--levels [--variant short]`` plays levels 0, 1 and 2
  each against level 3 (full strength);
* the network engine's time per move at each level (0-3) of each variant.

Games are spread over two worker processes. Run ``python -m bench strength`` or
``python -m bench.strength [--pairs N] [--only network-greedy,...] [--minutes M]
[--workers W] [--seed S] [--gnubg-ply N]``; ``--minutes`` reports, per match, the pairs
finished within M minutes (always the first ones, in order: a time limit keeps no pair for
being quick), and the run prints the score so far as it goes; ``--quick`` plays a handful
of games as a smoke test.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engines.arena import GameRecord, mean_ci, play_game, rate_ci  # noqa: E402
from engines.registry import make_engine  # noqa: E402
from nardy import Color  # noqa: E402
from nardy.match import DEFAULT_VARIANT, Opening  # noqa: E402
from nardy.stats import wilson  # noqa: E402
from nardy.variant import variant  # noqa: E402

WORKERS = 2
PREVIOUS = "engines/weights/long-prev.npz"  # the long network shipped before the current one

#: The full level's search before its 2-ply search was widened (engines/neural.py).
PREVIOUS_SEARCH = {"k": 5, "margin": 0.25, "k2": 3, "margin2": 0.04}

_KEPT: dict[tuple, object] = {}  # a worker's engines, kept from pair to pair


def _engine(spec: tuple, variant_name: str):
    """The engine of ``spec`` (``(name, level, seed)``, then optionally a dict of options:
    the network's ``weights`` file and ``search``, fields of its level's
    :class:`engines.neural.Level` to override; any other option, such as gnubg's
    ``{"ply": 0}``, goes to :func:`engines.registry.make_engine`) for ``variant_name``,
    made once per worker process: an engine with a process of its own (gnubg) is started
    once, not for every pair."""
    key = (repr(spec), variant_name)
    if key not in _KEPT:
        name, level, seed, *options = spec
        options = dict(options[0]) if options else {}
        weights, search = options.pop("weights", None), options.pop("search", None)
        if weights or search:
            import dataclasses

            from engines.network import Network
            from engines.neural import NetworkEngine

            net = Network.load(weights) if weights else None
            engine = NetworkEngine(level, seed, network=net, rules=variant(variant_name))
            engine.params = dataclasses.replace(engine.params, **(search or {}))
        else:
            engine = make_engine(name, level, seed, variant_name, **options)
        _KEPT[key] = engine
    return _KEPT[key]


def _engines(specs: tuple, variant_name: str, seed: int) -> list:
    """The engines of ``specs``, their random choices (the lower levels' slips) seeded by
    the pair's dice seed: the same games whichever worker plays them."""
    out = [_engine(spec, variant_name) for spec in specs]
    for i, engine in enumerate(out):
        if hasattr(engine, "rng"):
            engine.rng.seed(f"{seed}:{i}")
    return out


# -- jobs (run in worker processes) -------------------------------------------------------


def _single(job: tuple) -> list[GameRecord]:
    """One game: ``(white spec, black spec, dice seed)`` of long nardy."""
    wspec, bspec, seed = job
    return [play_game(make_engine(*wspec), make_engine(*bspec), seed)]


def _pair(job: tuple) -> list[GameRecord]:
    """A duplicate pair: the same dice seed with the colours swapped (of ``job``'s variant,
    long nardy if it names none)."""
    aspec, bspec, seed, *rest = job
    name = rest[0] if rest else DEFAULT_VARIANT
    a, b = _engines((aspec, bspec), name, seed)
    rules = variant(name)
    return [play_game(a, b, seed, rules=rules), play_game(b, a, seed, rules=rules)]


def _run(
    fn, jobs: list, label: str, deadline: float | None = None, workers: int = WORKERS
) -> list[list[GameRecord]]:
    """Results of ``jobs`` in order; with ``deadline`` (``time.perf_counter()``), only
    the jobs finished by then, and always a prefix of ``jobs`` (so a time limit keeps
    no game for being quick)."""
    t0 = time.perf_counter()
    out = []
    pool = multiprocessing.Pool(workers)
    results = pool.imap(fn, jobs)
    try:
        for i in range(1, len(jobs) + 1):
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                out.append(results.next(timeout=wait))
            except multiprocessing.TimeoutError:
                print(f"  {label}: time limit, {i - 1} of {len(jobs)} jobs", file=sys.stderr)
                break
            if i % max(1, len(jobs) // 20) == 0 or i == len(jobs):
                print(
                    f"  {label}: {i}/{len(jobs)} jobs, {time.perf_counter() - t0:.0f} s"
                    + _running(out),
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        pool.terminate()
    return out


def _pair_score(pair: list[GameRecord]) -> tuple[float, int, int]:
    """The first engine's (wins / 2, points won, points lost) in a pair: it is white in
    the first game and black in the second."""
    wins = won = lost = 0
    for g, mine in zip(pair, (Color.WHITE, Color.BLACK), strict=True):
        if g.winner is mine:
            wins += 1
            won += g.points
        else:
            lost += g.points
    return wins / 2, won, lost


def _running(out: list[list[GameRecord]]) -> str:
    """The first engine's win rate so far (pairs only)."""
    if not out or len(out[0]) != 2:
        return ""
    rate, lo, hi = rate_ci([_pair_score(pair)[0] for pair in out])
    return f", the first wins {100 * rate:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def _times(games: list[GameRecord], engine: str) -> tuple[float, int]:
    secs = sum(v for g in games for k, v in g.think.items() if k.split(":")[1] == engine)
    n = sum(v for g in games for k, v in g.moves.items() if k.split(":")[1] == engine)
    return secs, n


def _side_times(pairs: list[list[GameRecord]]) -> tuple[float, float]:
    """Mean thinking time per move (ms) of the first and of the second engine of pairs."""
    secs, moves = [0.0, 0.0], [0, 0]
    for pair in pairs:
        for g, first in zip(pair, ("white", "black"), strict=True):
            for k, v in g.think.items():
                i = 0 if k.startswith(first) else 1
                secs[i] += v
                moves[i] += g.moves[k]
    return tuple(1000 * s / max(n, 1) for s, n in zip(secs, moves, strict=True))


def _winner_name(g: GameRecord) -> str:
    return g.white if g.winner is Color.WHITE else g.black


# -- the benchmark ------------------------------------------------------------------------


def greedy_vs_random(games: int, seed: int = 1) -> dict:
    """Long nardy, single games with the colours alternating."""
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


def duplicate(
    a: tuple,
    b: tuple,
    pairs: int,
    seed: int,
    deadline: float | None = None,
    workers: int = WORKERS,
    variant_name: str = DEFAULT_VARIANT,
) -> dict:
    """``a`` against ``b`` (engine specs ``(name, level, seed[, options])``) over
    duplicate-dice pairs of ``variant_name`` (the first ones of them finished by
    ``deadline``, if given)."""
    label = f"{_spec_name(a)} vs {_spec_name(b)}"
    if variant_name != DEFAULT_VARIANT:
        label += f" ({variant_name} nardy)"
    jobs = [(a, b, seed * 100_000 + i, variant_name) for i in range(pairs)]
    results = _run(_pair, jobs, label, deadline, workers)
    if not results:
        raise SystemExit(f"{label}: no pair finished in the time limit")
    scores = [_pair_score(pair) for pair in results]
    wins_pp = [w for w, _, _ in scores]
    net_pp = [(f - ag) / 2 for _, f, ag in scores]
    pts_for = [f for _, f, _ in scores]
    pts_against = [ag for _, _, ag in scores]
    recs = [g for pair in results for g in pair]
    total_f, total_a = sum(pts_for), sum(pts_against)
    share = total_f / (total_f + total_a)
    # ratio estimator over pairs (delta method)
    mean_tot = (total_f + total_a) / len(results)
    zs = [(f - share * (f + ag)) / mean_tot for f, ag in zip(pts_for, pts_against, strict=True)]
    _, zlo, zhi = mean_ci(zs)
    return {
        "label": label,
        "name": a[0],
        "pairs": len(results),
        "games": len(recs),
        "wins": round(2 * sum(wins_pp)),
        "rate": rate_ci(wins_pp),
        "net": mean_ci(net_pp),
        "points": (total_f, total_a),
        "share": (share, max(share + zlo, 0.0), min(share + zhi, 1.0)),
        "big": sum(g.points >= 2 for g in recs),
        "times": _side_times(results),
        "records": recs,
    }


def _spec_name(spec: tuple) -> str:
    options = spec[3] if len(spec) > 3 else {}
    out = spec[0] + (f" L{spec[1]}" if spec[1] is not None else "")
    if options.get("weights"):
        out += f" ({os.path.basename(options['weights'])})"
    if options.get("search"):
        out += " [" + ",".join(f"{k}={v}" for k, v in options["search"].items()) + "]"
    return out


def _fmt_ci(x: float, lo: float, hi: float, pct: bool = True) -> str:
    if pct:
        return f"{100 * x:5.1f}%  [{100 * lo:5.1f}%, {100 * hi:5.1f}%]"
    return f"{x:+.3f}  [{lo:+.3f}, {hi:+.3f}]"


#: The duplicate matches of the full bench: (engine, opponent, dice seed[, variant]).
MATCHES = {
    "expectimax-greedy": (("expectimax", 3, 2), ("greedy", None, 2), 2),
    "network-greedy": (("network", 3, 3), ("greedy", None, 3), 3),
    "network0-greedy": (("network", 2, 5), ("greedy", None, 5), 5),
    "network-expectimax": (("network", 3, 4), ("expectimax", 3, 4), 4),
    "network-prev": (
        ("network", 3, 6),
        ("network", 3, 6, {"weights": PREVIOUS, "search": PREVIOUS_SEARCH}),
        6,
    ),
    "short-greedy-random": (("greedy", None, 7), ("random", None, 7), 7, "short"),
    "short-network-random": (("network", 3, 8), ("random", None, 8), 8, "short"),
    "short-network-greedy": (("network", 3, 9), ("greedy", None, 9), 9, "short"),
    "short-network0-greedy": (("network", 2, 10), ("greedy", None, 10), 10, "short"),
    "short-greedy-gnubg": (("greedy", None, 11), ("gnubg", None, 11, {"ply": 0}), 11, "short"),
    "short-network-gnubg": (("network", 3, 12), ("gnubg", None, 12, {"ply": 0}), 12, "short"),
}


def parse_spec(text: str, seed: int) -> tuple:
    """``NAME[:LEVEL[:WEIGHTS[:SEARCH]]]`` -> an engine spec; SEARCH is ``k=5,margin=0.25``
    (fields of :class:`engines.neural.Level`) or ``previous`` (:data:`PREVIOUS_SEARCH`)."""
    name, _, rest = text.partition(":")
    level, _, rest = rest.partition(":")
    weights, _, search = rest.partition(":")
    if search == "previous":
        fields = dict(PREVIOUS_SEARCH)
    else:
        pairs = [kv.split("=") for kv in search.split(",") if kv]
        fields = {k: int(v) if k in ("ply", "k", "k2") else float(v) for k, v in pairs}
    options = {"weights": weights} if weights else {}
    if fields:
        options["search"] = fields
    spec = (name, int(level) if level else None, seed)
    return (*spec, options) if options else spec


def main(quick: bool = False, argv: list[str] | None = None) -> None:
    """``python -m bench.strength [--quick] [--pairs N] [--only NAME,...]``: greedy vs random
    and the duplicate :data:`MATCHES`; ``--only`` picks matches (``random`` for the first),
    ``--engine``/``--opponent`` play one other match."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench.strength")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pairs", type=int, default=None, help="pairs per match (default 200)")
    ap.add_argument("--only", default=None, help=f"random,{','.join(MATCHES)}")
    ap.add_argument("--engine", default=None, help="NAME[:LEVEL[:WEIGHTS]] (with --opponent)")
    ap.add_argument("--opponent", default=None, help="NAME[:LEVEL[:WEIGHTS]]")
    ap.add_argument(
        "--levels",
        action="store_true",
        help="the network engine's levels 0, 1 and 2 each against level 3 (full strength)",
    )
    ap.add_argument("--variant", default="long", help="of --engine's and --levels' matches")
    ap.add_argument("--seed", type=int, default=None, help="dice seed (default: the match's)")
    ap.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="per match: report the pairs finished within this time (the first ones, in order)",
    )
    ap.add_argument("--workers", type=int, default=WORKERS, help=f"processes (default {WORKERS})")
    ap.add_argument(
        "--gnubg-ply", type=int, default=0, metavar="N", help="gnubg's plies (default 0)"
    )
    ap.add_argument(
        "--weights",
        default=None,
        help="the long network's weights (default: the shipped ones); a copy taken at the "
        "start is used, so a training run may go on exporting to the file",
    )
    ap.add_argument("--short-weights", default=None, help="the same for short nardy's network")
    ap.add_argument("--no-times", action="store_true", help="skip the time per move at each level")
    args, _ = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.weights:
        _snapshot_weights(args.weights, "NARDY_WEIGHTS")
    if args.short_weights:
        _snapshot_weights(args.short_weights, "NARDY_WEIGHTS_SHORT")
    quick = quick or args.quick
    n_single = 6 if quick else 200
    n_pairs = args.pairs or (3 if quick else 200)
    matches = dict(MATCHES)
    if args.engine or args.opponent:
        if not (args.engine and args.opponent):
            raise SystemExit("--engine and --opponent go together")
        seed = 11 if args.seed is None else args.seed
        a, b = parse_spec(args.engine, seed), parse_spec(args.opponent, seed)
        matches = {"given": (a, b, seed, args.variant)}
        only = {"given"}
    elif args.levels:
        seed = 12 if args.seed is None else args.seed
        matches = {
            f"L{lv}": (("network", lv, seed), ("network", 3, seed), seed, args.variant)
            for lv in (0, 1, 2)
        }
        only = set(matches)
    else:
        only = set(args.only.split(",")) if args.only else {"random", *MATCHES}
    if not os.path.exists(PREVIOUS):
        only.discard("network-prev")
    t0 = time.perf_counter()
    rows = []
    all_recs: list[GameRecord] = []
    if "random" in only:
        gr = greedy_vs_random(n_single)
        all_recs += gr["records"]
        rows.append(
            (
                "greedy vs random",
                f"{gr['games']} games",
                f"greedy wins {gr['wins']}/{gr['games']}",
                "win rate " + _fmt_ci(gr["rate"], *gr["ci"]) + " (Wilson)",
            )
        )
    for key, (a, b, seed, *rest) in matches.items():
        if key not in only:
            continue
        v = rest[0] if rest else DEFAULT_VARIANT
        if args.seed is not None:
            seed = args.seed
        if "gnubg" in (a[0], b[0]):
            from engines.gnubg import gnubg_path

            if gnubg_path() is None:
                print(f"  {key}: skipped, gnubg is not installed (make gnubg)", file=sys.stderr)
                continue
            a, b = (_with_ply(s, args.gnubg_ply) for s in (a, b))
        limit = None if args.minutes is None else time.perf_counter() + 60 * args.minutes
        ex = duplicate(a, b, n_pairs, seed, limit, args.workers, v)
        all_recs += ex["records"]
        m, lo, hi = ex["rate"]
        big = " or ".join(list(variant(v).kinds)[1:])  # the wins worth more than one
        rows.append(
            (
                ex["label"],
                f"{ex['pairs']} pairs / {ex['games']} games (seed {seed})",
                f"wins {ex['wins']}, points {ex['points'][0]}-{ex['points'][1]} "
                f"({big}: {ex['big']} games)",
                "win rate " + _fmt_ci(m, lo, hi),
            )
        )
        s, slo, shi = ex["share"]
        rows.append(("", "", "", "points share " + _fmt_ci(s, slo, shi)))
        m, lo, hi = ex["net"]
        rows.append(("", "", "", "net points/game " + _fmt_ci(m, lo, hi, pct=False)))
        ta, tb = ex["times"]
        rows.append(("", "", "", f"ms per move {ta:.2f} vs {tb:.2f}"))
    elapsed = time.perf_counter() - t0
    widths = [max(len(r[i]) for r in rows) for i in range(3)] if rows else [0, 0, 0]
    print()
    from engines.network import shipped

    print("Engine strength (in-process; duplicate dice, colours swapped, for the pairs)")
    print(f"network weights: long {_made(shipped('long').meta)}", end="")
    short = _shipped_short()
    print(f"; short {_made(short.meta)}" if short else "")
    print("-" * 110)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    print("-" * 110)
    print("Average thinking time per move (turns with at least one legal play):")
    for name in ("random", "greedy", "expectimax", "network", "gnubg"):
        secs, n = _times(all_recs, name)
        if n:
            print(f"  {name:<11} {1000 * secs / n:8.2f} ms  over {n} moves")
    print(f"(total {elapsed:.0f} s on {args.workers} worker processes)")
    if not args.no_times:
        for v in ("long", "short") if short else ("long",):
            move_times(quick, v)


def _shipped_short():
    from engines.network import shipped

    try:
        return shipped("short")
    except (OSError, ValueError):  # not trained in this checkout
        return None


def _with_ply(spec: tuple, ply: int) -> tuple:
    """gnubg's spec at ``ply`` plies (other engines' as they are)."""
    return (*spec[:3], {"ply": ply}) if spec[0] == "gnubg" else spec


def _made(meta: dict) -> str:
    """How weights were made, from their ``meta``: TD games and fitting rounds."""
    made = f"{meta.get('games')} self-play games"
    rounds = len(meta.get("fit", []))
    if rounds:
        made += f", then {rounds} fitting round{'s' * (rounds > 1)}"
    return made


def _snapshot_weights(path: str, env: str) -> None:
    """Copy the weights file aside and point this process and its workers at the copy
    (``env``, read by :func:`engines.network.shipped`)."""
    import atexit
    import shutil
    import tempfile

    from engines.network import Network

    fd, snap = tempfile.mkstemp(suffix=".npz", prefix="weights-")
    os.close(fd)
    shutil.copyfile(path, snap)
    atexit.register(os.unlink, snap)
    meta = Network.load(snap).meta
    os.environ[env] = snap
    print(f"weights: {path} ({_made(meta)})", file=sys.stderr)


def move_times(quick: bool, variant_name: str = "long", turn_ms: int = 1000) -> None:
    """Time per move of the network engine at each level (3 given a ``turn_ms`` turn: it
    budgets a third of it, at most 0.9 s) over the positions of a few self-play games at
    0 ply: wall-clock time (what the clock charges; the machine's load included) and the
    process's CPU time, mean, 95th percentile and worst, and the moves over the turn."""
    from engines.neural import LEVELS, NetworkEngine

    rules = variant(variant_name)
    opening_dice = rules.default_opening is Opening.USE_OPENING_DICE  # (no double first)
    rng = random.Random(5)
    engines = {lv: NetworkEngine(level=lv, seed=1, rules=rules) for lv in sorted(LEVELS)}
    wall: dict[int, list[float]] = {lv: [] for lv in engines}
    cpu: dict[int, list[float]] = {lv: [] for lv in engines}
    for _ in range(1 if quick else 4):
        pos, turn = rules.start(), 0
        while rules.result(pos) is None:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            while opening_dice and turn == 0 and dice[0] == dice[1]:
                dice = (rng.randint(1, 6), rng.randint(1, 6))
            turn += 1
            plays = rules.legal_plays(pos, dice)
            if not plays:
                pos = rules.passed(pos)
                continue
            for level, engine in engines.items():
                t, c = time.perf_counter(), time.process_time()
                engine.choose(pos, dice, plays, time_left_ms=turn_ms)
                wall[level].append(time.perf_counter() - t)
                cpu[level].append(time.process_time() - c)
            pos = engines[2].choose(pos, dice, plays).end
    print(
        f"Network engine ({variant_name} nardy) time per move, given a {turn_ms} ms turn "
        "(level 3 budgets a third):"
    )
    for level in wall:
        what = {3: "full: 1-ply, 2-ply on close calls", 2: "0-ply"}.get(level, "0-ply, slips")
        print(f"  level {level} ({what}):")
        for label, ts in (("wall", wall[level]), ("CPU", cpu[level])):
            ts = sorted(ts)
            over = sum(t > turn_ms / 1000 for t in ts)
            print(
                f"    {label:4s} mean {1000 * sum(ts) / len(ts):7.2f} ms, 95th percentile "
                f"{1000 * ts[int(0.95 * len(ts))]:7.2f} ms, max {1000 * ts[-1]:7.2f} ms, "
                f"{over} over the turn, of {len(ts)} moves"
            )
    full = engines[3]
    print(
        f"  level 3 searched {full.deepened} choices at 2 ply; {full.timeouts} searches were "
        "cut short by the budget (then the last complete depth decides)"
    )
    print(f"  (load average {', '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
