"""The exact one-sided bear-off database of long nardy (and of short nardy: bearing off is
the same, RULES.md §4 and §8), and race values from it: exact when both sides are all
home, approximate before.

**Positions.** A side with every checker on board in its home (points 6..1, RULES.md §4.1)
has one of C(21, 6) = 54,264 *home boards*: 0..15 checkers spread over six points (the
rest borne off). In a race (no checker of either side in front of the other's, so neither
side can ever block the other again) the side's turns do not depend on the opponent at all.

**Tables** (:class:`Bearoff`), for every home board:

* ``off[i, n]``: the probability that bearing off all its checkers takes exactly ``n``
  turns, when every turn is played to bear off in the fewest turns on average (the play
  whose end board has the smallest mean);
* ``first[i, n]``: for the 15-checker boards, the probability that its first checker
  comes off in exactly ``n`` turns, each turn played to bring one off soonest on average
  (how a side that has borne off nothing plays to escape a mars, RULES.md §5).

Both are computed from the rules core's own legal plays (:func:`nardy.legal_plays` on a
board with the opponent out of the way), in pip order, the 21 rolls weighted 1/36 or
2/36: ``python -m engines.bearoff`` builds them (~35 s of one core) into the shipped
file :data:`SHIPPED` (float32, ~1 MB); a first use without that file builds them into
:data:`CACHE`.

**Race values** (:func:`race_values`): when both sides are all home, the side on roll
wins when its turns ``n`` are no more than the opponent's (it moves first); it wins by
mars when the opponent, with nothing borne off, takes at least ``n`` turns to bring its
first checker off; and it loses by mars when its own first checker takes longer than the
opponent's bear-off. The win chances are exact for play that minimises the mean number of
turns (a near-perfect race strategy); the mars chances treat a side that has borne off
nothing as playing for its first checker off, so a side that could both save the mars and
race has its two aims weighed separately (independent marginals).

**Races before all home** (:meth:`Bearoff.race_values` of sides with checkers still
outside home, the sides having passed each other: each side's turns still do not depend on
the other's): a side's distributions are approximated by those of its home board with
every outside checker put on point 6, delayed by the turns its rolls need to cover the
``x`` pips from those checkers to point 6 (a normal law with the mean ``x / mu`` and the
variance ``x sigma^2 / mu^3`` of a renewal count, ``mu`` = 8.17 and ``sigma^2`` the mean
and variance of a roll's pips, a double counted four times; rounded to whole turns). Pips
past point 6 are not lost: a checker that comes home deeper saves them in the bear-off,
which the table of the board with it on point 6 charges. Against rollouts that end in the
exact tables (both sides playing the network's 0-ply choice, 200 each) on 327 such
positions of 400 self-play games: a mean error of 0.033 points of equity, the network's
own 0.079 (``python -m bench race``; docs/ENGINES.md, "The network engine").
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from nardy import CHECKERS, Color, Position, legal_plays

HOME = 6
TURNS = 24  # turns tracked: the slowest board (15 on point 6) never needs more than 21
ROLLS = tuple(((a, b), (1 if a == b else 2) / 36) for a in range(1, 7) for b in range(1, a + 1))
VERSION = 1
#: The shipped tables (``python -m engines.bearoff`` rebuilds them), and where they are
#: built and kept when that file is missing (e.g. a trimmed install).
SHIPPED = Path(__file__).with_name("weights") / f"bearoff-v{VERSION}.npz"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nardy" / SHIPPED.name

_RADIX = 16 ** np.arange(HOME, dtype=np.int64)  # key of a home board: base-16 digits
#: A roll's pips (a double is played four times), over the 36 rolls.
ROLL_PIPS = np.array([4 * a if a == b else a + b for a in range(1, 7) for b in range(1, 7)], float)
RACE_TURNS = 72  # turns tracked before all home (the farthest race needs ~33 + 21 + spread)
MAX_OUTSIDE = CHECKERS * (24 - HOME)  # most pips to point 6 (all on point 24)


def boards() -> np.ndarray:
    """``(54264, 6)``: every home board (checkers on points 1..6), in key order."""
    rows: list[tuple[int, ...]] = [()]
    for _ in range(HOME):  # extend by one point, keeping at most 15 checkers in all
        rows = [r + (n,) for r in rows for n in range(CHECKERS + 1 - sum(r))]
    b = np.array(rows, dtype=np.int64)
    return b[np.argsort(b @ _RADIX)]


def _position(home: np.ndarray) -> Position:
    """White to move with ``home`` (points 1..6) and black out of the way (all on its point
    1, which is in front of white's home along black's path: no six-point rule binds)."""
    board = [0] * 24
    for p in range(1, HOME + 1):
        board[24 - p] = int(home[p - 1])
    board[11] = -CHECKERS
    return Position(Color.WHITE, tuple(board))


def build(
    progress: bool = False, limit: int = CHECKERS, position=None, rules=None
) -> tuple[np.ndarray, np.ndarray]:
    """Compute the ``off`` and ``first`` tables (see the module docstring); with ``limit``,
    only the rows of boards with at most that many checkers (the others stay zero).

    The plays are long nardy's unless ``rules`` (a :class:`nardy.Variant`) and
    ``position`` (a home board -> that variant's position with white to move, white's
    point ``p`` at absolute index ``24 - p`` and black out of the way) say otherwise:
    bearing off is the same in short nardy (§4, §8), and the tables are the same."""
    legal = legal_plays if rules is None else rules.legal_plays
    position = position or _position
    b = boards()
    keys = b @ _RADIX
    n = len(b)
    pips = b @ np.arange(1, HOME + 1)
    off = np.zeros((n, TURNS))
    first = np.zeros((n, TURNS))
    mean_off = np.zeros(n)
    mean_first = np.zeros(n)
    full = b.sum(1) == CHECKERS
    off[0, 0] = 1.0  # key 0: everything borne off
    first[~full, 0] = 1.0
    t0 = time.perf_counter()
    for done, i in enumerate(np.argsort(pips, kind="stable")):
        if i == 0 or b[i].sum() > limit:
            continue
        pos = position(b[i])
        for dice, w in ROLLS:
            ends = np.array([p.end.board[24 - HOME :][::-1] for p in legal(pos, dice)])
            j = np.searchsorted(keys, ends @ _RADIX)
            best = j[np.argmin(mean_off[j])]
            off[i, 1:] += w * off[best, :-1]
            if full[i]:
                best = j[np.argmin(mean_first[j])]
                first[i, 1:] += w * first[best, :-1]
        mean_off[i] = off[i] @ np.arange(TURNS)
        mean_first[i] = first[i] @ np.arange(TURNS)
        if progress and done % 5000 == 0:
            print(
                f"  bear-off: {done}/{n} boards, {time.perf_counter() - t0:.0f} s", file=sys.stderr
            )
    return off, first


def delays() -> np.ndarray:
    """``(MAX_OUTSIDE + 1, RACE_TURNS)``: for ``x`` pips to cover, the chance that covering
    them takes ``k`` turns (the normal law of the module docstring, rounded; 0 pips: 0)."""
    mu, var = ROLL_PIPS.mean(), ROLL_PIPS.var()
    x = np.arange(MAX_OUTSIDE + 1, dtype=float)[:, None]
    z = (np.arange(RACE_TURNS + 1) - 0.5 - x / mu) / np.maximum(np.sqrt(x * var / mu**3), 1e-9)
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    p = np.diff(cdf, axis=1)
    p[:, 0] += cdf[:, 0]  # the normal law's mass below 0 turns: none
    p[p < 1e-12] = 0.0  # its far tails: none (the sums to search shorten)
    return p


def _delayed(d: np.ndarray, delay: np.ndarray) -> np.ndarray:
    """``(N, RACE_TURNS)``: the sum of turns with distributions ``d`` (N, TURNS) and
    ``delay`` (N, RACE_TURNS), independent."""
    out = np.zeros((len(d), RACE_TURNS))
    out[:, :TURNS] = d * delay[:, :1]
    ks = np.flatnonzero(delay[:, 1:].any(0)) + 1
    for k in ks[ks <= RACE_TURNS - TURNS]:  # the farthest races stop short of that
        out[:, k : k + TURNS] += d * delay[:, k : k + 1]
    return out


class Bearoff:
    """The tables of one-sided bear-off distributions, looked up by home board."""

    def __init__(self, off: np.ndarray, first: np.ndarray) -> None:
        self.keys = boards() @ _RADIX
        self.off = off
        self.first = first
        self.delays = delays()

    def index(self, home: np.ndarray) -> np.ndarray:
        """Row of each home board ``(N, 6)`` (checkers on points 1..6)."""
        return np.searchsorted(self.keys, home @ _RADIX)

    def mean_turns(self, home: np.ndarray) -> np.ndarray:
        return self.off[self.index(home)] @ np.arange(TURNS)

    def turns(self, side: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distributions ``(N, RACE_TURNS)`` of the turns to bear off all and to bear
        off the first checker of sides with checkers ``side`` (N, k) on their points
        1..k (k >= 6) in a race: the tables' when all home, else approximated (module
        docstring)."""
        home = side[:, :HOME].copy()
        outside = side[:, HOME:]
        home[:, HOME - 1] += outside.sum(1)
        delay = self.delays[outside @ np.arange(1, outside.shape[1] + 1)]
        i = self.index(home)
        return _delayed(self.off[i], delay), _delayed(self.first[i], delay)

    def race_values(self, mover: np.ndarray, other: np.ndarray) -> np.ndarray:
        """``(N, 3)`` (win, win mars, loss mars) of the side on roll with checkers
        ``mover`` on its points 1..k against ``other`` (both ``(N, k)``, k >= 6; a race,
        game not over): exact when both sides are all home, else approximate."""
        d_me, first_me = self.turns(mover)
        d_them, first_them = self.turns(other)
        win = (d_me * _at_least(d_them)).sum(1)  # I move first: my n turns <= theirs
        # the opponent's first checker off no sooner than my n-th turn: first >= n
        win_mars = (d_me * _at_least(first_them)).sum(1)
        win_mars[other.sum(1) < CHECKERS] = 0.0
        loss_mars = (d_them * (_at_least(first_me) - first_me)).sum(1)  # my first > n
        loss_mars[mover.sum(1) < CHECKERS] = 0.0
        return np.stack([win, win_mars, loss_mars], axis=1)


