"""Offline tuning of the evaluation weights (not used at play time).

Self-play games with the current evaluation (1-ply, with a little exploration) record
every position and the game's outcome; logistic regression then fits the ``CONTACT``,
``RACE`` and ``MARS`` weights of :mod:`engines.evaluate` to those outcomes (Monte Carlo
regression). Beware: the fitted ``CONTACT`` weights predict outcomes well but played much
worse than the hand-tuned ones (they learn correlations of the self-play, not causes);
compare any new weights by play (``bench/strength.py``-style duplicate pairs) first.

    python -m engines.tune --games 2000 --out /tmp/selfplay.pkl     # generate
    python -m engines.tune --fit /tmp/selfplay.pkl                  # fit (needs numpy)

The fitting step needs numpy, which the project does not depend on: run it with any
Python that has numpy and can import this repository.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import pickle
import random

from engines import evaluate as ev
from nardy import Color, Position, legal_plays


def _record(pos: Position) -> tuple:
    """What the fit needs of a position, from white's point of view."""
    s, t = ev.sides(pos.board, Color.WHITE)
    on_s, on_t = sum(s), sum(t)
    roll = 1 if pos.turn is Color.WHITE else -1
    ps = sum(c * (i + 1) for i, c in enumerate(s))
    pt = sum(c * (i + 1) for i, c in enumerate(t))
    es, et = ev._epc(s, ps), ev._epc(t, pt)
    contact = ev._contact(s, t)
    f = None
    if contact:
        f = ev._contact_features(ev._side(s, t), ev._side(t, s), roll)
        f = tuple(f[name] for name in ev.FEATURES)
    scale = math.sqrt(ps + pt + 20)
    race = ((et - es) / scale, roll * 10 / scale)
    mars_w = ev._mars_lag(t, es) if on_t == 15 else None  # white winning a mars
    mars_b = ev._mars_lag(s, et) if on_s == 15 else None  # black winning a mars
    return contact, f, race, mars_w, mars_b, roll


def selfplay(args: tuple[int, int, float]) -> list[tuple]:
    """Play ``n`` games; returns ``(records, white_won, mars)`` per game."""
    n, seed, explore = args
    rng = random.Random(seed)
    games = []
    for _ in range(n):
        pos = Position.start()
        records = []
        while pos.winner is None:
            plays = legal_plays(pos, (rng.randint(1, 6), rng.randint(1, 6)))
            if not plays:
                pos = pos.passed()
                continue
            color = pos.turn
            scored = sorted(plays, key=lambda p: -ev.evaluate(p.end, color))
            if len(scored) > 1 and rng.random() < explore:
                pos = rng.choice(scored[:4]).end
            else:
                pos = scored[0].end
            records.append(_record(pos))
        white_won = pos.winner is Color.WHITE
        loser = pos.winner.opponent
        games.append((records, white_won, pos.borne_off(loser) == 0))
    return games


def generate(games: int, out: str, seed: int = 1, explore: float = 0.1, workers: int = 2) -> None:
    chunks = [
        (games // workers + (i < games % workers), seed * 1000 + i, explore) for i in range(workers)
    ]
    with multiprocessing.Pool(workers) as pool:
        data = [g for part in pool.map(selfplay, chunks) for g in part]
    with open(out, "wb") as f:
        pickle.dump(data, f)
    wins = sum(g[1] for g in data)
    mars = sum(g[2] for g in data)
    print(f"{len(data)} games, white won {wins}, mars {mars} -> {out}")


def _logistic(X, y, l2: float = 1e-3, fit_intercept: bool = False):
    import numpy as np

    X = np.asarray(X, float)
    y = np.asarray(y, float)
    if fit_intercept:
        X = np.hstack([np.ones((len(X), 1)), X])
    w = np.zeros(X.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(X @ w, -30, 30)))
        g = X.T @ (p - y) + l2 * len(X) * w
        h = (X * (p * (1 - p))[:, None]).T @ X + l2 * len(X) * np.eye(len(w))
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-7:
            break
    p = 1 / (1 + np.exp(-np.clip(X @ w, -30, 30)))
    loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
    return w, loss


def fit(path: str, skip: int = 0) -> None:
    with open(path, "rb") as f:
        data = pickle.load(f)
    cx, cy, rx, ry, mx, my = [], [], [], [], [], []
    for records, white_won, mars in data:
        y = 1.0 if white_won else 0.0
        for contact, f, race, mars_w, mars_b, roll in records[skip:]:
            if contact:
                cx.append(f)
                cy.append(y)
                cx.append(tuple(-v for v in f))
                cy.append(1 - y)
            else:
                rx.append(race)
                ry.append(y)
                rx.append(tuple(-v for v in race))
                ry.append(1 - y)
            if white_won and mars_w is not None:
                mx.append((mars_w, roll))
                my.append(1.0 if mars else 0.0)
            if not white_won and mars_b is not None:
                mx.append((mars_b, -roll))
                my.append(1.0 if mars else 0.0)
    w, loss = _logistic(cx, cy)
    print(f"CONTACT ({len(cx)} samples, log loss {loss:.4f}):")
    for name, v in zip(ev.FEATURES, w, strict=True):
        print(f'    "{name}": {v:.4f},')
    w, loss = _logistic(rx, ry)
    print(f"RACE ({len(rx)} samples, log loss {loss:.4f}): epc {w[0]:.4f} roll {w[1]:.4f}")
    w, loss = _logistic(mx, my, fit_intercept=True)
    print(
        f"MARS ({len(mx)} samples, log loss {loss:.4f}): bias {w[0]:.4f} lag {w[1]:.4f} "
        f"roll {w[2]:.4f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--games", type=int, default=1000)
    ap.add_argument("--out", default="/tmp/selfplay.pkl")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--explore", type=float, default=0.1)
    ap.add_argument("--fit", metavar="PATH")
    args = ap.parse_args()
    if args.fit:
        fit(args.fit)
    else:
        generate(args.games, args.out, args.seed, args.explore)


if __name__ == "__main__":
    main()
