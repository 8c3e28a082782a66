"""Fitting rounds of the value network after TD(lambda): ``engines.train --fit-rounds N``.

TD(lambda) self-play (engines/train.py) left the network far from the values of its own play
(an equity error of ~0.18 points against rollouts: engines/weights/README.md) and, on the
end positions of the plays it does *not* choose, inconsistent with its own one-roll lookahead:
the positions a choice compares, which self-play never visits. Each **round** makes two data
sets with the current network N and fits N to them (a form of expert iteration):

* **value positions**: ``games`` self-play games at 0 ply, each stopped where exact values
  take over (long nardy: its first race, valued by the race model, as ``--races`` does; short
  nardy: both sides all home, the bear-off tables); ``positions`` positions drawn at random
  from each game, labelled by their lambda-return with ``lam`` = 0.95
  (:func:`engines.train.td_targets`: mostly the game's outcome, a little of N's own values
  along the way);
* **candidate positions**: in ``candidate_games`` other self-play games, at a share
  ``candidate_share`` of the turns, the end positions of the best ``candidates`` plays by N
  (except finished games and the positions play values exactly, which the network is never
  asked about), each labelled by N's lookahead ``depth`` rolls deep
  (:func:`engines.network.lookahead`; 1: the average over the next roll of the opponent's
  best reply), the search the full level plays with.

N is then fitted to this round's data and that of the ``window - 1`` rounds before (those
found in the work directory) by minibatch Adam on the cross-entropy of the outputs,
``epochs`` passes with a cosine-decayed step from ``lr``, 1 game in 20 held out to report
the fit.

Reproducible and resumable: every game's dice and draws come from ``(seed, round, game)``,
the data of a round are made in chunks of ``chunk`` games with the same weights and saved as
they finish (``<checkpoint>.fit/``, not shipped: they can be made again), the fit saves its
weights and Adam moments after every epoch and each epoch's order comes from ``(seed, round,
epoch)``, so an interrupted round resumes to the same weights. A finished round updates the
checkpoint (``meta["fit"]``: the rounds done, the settings, the seconds) and the export.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from engines.features import Features
from engines.network import Network, equity, flip, lookahead
from engines.selfplay import self_play, td_targets
from nardy.game import Color

Position = Any  # a position of the network's variant


@dataclass(frozen=True)
class Settings:
    """One round's work (see the module docstring)."""

    games: int = 60_000
    positions: int = 20
    lam: float = 0.95
    candidate_games: int = 4_000
    candidate_share: float = 0.25
    candidates: int = 6
    depth: int = 1
    epochs: int = 6
    lr: float = 3e-4
    batch: int = 256
    window: int = 2
    chunk: int = 2_000


class Data(NamedTuple):
    """Labelled positions: packed boards ``(n, width)`` int8 (``Features.pack``), the sides
    to move ``(n,)``, the labels ``(n, outputs)`` for the side to move, and the game each
    came from."""

    boards: np.ndarray
    turns: np.ndarray
    labels: np.ndarray
    games: np.ndarray

    @classmethod
    def of(cls, f: Features, positions: list[Position], labels, game: int) -> Data:
        n = len(positions)
        return cls(
            np.frombuffer(b"".join(map(f.pack, positions)), np.int8).reshape(n, f.width),
            np.array([p.turn.value for p in positions], np.int8),
            np.asarray(labels, np.float32).reshape(n, f.outputs),
            np.full(n, game, np.int32),
        )

    @classmethod
    def join(cls, parts: list[Data]) -> Data:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls._fields))

    def positions(self, f: Features) -> list[Position]:
        rows = zip(self.boards, self.turns.tolist(), strict=True)
        return [f.position(b, Color(t)) for b, t in rows]


def _rng(seed: int, rnd: int, kind: str, game: int) -> random.Random:
    return random.Random(f"nardy-fit:{seed}:{rnd}:{kind}:{game}")


def value_game(net: Network, seed: int, rnd: int, game: int, s: Settings) -> Data:
    """One self-play game to where exact values take over; ``s.positions`` of its positions
    with their lambda-returns."""
    states, outcome = self_play(net, _rng(seed, rnd, "dice", game))
    g = td_targets(net.values(states), outcome, s.lam)
    draw = _rng(seed, rnd, "draw", game)
    keep = sorted(draw.sample(range(len(states)), min(s.positions, len(states))))
    return Data.of(net.features, [states[t] for t in keep], g[keep], game)


