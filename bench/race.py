"""How well races not yet all home are judged, by the network and by the race
model of engines/bearoff.py, against rollouts that end in the exact bear-off tables.

From each of ``--games`` self-play games of the network at 0 ply (seeded), one position is
drawn at random among its races not yet all home (the sides have passed each other,
RULES.md §3.2: no block can form again, but checkers are still outside home). Each is
rolled out ``--rollouts`` times, both sides playing the network's 0-ply choice, to the
first position both all home or the end of the game, whose values are exact (the tables,
RULES.md §4-5); the mean is the reference. Printed: the mean absolute error in equity
(points) and in each of win, win by mars and loss by mars, for the network alone
(``Network.races = False``) and for the race model (``Network.races = True``), and the
number of such positions per game.

``python -m bench race [--games 400] [--rollouts 200] [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import numpy as np


def main(quick: bool = False, argv: list[str] | None = None) -> None:
    from engines.features import equity, flip
    from engines.features_long import both_home, counts, race
    from engines.network import Network
    from nardy import Position, legal_plays, result

    ap = argparse.ArgumentParser(prog="python -m bench race")
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--rollouts", type=int, default=200)
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if quick or args.quick:
        args.games, args.rollouts = 20, 20
    net = Network.load()
    net.races = False  # the network's own values; the policy of every game below
    model = Network.load()

    def in_race(pos: Position) -> bool:
        b = np.array([pos.board])
        return bool(race(counts(b, np.array([pos.turn.value])))[0]) and not both_home(pos)

    def step(pos: Position, rng: random.Random) -> Position:
        plays = legal_plays(pos, (rng.randint(1, 6), rng.randint(1, 6)))
        if not plays:
            return pos.passed()
        return plays[int(np.argmax(equity(net.after(plays))))].end

    t0 = time.perf_counter()
    rng = random.Random(7)
    sample, found = [], 0
    for g in range(args.games):
        dice, pos, races = random.Random(5000 + g), Position.start(), []
        while result(pos) is None:
            if in_race(pos):
                races.append(pos)
            pos = step(pos, dice)
        found += len(races)
        if races:
            sample.append(races[rng.randrange(len(races))])
    truth = []
    for pos in sample:
        vs = []
        for _ in range(args.rollouts):
            end = pos
            while result(end) is None and not both_home(end):
                end = step(end, rng)
            v = net.values([end])[0]  # exact: decided, or both all home
            vs.append(v if end.turn is pos.turn else flip(v))
        truth.append(np.mean(vs, axis=0))
    truth = np.array(truth)
    print(
        f"{len(sample)} races not all home from {args.games} self-play games "
        f"({found / args.games:.1f} such positions per game), {args.rollouts} rollouts each, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    for name, n in (("network", net), ("race model", model)):
        v = n.values(sample)
        err = np.abs(equity(v) - equity(truth))
        w, wm, lm = np.abs(v - truth).mean(0)
        print(
            f"  {name:10s}: equity error mean {err.mean():.4f} max {err.max():.3f} points; "
            f"win {w:.4f}, win mars {wm:.4f}, loss mars {lm:.4f}"
        )


if __name__ == "__main__":
    main()
