"""Train a variant's value network by TD(lambda) self-play: ``python -m engines.train``.

The method is TD-Gammon's: the network plays both sides at 0 ply (the dice are the only
exploration) and learns to predict its own next estimate. Each game is learned from as a
whole when it ends (the *offline* lambda-return form of TD(lambda)): for the positions
``s_0 .. s_{T-1}`` before each turn, the targets are

    G_{T-1} = the game's outcome,    G_t = flip((1 - lambda) V(s_{t+1}) + lambda G_{t+1}),

(``flip`` turns the values round to the other side to move) and one gradient step on
``sum_t |G_t - V(s_t)|^2 / 2`` follows, with step ``alpha / sqrt(1 + i / alpha_half)``
for game ``i`` (large steps early, smaller ones as the play settles; a run resumed with
another ``--alpha`` or ``--alpha-half`` goes on with the new step from the checkpoint's
game on, ``meta["steps"]`` lists ``[first game, alpha, alpha_half]`` of each stretch;
``--hidden`` on a resumed run grows the network, :func:`grow`). A game stops at the
first position with both sides all home: from there the exact bear-off tables
(engines/bearoff.py) are the outcome, and the network is never asked about such positions
(``meta["bearoff_from"]``: the first game trained so; earlier games were played out).

``--variant`` (long by default, or short) picks the game and its feature module
(engines/features.py: the inputs, the outcomes, the exact values); the checkpoint and the
weights are the variant's (``engines/weights/<variant>.ckpt.npz`` and ``<variant>.npz``).

Reproducible and resumable: game ``i`` of a run with ``--seed S`` throws its dice from a
generator seeded with ``(S, i)`` and the weights start from ``S``, so the same command
reproduces the same weights, whether it ran at once or was stopped and resumed from its
checkpoint (``--checkpoint``, written atomically every ``--checkpoint-every`` games; a run
resumes from it when it exists). With ``--workers W``, W games at a time are played in W
processes with the same weights and then learned from in game order, so the weights depend
on W but never on timing; ``meta["workers"]`` lists ``[first game, W]`` for each stretch.
Every ``--eval-every`` games the network (0 ply) plays ``--eval-pairs`` duplicate-dice
pairs against the greedy engine; the results go to the log and to
``<checkpoint>.log.jsonl``. ``--export`` writes the shipped (float32) weights.

With ``--average-from G`` the export (and the evaluations) use the **mean of the weights
at every checkpoint from game G on** (Polyak averaging: the steps of TD self-play keep
the weights jittering around where the play has settled; their mean plays a little
better). The running mean is kept in the checkpoint (``avg_*`` arrays, ``meta["average"]``)
and depends only on the games, like the weights.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

import numpy as np

from engines import fit
from engines.arena import pair_score, rate_ci
from engines.features import features
from engines.network import Network
from engines.selfplay import game_rng, self_play, td_targets


def default_checkpoint(variant: str) -> Path:
    """Where a variant's training checkpoint is kept in the repository."""
    return features(variant).weights.with_name(f"{variant}.ckpt.npz")


def learn(net: Network, x: np.ndarray, g: np.ndarray, alpha: float) -> float:
    """One gradient step of ``sum |g - V(x)|^2 / 2``; returns the mean squared error."""
    h, y = net.forward(x)
    err = y - g
    dy = err * y * (1.0 - y)
    dh = (dy @ net.w2.T) * h * (1.0 - h)
    net.w2 -= alpha * (h.T @ dy)
    net.b2 -= alpha * dy.sum(0)
    net.w1 -= alpha * (x.T @ dh)
    net.b1 -= alpha * dh.sum(0)
    net.changed()
    return float((err**2).mean())


def grow(net: Network, hidden: int, seed: int) -> Network:
    """``net`` with ``hidden`` hidden units: the new units get small random input weights
    (from ``seed`` and the game count, so a resumed run is reproducible) and zero output
    weights, so the grown network plays exactly like ``net`` until training moves them.
    ``meta["grown"]`` lists ``[game, units before, units after]`` for each growth."""
    games = int(net.meta["games"])
    rng = np.random.default_rng([seed, games, hidden])
    extra = hidden - net.hidden
    w1 = np.hstack(
        [net.w1, rng.normal(0.0, 1.0 / np.sqrt(net.w1.shape[0]), (net.w1.shape[0], extra))]
    )
    w2 = np.vstack([net.w2, np.zeros((extra, net.w2.shape[1]))])
    meta = dict(net.meta, hidden=hidden)
    meta["grown"] = [*net.meta.get("grown", []), [games, net.hidden, hidden]]
    b1 = np.concatenate([net.b1, np.zeros(extra)])
    return Network(w1, b1, w2, net.b2.copy(), meta=meta, variant=net.variant)