def candidate_game(net: Network, seed: int, rnd: int, game: int, s: Settings) -> Data:
    """One self-play game to where exact values take over; at a share of its turns, the end
    positions of the best plays by the network, labelled by its lookahead."""
    draw = _rng(seed, rnd, "draw", game)
    ends: list[Position] = []
    f = net.features

    def visit(pos: Position, boards: bytes, v: np.ndarray) -> None:
        if len(v) < 2 or draw.random() >= s.candidate_share:
            return
        turn = pos.turn.opponent
        for j in np.argsort(-equity(v), kind="stable")[: s.candidates]:
            end = f.position(boards[int(j) * f.width : (int(j) + 1) * f.width], turn)
            if not f.over(end) and not f.stop(end, races=True):  # not valued exactly at play
                ends.append(end)

    self_play(net, _rng(seed, rnd, "dice", game), visit)
    labels = [flip(lookahead(net, e, depth=s.depth)) for e in ends]  # for the side to move
    return Data.of(f, ends, labels, game)


KINDS: dict[str, Callable[[Network, int, int, int, Settings], Data]] = {
    "values": value_game,
    "candidates": candidate_game,
}


def _job(job: tuple) -> Data:
    weights, variant, kind, seed, rnd, game, s = job
    net = Network(*weights, variant=variant)
    return KINDS[kind](net, seed, rnd, game, s)