def _at_least(d: np.ndarray) -> np.ndarray:
    """P(turns >= n) for n = 0, 1, .. of distributions ``d`` (N, turns)."""
    return np.cumsum(d[:, ::-1], axis=1)[:, ::-1]


_TABLE: Bearoff | None = None


def table() -> Bearoff:
    """The bear-off tables: the shipped file, else :data:`CACHE`, else built (~20-50 s)
    and written to the cache."""
    global _TABLE
    if _TABLE is None:
        for path in (SHIPPED, CACHE):
            try:
                with np.load(path) as f:
                    off, first = f["off"], f["first"]
                break
            except (OSError, KeyError, ValueError):
                continue
        else:
            off, first = build()
            save(off, first, CACHE)
        _TABLE = Bearoff(off.astype(np.float64), first.astype(np.float64))
    return _TABLE


def save(off: np.ndarray, first: np.ndarray, path: Path) -> None:
    """Write the tables atomically (a cache: a failed write only costs a rebuild later)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, off=off.astype(np.float32), first=first.astype(np.float32))
        os.replace(tmp, path)
    except OSError as e:
        print(f"bear-off tables not cached ({e})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m engines.bearoff", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--out", type=Path, default=SHIPPED, help=f"default {SHIPPED}")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    off, first = build(progress=True)
    save(off, first, args.out)
    print(f"bear-off tables: {len(off)} boards in {time.perf_counter() - t0:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