def evaluate(net: Network, pairs: int, seed: int, at: int) -> dict:
    """The network at 0 ply against greedy over duplicate-dice pairs."""
    from engines.greedy import GreedyEngine
    from engines.neural import NetworkEngine

    rules = net.features.rules
    me = NetworkEngine(level=2, network=net, max_seconds=None, rules=rules)
    other = GreedyEngine(rules=rules)
    t0 = time.perf_counter()
    scores = [pair_score(me, other, 10**9 + seed * 10**6 + at + i) for i in range(pairs)]
    rate, lo, hi = rate_ci([s[0] for s in scores])
    net_pts = sum(s[1] for s in scores) / len(scores)
    return {
        "games": at,
        "vs": "greedy",
        "pairs": pairs,
        "win_rate": round(rate, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
        "net_points_per_game": round(net_pts, 4),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m engines.train", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--games", type=int, default=20_000, help="train until this many games in all")
    ap.add_argument("--variant", default="long", choices=["long", "short"], help="the game")
    ap.add_argument("--seed", type=int, default=1, help="seed of the weights and the dice")
    ap.add_argument(
        "--hidden",
        type=int,
        default=None,
        help="hidden units (default 80); resuming with more grows the checkpoint's network",
    )
    ap.add_argument("--alpha", type=float, default=0.1, help="step size at the start")
    ap.add_argument(
        "--alpha-half", type=float, default=10_000, help="games until the step is alpha/sqrt(2)"
    )
    ap.add_argument("--lam", type=float, default=0.7, help="TD lambda")
    ap.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="default engines/weights/<variant>.ckpt.npz",
    )
    ap.add_argument("--checkpoint-every", type=int, default=500)
    ap.add_argument("--eval-every", type=int, default=2000, help="0: never")
    ap.add_argument("--eval-pairs", type=int, default=50)
    ap.add_argument("--export", type=Path, default=None, help="write shipped weights here too")
    ap.add_argument("--fresh", action="store_true", help="ignore an existing checkpoint")
    ap.add_argument(
        "--average-from",
        type=int,
        default=None,
        help="export the mean of the weights at every checkpoint from this game on",
    )
    ap.add_argument(
        "--races",
        action="store_true",
        help="stop each game at its first race position, learning the race model's values "
        "(kept by the checkpoint from then on)",
    )
    ap.add_argument(
        "--fit-rounds",
        type=int,
        default=0,
        help="after the TD games, fit the network in this many rounds in all (engines/fit.py)",
    )
    ap.add_argument("--fit-games", type=int, default=fit.Settings.games, help="value games")
    ap.add_argument(
        "--fit-candidate-games",
        type=int,
        default=fit.Settings.candidate_games,
        help="games whose candidate plays are labelled by lookahead",
    )
    ap.add_argument(
        "--fit-share",
        type=float,
        default=fit.Settings.candidate_share,
        help="share of those games' turns whose candidate plays are labelled",
    )
    ap.add_argument(
        "--fit-candidates", type=int, default=fit.Settings.candidates, help="best plays labelled"
    )
    ap.add_argument(
        "--fit-depth", type=int, default=fit.Settings.depth, help="lookahead of their labels"
    )
    ap.add_argument("--fit-epochs", type=int, default=fit.Settings.epochs)
    ap.add_argument(
        "--fit-chunk", type=int, default=fit.Settings.chunk, help="games per saved part of data"
    )
    ap.add_argument(
        "--fit-window",
        type=int,
        default=fit.Settings.window,
        help="fit on this round's data and that of the rounds before it, this many in all",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="self-play processes; each batch of this many games is played with the same "
        "weights, so the weights depend on it (the checkpoint records it from each game on)",
    )
    args = ap.parse_args(argv)

    ckpt: Path = args.checkpoint or default_checkpoint(args.variant)
    if ckpt.exists() and not args.fresh:
        net = Network.load(ckpt)
        done = int(net.meta["games"])
        if net.variant != args.variant:
            print(f"{ckpt}: a {net.variant} nardy network; use --variant", file=sys.stderr)
            return 2
        if net.meta.get("seed") != args.seed:
            print(
                f"{ckpt}: a run with seed {net.meta.get('seed')}; use --fresh or its seed",
                file=sys.stderr,
            )
            return 2
        net.meta.setdefault("workers", [[0, 1]])  # checkpoints from before --workers
        print(f"resuming {ckpt} at game {done}", file=sys.stderr)
        if fit.rounds(net) and args.games > done:
            print(f"{ckpt}: fitted in rounds; TD games cannot follow them", file=sys.stderr)
            return 2
        if args.hidden is not None and args.hidden != net.hidden:
            if args.hidden < net.hidden or net.meta.get("average"):
                print(
                    f"{ckpt}: {net.hidden} hidden units can only grow (and not while averaging)",
                    file=sys.stderr,
                )
                return 2
            net = grow(net, args.hidden, args.seed)
    else:
        hidden = args.hidden or 80
        net = Network.random(hidden, seed=args.seed, variant=args.variant)
        net.meta.update(seed=args.seed, games=0, hidden=hidden, seconds=0.0)
        done = 0
    net.meta.setdefault("bearoff_from", done)  # games from here on stop at the tables
    if args.races:
        net.meta.setdefault("races_from", done)  # ... and from here on at the first race
    # self-play judges races before all home by the network (as the shipped run did until
    # game meta["races_from"]) or, from then on, stops there with the race model's values
    net.races = "races_from" in net.meta
    # [first game, alpha, alpha_half] of each stretch (checkpoints from before: one stretch)
    steps = net.meta.setdefault(
        "steps",
        [[0, net.meta.get("alpha", args.alpha), net.meta.get("alpha_half", args.alpha_half)]],
    )
    if steps[-1][1:] != [args.alpha, args.alpha_half]:
        steps.append([done, args.alpha, args.alpha_half])
    net.meta.update(
        alpha=args.alpha,
        alpha_half=args.alpha_half,
        lam=args.lam,
        method="TD(lambda) self-play at 0 ply, offline lambda-returns per game",
    )
    log_path = ckpt.with_name(ckpt.name + ".log.jsonl")
    trained_before = float(net.meta.get("seconds", 0.0))
    average = _Average.start(net, ckpt if done else None, args.average_from)
    if isinstance(average, str):
        print(f"{ckpt}: {average}", file=sys.stderr)
        return 2

    def save() -> None:
        net.meta["games"] = done
        net.meta["seconds"] = round(trained_before + time.perf_counter() - t0, 1)
        net.save(ckpt, dtype=np.float64, **(average.arrays() if average else {}))
        if args.export:
            (average.network(net) if average else net).save(args.export)

    def note(record: dict) -> None:
        print(json.dumps(record), file=sys.stderr, flush=True)
        with open(log_path, "a") as f:
            f.write(json.dumps(record) + "\n")

    schedule = net.meta.setdefault("workers", [[0, args.workers]])
    if schedule[-1][1] != args.workers:
        schedule.append([done, args.workers])
    pool = None
    if args.workers > 1:
        import multiprocessing

        # forkserver, not fork: a plain fork of a process with gRPC threads (the test
        # suite's, any caller's) can deadlock in the child
        pool = multiprocessing.get_context("forkserver").Pool(args.workers)
    signal.signal(signal.SIGTERM, _interrupt)  # a stopped session saves its checkpoint
    t0 = time.perf_counter()
    window_t, window_games, mse_sum, turns_sum = t0, 0, 0.0, 0
    progress = _progress()
    fitting = False
    try:
        while done < args.games:
            stop = min(done + args.workers, args.games)
            for every in (args.checkpoint_every, args.eval_every):
                if every:  # a batch never crosses a checkpoint or an evaluation
                    stop = min(stop, (done // every + 1) * every)
            batch = list(range(done, stop))
            if pool is None:
                games = [_play_game((None, args.seed, i, net.races, None), net) for i in batch]
            else:  # the same weights for the whole batch, learned from in game order
                weights = (net.w1, net.b1, net.w2, net.b2)
                jobs = [(weights, args.seed, i, net.races, net.variant) for i in batch]
                games = pool.map(_play_game, jobs)
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])  # learn a batch whole
            for x, outcome in games:
                v = net.forward(x)[1]
                alpha = args.alpha / np.sqrt(1.0 + done / args.alpha_half)
                mse_sum += learn(net, x, td_targets(v, outcome, args.lam), alpha)
                turns_sum += len(x)
                done += 1
                window_games += 1
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
            progress("self-play games", done, args.games)
            if done % args.checkpoint_every == 0 or done == args.games:
                if average and done % args.checkpoint_every == 0:
                    average.add(net, done)
                save()
                now = time.perf_counter()
                note(
                    {
                        "games": done,
                        "games_per_hour": round(3600 * window_games / (now - window_t)),
                        "turns_per_game": round(turns_sum / window_games, 1),
                        "mse": round(mse_sum / window_games, 5),
                        "hours": round(net.meta["seconds"] / 3600, 3),
                    }
                )
                window_t, window_games, mse_sum, turns_sum = now, 0, 0.0, 0
            if args.eval_every and done % args.eval_every == 0:
                judged = average.network(net) if average else net
                note(evaluate(judged, args.eval_pairs, args.seed, done) | _which(judged))
                window_t = time.perf_counter()
        if args.fit_rounds > fit.rounds(net):
            fitting = True
            settings = fit.Settings(
                games=args.fit_games,
                candidate_games=args.fit_candidate_games,
                candidate_share=args.fit_share,
                candidates=args.fit_candidates,
                depth=args.fit_depth,
                epochs=args.fit_epochs,
                chunk=args.fit_chunk,
                window=args.fit_window,
            )
            work = ckpt.with_name(ckpt.name + ".fit")
            work.mkdir(exist_ok=True)
            while fit.rounds(net) < args.fit_rounds:
                rnd = fit.rounds(net)
                net = fit.run_round(net, args.seed, rnd, settings, work, pool, note, progress)
                net.save(ckpt, dtype=np.float64)
                if args.export:
                    net.save(args.export)
                if args.eval_pairs:
                    note(evaluate(net, args.eval_pairs, args.seed, 10**6 * (rnd + 1)))
    except KeyboardInterrupt:
        if fitting:  # the checkpoint holds the last round done; the round's work is saved
            print(f"\ninterrupted: {fit.rounds(net)} fitting rounds in {ckpt}", file=sys.stderr)
        else:
            save()
            print(f"\ninterrupted: checkpoint at game {done} in {ckpt}", file=sys.stderr)
        return 130
    finally:
        progress(None)
        if pool is not None:
            pool.terminate()
    return 0