def make_data(
    net: Network, kind: str, seed: int, rnd: int, s: Settings, work: Path, pool, note, progress
) -> Data:
    """A round's data of one kind, chunk by chunk (chunks already saved are read back)."""
    total = s.games if kind == "values" else s.candidate_games
    parts = []
    for start in range(0, total, s.chunk):
        path = work / f"round{rnd}-{kind}-{start}.npz"
        if not path.exists():
            t0 = time.perf_counter()
            games = range(start, min(start + s.chunk, total))
            if pool is None:
                got = [KINDS[kind](net, seed, rnd, g, s) for g in games]
            else:
                weights = (net.w1, net.b1, net.w2, net.b2)
                jobs = [(weights, net.variant, kind, seed, rnd, g, s) for g in games]
                got = pool.map(_job, jobs)
            tmp = path.with_name(path.name + ".tmp.npz")
            np.savez(tmp, **Data.join(got)._asdict())
            tmp.replace(path)
            games = min(start + s.chunk, total)
            note(
                {
                    "round": rnd,
                    kind: games,
                    "of": total,
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            )
        with np.load(path) as f:
            parts.append(Data(*(f[k] for k in Data._fields)))
        progress(f"round {rnd}: {kind}", min(start + s.chunk, total), total)
    return Data.join(parts)


def inputs(f: Features, data: Data) -> np.ndarray:
    """The network inputs of the data's positions, as float16 (exact for the unit inputs;
    the others to ~1e-3) to keep millions of them in memory."""
    x = np.empty((len(data.turns), f.size), np.float16)
    step = 50_000
    for i in range(0, len(x), step):
        part = Data(*(a[i : i + step] for a in data))
        for turn in Color:  # packed boards of one side to move at a time
            rows = np.flatnonzero(part.turns == turn.value)
            if len(rows):
                boards = np.ascontiguousarray(part.boards[rows]).tobytes()
                x[i + rows] = f.board_inputs(boards, turn)[0]
    return x


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 + 0.5 * np.tanh(0.5 * z)


def _forward(p: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = _sigmoid(x @ p[0] + p[1])
    return h, _sigmoid(h @ p[2] + p[3])


def losses(p: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> dict:
    """Cross-entropy, mean squared error of the outputs and of the equity, on ``(x, y)``."""
    out = np.concatenate(
        [_forward(p, x[i : i + 65536].astype(np.float32))[1] for i in range(0, len(x), 65536)]
    )
    out = np.clip(out, 1e-6, 1 - 1e-6)
    ce = -(y * np.log(out) + (1 - y) * np.log(1 - out)).mean()
    return {
        "ce": round(float(ce), 6),
        "mse": round(float(((out - y) ** 2).mean()), 6),
        "equity_mse": round(float(((equity(out) - equity(y)) ** 2).mean()), 6),
    }


def _params(net: Network) -> list[np.ndarray]:
    return [np.array(a, np.float32) for a in (net.w1, net.b1, net.w2, net.b2)]


def fit(
    net: Network,
    x: np.ndarray,
    y: np.ndarray,
    s: Settings,
    seed: int,
    rnd: int,
    state: Path,
    note: Callable[[dict], None],
    held: tuple[np.ndarray, np.ndarray],
) -> Network:
    """``net`` fitted to ``(x, y)`` by Adam (see the module docstring), resuming from the
    epoch saved in ``state``."""
    p = _params(net)
    m = [np.zeros_like(a) for a in p]
    v = [np.zeros_like(a) for a in p]
    first, step = 0, 0
    if state.exists():
        with np.load(state) as f:
            p, m, v = ([f[f"{k}{i}"] for i in range(4)] for k in "pmv")
            first, step = int(f["epoch"]) + 1, int(f["step"])
    b1, b2, eps = 0.9, 0.999, 1e-8
    for epoch in range(first, s.epochs):
        lr = s.lr * 0.5 * (1 + np.cos(np.pi * epoch / s.epochs))
        order = np.random.default_rng([seed, rnd, epoch]).permutation(len(x))
        t0 = time.perf_counter()
        for i in range(0, len(x), s.batch):
            idx = order[i : i + s.batch]
            xb = x[idx].astype(np.float32)
            h, out = _forward(p, xb)
            d = (out - y[idx]) / len(idx)  # the cross-entropy's gradient at the output sums
            dh = (d @ p[2].T) * h * (1 - h)
            grads = (xb.T @ dh, dh.sum(0), h.T @ d, d.sum(0))
            step += 1
            for a, g, mm, vv in zip(p, grads, m, v, strict=True):
                mm *= b1
                mm += (1 - b1) * g
                vv *= b2
                vv += (1 - b2) * g * g
                a -= lr * (mm / (1 - b1**step)) / (np.sqrt(vv / (1 - b2**step)) + eps)
        tmp = state.with_name(state.name + ".tmp.npz")
        arrays = {
            f"{k}{i}": a for k, arr in zip("pmv", (p, m, v), strict=True) for i, a in enumerate(arr)
        }
        np.savez(tmp, epoch=epoch, step=step, **arrays)
        tmp.replace(state)
        note(
            {
                "round": rnd,
                "epoch": epoch,
                "lr": float(lr),
                "held_out": losses(p, *held),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
    return Network(*(a.astype(np.float64) for a in p), meta=net.meta, variant=net.variant)


def run_round(
    net: Network, seed: int, rnd: int, s: Settings, work: Path, pool, note, progress
) -> Network:
    """One round: its data (made or read back), then the fit on it and the previous rounds'
    (``s.window``); the fitted network, its round noted in its ``meta``."""
    missing = missing_rounds(work, rnd, s.window)
    if missing:  # (fitted on less than the window, it would be recorded as the window)
        raise FileNotFoundError(
            f"round {rnd} fits on the data of rounds {missing} too (--fit-window {s.window}),"
            f" which {work} does not hold: make them again, or pass --fit-window 1"
        )
    started = time.perf_counter()
    net.races = True  # self-play stops where play takes exact values (long: the first race)
    data = {k: make_data(net, k, seed, rnd, s, work, pool, note, progress) for k in KINDS}
    sets = [data["values"], data["candidates"]]
    for back in range(1, s.window):
        for kind in KINDS:
            parts = sorted(work.glob(f"round{rnd - back}-{kind}-*.npz"))
            for path in parts:
                with np.load(path) as f:
                    sets.append(Data(*(f[k] for k in Data._fields)))
    everything = Data.join(sets)
    x, y = inputs(net.features, everything), everything.labels
    held = everything.games % 20 == 0
    note({"round": rnd, "positions": len(y), **{k: len(d.labels) for k, d in data.items()}})
    held_set = (x[held], y[held])
    state = work / f"round{rnd}-fit.npz"
    fitted = fit(net, x[~held], y[~held], s, seed, rnd, state, note, held_set)
    figures = {"positions": len(y), "held_out": losses(_params(fitted), *held_set)}
    record(fitted, s, time.perf_counter() - started, **figures)
    return fitted


def missing_rounds(work: Path, rnd: int, window: int) -> list[int]:
    """The earlier rounds whose data round ``rnd`` fits on (``window``) and ``work`` lacks."""
    earlier = range(max(0, rnd - window + 1), rnd)
    return [r for r in earlier if not all(any(work.glob(f"round{r}-{k}-*.npz")) for k in KINDS)]


def rounds(net: Network) -> int:
    """The fitting rounds that made ``net`` (``meta["fit"]``: one entry per round)."""
    return len(net.meta.get("fit", []))


def record(net: Network, s: Settings, seconds: float, **figures) -> None:
    """Note a finished round in ``net.meta["fit"]``: its settings, time and figures."""
    entry = {**asdict(s), "seconds": round(seconds, 1), **figures}
    net.meta["fit"] = [*net.meta.get("fit", []), json.loads(json.dumps(entry))]