_PARTS = ("w1", "b1", "w2", "b2")


class _Average:
    """The running mean of the weights at the checkpoints from game ``first`` on."""

    def __init__(self, first: int, count: int = 0, mean: list | None = None) -> None:
        self.first, self.count, self.mean = first, count, mean

    @classmethod
    def start(cls, net: Network, ckpt: Path | None, first: int | None) -> _Average | str | None:
        """The average kept in ``net``'s checkpoint, or a new one from game ``first``; a
        string saying why not when the two disagree."""
        kept = net.meta.get("average")
        if kept is None:
            if first is None:
                return None
            if ckpt is not None and first < int(net.meta["games"]):
                return f"--average-from {first}: the checkpoint is past game {first}"
            net.meta["average"] = {"from": first, "checkpoints": 0}
            return cls(first)
        if first is not None and first != kept["from"]:
            return f"the checkpoint averages from game {kept['from']}, not {first}"
        with np.load(ckpt) as f:
            mean = [f["avg_" + k] for k in _PARTS] if kept["checkpoints"] else None
        return cls(kept["from"], kept["checkpoints"], mean)

    def add(self, net: Network, games: int) -> None:
        if games < self.first:
            return
        self.count += 1
        w = [getattr(net, k) for k in _PARTS]
        if self.mean is None:
            self.mean = [a.copy() for a in w]
        else:
            for m, a in zip(self.mean, w, strict=True):
                m += (a - m) / self.count
        net.meta["average"] = {"from": self.first, "checkpoints": self.count}

    def arrays(self) -> dict[str, np.ndarray]:
        return (
            {}
            if self.mean is None
            else {"avg_" + k: m for k, m in zip(_PARTS, self.mean, strict=True)}
        )

    def network(self, net: Network) -> Network:
        """The averaged weights (``net`` itself until the first checkpoint is averaged)."""
        if self.mean is None:
            return net
        return Network(*self.mean, meta=net.meta, variant=net.variant)


def _which(net: Network) -> dict:
    kept = net.meta.get("average")
    return {"average": kept} if kept and kept["checkpoints"] else {}


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _play_game(job: tuple, net: Network | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Self-play game ``i`` with the given weights: its encoded positions and outcome."""
    weights, seed, i, races, variant = job
    if net is None:
        net = Network(*weights, variant=variant)
        net.races = races  # as in main()
    states, outcome = self_play(net, game_rng(seed, i, net.variant))
    return net.features.encode(states), outcome


def _progress():
    """Rich progress bars on a terminal, one per label; nothing otherwise (the log lines
    report). ``update(label, n, total)`` moves a bar, ``update(None)`` ends them all."""
    if not sys.stderr.isatty():
        return lambda *args: None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=False,
    )
    bar.start()
    tasks: dict[str, int] = {}

    def update(label: str | None, n: int = 0, total: int = 0) -> None:
        if label is None:
            bar.stop()
        elif label not in tasks:
            tasks[label] = bar.add_task(label, total=total, completed=n)
        else:
            bar.update(tasks[label], completed=n)

    return update


if __name__ == "__main__":
    sys.exit(main())
