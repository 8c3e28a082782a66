"""Long nardy's network inputs and exact values (engines/features.py).

**Outcomes** (``kinds`` = 2, RULES.md §5): the network's three outputs for the side to
move are the chances that it wins, wins by mars (the opponent has borne off nothing) and
loses by mars; the equity is ``2 win - 1 + win_mars - loss_mars``.

**The encoding** (:data:`SIZE` = 215 inputs), *turn-relative*: the side to move first,
then its opponent, each in its own player-relative points 1..24 (24 is the head, 6..1
home; the opponent's point ``q`` is the mover's ``q±12``). Per side:

* per point ``p`` = 1..24, four units: ``n >= 1``, ``n >= 2``, ``n >= 3``, ``(n-3)/4``
  for ``n > 3`` (TD-Gammon's unary code; a lone checker already holds a point in long
  nardy, so the first unit is "point held"): 96 inputs;
* checkers borne off / 15, pip count / 150, checkers on the head / 15, checkers home / 15:
  4 inputs;
* its blocks against the other side (:func:`blocks`): the share of the other's checkers
  that find exactly 1, 2, .., 6 of the six points in front of them held, and the longest
  run of held points along the other's path / 6: 7 inputs;

and finally one input that is 1 in a **race** (neither side can block the other any
more: every checker of each side has passed every checker of the other along its path).
The board is read through :class:`nardy.Position` (the absolute index ``a`` of RULES.md
§1) and the top-level API.

With the compiled encoder (engines/_network.c, bit-identical) the network's first layer
is summed over the nonzero inputs only. **Exact values**: a decided position (a side has
borne off all 15) is never asked of the network; nor a race with both sides all home (the
exact bear-off tables, engines/bearoff.py, ``Network.bearoff = False`` turns that off);
nor, at play, the other races: the tables' race model values them, about 2.4 times closer
to rollouts than the network (``Network.races = False`` turns that off, as training does).
Packed boards are the variant's ``end_boards``: 24 signed bytes.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from engines import bearoff
from engines.bearoff import HOME
from engines.features import Features
from nardy import CHECKERS, Color, Position
from nardy.compiled import load

if TYPE_CHECKING:
    from engines.network import Network

POINTS = 24
UNITS = 4  # per point and side
BLOCK = 7  # per side: the blocks it makes against the other side
SIDE = POINTS * UNITS + 4 + BLOCK
SIZE = 2 * SIDE + 1

# IDX[color][p-1]: the absolute index of color's own point p (RULES.md §1).
IDX = np.array(
    [[POINTS - p for p in range(1, 25)], [(36 - p) % POINTS for p in range(1, 25)]],
    dtype=np.intp,
)
# By side to move: the absolute indices of its points 1..24, then its opponent's, and the
# signs that make both sides' counts positive.
_GATHER = np.array([np.concatenate([IDX[t], IDX[1 - t]]) for t in (0, 1)])
_SIGNS = np.array([[1] * 24 + [-1] * 24, [-1] * 24 + [1] * 24], dtype=np.int64)
# The four units of a point holding n = 0..15 checkers.
_UNITS = np.array([[n >= 1, n >= 2, n >= 3, max(n - 3, 0) / 4] for n in range(16)], dtype=float)
# Counts (24) -> checkers borne off, pips, on the head, home (integers; then scaled).
_EXTRA = np.zeros((POINTS, 4), dtype=np.int64)
_EXTRA[:, 0] = -1
_EXTRA[:, 1] = np.arange(1, 25)
_EXTRA[23, 2] = 1
_EXTRA[:6, 3] = 1
_EXTRA_SCALE = np.array([CHECKERS, 150, CHECKERS, CHECKERS], dtype=float)
# Progress along the *other* side's path of a side's point p (the other's point q is this
# side's q+12 or q-12).
_PROG_OTHER = np.array([12 - q if q <= 12 else 36 - q for q in range(1, 25)])
_FRONT_ORDER = np.argsort(-_PROG_OTHER)  # a side's points, farthest along the other's path first
_FRONT = _PROG_OTHER[_FRONT_ORDER]
# A side's held points as a bit mask along the other's path: bit k is the other's progress k.
_HELD_BIT = 1 << _PROG_OTHER.astype(np.int64)
_AHEAD = np.arange(1, POINTS + 1, dtype=np.int64)
# _HELD[w]: the number of held points in a six-bit window w.
_HELD = np.array([bin(w).count("1") for w in range(64)], dtype=np.intp)
# Where each block of the inputs goes (per side: units, extra, blocks; then the race flag).
_UNITS_AT = [s * SIDE + np.arange(POINTS * UNITS) for s in (0, 1)]
_EXTRA_AT = np.array([[s * SIDE + POINTS * UNITS + k for k in range(4)] for s in (0, 1)])
_BLOCK_AT = np.array([[s * SIDE + POINTS * UNITS + 4 + k for k in range(BLOCK)] for s in (0, 1)])


def boards_of(positions: list[Position]) -> tuple[np.ndarray, np.ndarray]:
    """Signed absolute boards ``(N, 24)`` and sides to move ``(N,)`` of positions."""
    n = len(positions)
    boards = np.fromiter(chain.from_iterable(p.board for p in positions), np.int64, n * POINTS)
    turns = np.array([p.turn.value for p in positions], dtype=np.intp)
    return boards.reshape(n, POINTS), turns


def counts(boards: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """``(N, 2, 24)``: the checkers of the side to move ``[:, 0]`` and of its opponent
    ``[:, 1]``, each on its own points 1..24 (column ``p-1``), from signed absolute boards
    ``(N, 24)`` and sides to move ``(N,)``."""
    n = len(boards)
    c = boards[np.arange(n)[:, None], _GATHER[turns]] * _SIGNS[turns]
    np.maximum(c, 0, out=c)
    return c.reshape(n, 2, POINTS)


def race(c: np.ndarray) -> np.ndarray:
    """True where neither side can block the other any more: every checker of each side
    has passed every checker of the other along its path."""
    occ = c > 0
    some = occ.any(2)
    # each side's last checker along its own path: its highest point, first from the top
    rear = np.where(some, np.argmax(occ[..., ::-1], axis=2), 99)
    # its first checker along the other's path: the first held point in _FRONT_ORDER
    front = np.where(some, _FRONT[np.argmax(occ[..., _FRONT_ORDER], axis=2)], -1)
    return (rear[:, 0] > front[:, 1]) & (rear[:, 1] > front[:, 0])


def _both_home(c: np.ndarray) -> np.ndarray:
    return (c[:, :, HOME:].sum(2) == 0).all(1)


_NOT_HOME = (IDX[0, HOME:], IDX[1, HOME:])  # absolute indices of each side's points 7..24


def both_home(position: Position) -> bool:
    """True when every checker of both sides still on the board is in its home and the
    game is not over: a race that the bear-off tables value exactly."""
    b = position.board
    return (
        all(b[a] <= 0 for a in _NOT_HOME[0])
        and all(b[a] >= 0 for a in _NOT_HOME[1])
        and position.winner is None
    )


def in_race(position: Position) -> bool:
    """True in a race (:func:`race`) that is not over: the race model or, with both sides
    all home, the exact tables value it."""
    return position.winner is None and bool(race(counts(*boards_of([position])))[0])


def blocks(c: np.ndarray) -> np.ndarray:
    """``(N, 2, 7)``: how each side blocks the other: the share of the other's checkers
    with exactly 1..6 of the six points in front of them (along its path) held by this
    side, and this side's longest run of held points along the other's path / 6 (runs
    longer than six count as six)."""
    n = len(c)
    mask = (c > 0) @ _HELD_BIT  # bit k: the point at the other's progress k is held
    window = (mask[..., None] >> _AHEAD) & 0b111111  # held points k+1..k+6 in front of k
    theirs = c[:, ::-1, ::-1]  # the other's checkers by its progress
    # histogram per (position, side) of the held points in front of each of their checkers
    slot = (np.arange(2 * n).reshape(n, 2, 1) * 7 + _HELD[window]).ravel()
    hist = np.bincount(slot, theirs.ravel(), 14 * n).reshape(n, 2, 7)[:, :, 1:] / CHECKERS
    longest = np.zeros(mask.shape)
    for _ in range(6):
        longest += mask != 0
        mask &= mask >> 1
    return np.concatenate([hist, (longest / 6.0)[..., None]], axis=2)


def features(c: np.ndarray) -> np.ndarray:
    """The network inputs ``(N, SIZE)`` of both sides' counts (:func:`counts`)."""
    n = len(c)
    x = np.empty((n, SIZE))
    units = _UNITS[c].reshape(n, 2, -1)
    x[:, _UNITS_AT[0]], x[:, _UNITS_AT[1]] = units[:, 0], units[:, 1]
    extra = c @ _EXTRA
    extra[:, :, 0] += CHECKERS  # minus the checkers on the board
    x[:, _EXTRA_AT] = extra / _EXTRA_SCALE
    x[:, _BLOCK_AT] = blocks(c)
    x[:, -1] = race(c)
    return x


COMPILED = load("engines._network")


class LongFeatures(Features):
    """Long nardy's encoding (module docstring); outcomes oin and mars."""

    variant = "long"
    size = SIZE
    kinds = 2
    width = POINTS

    def inputs(self, positions: list[Position]) -> tuple[np.ndarray, np.ndarray]:
        """The inputs and the counts (:func:`counts`) of positions: by the compiled encoder
        (engines/_network.c, bit-identical, ~9x faster) when it was built, else by numpy."""
        if COMPILED is None:
            c = counts(*boards_of(positions))
            return features(c), c
        n = len(positions)
        x, c = np.empty((n, SIZE)), np.empty((n, 2, POINTS), dtype=np.int64)
        COMPILED.encode(positions, x, c)
        return x, c

    def board_inputs(self, boards: bytes, turn: Color) -> tuple[np.ndarray, np.ndarray]:
        n = len(boards) // POINTS
        b = np.frombuffer(boards, np.int8).reshape(n, POINTS).astype(np.int64)
        c = counts(b, np.full(n, turn.value, dtype=np.intp))
        return features(c), c

    def values(self, net: Network, positions: list[Position]) -> np.ndarray:
        if COMPILED is None or not positions:
            return super().values(net, positions)
        return self._compiled(net, COMPILED.hidden, positions, n=len(positions))

    def board_values(self, net: Network, boards: bytes, turn: Color) -> np.ndarray:
        if COMPILED is None or not boards:
            return super().board_values(net, boards, turn)
        return self._compiled(net, COMPILED.hidden_boards, boards, turn.value, n=len(boards) // 24)

    def _compiled(self, net: Network, hidden, *source, n: int) -> np.ndarray:
        """Values by the compiled first layer (summed over the nonzero inputs only)."""
        w1, b1, w2, b2 = net.single()
        h = np.empty((n, len(b1)), dtype=np.float32)
        c = np.empty((n, 2, POINTS), dtype=np.int64)
        hidden(*source, w1, b1, h, c)
        return self.exact(net.head(h), c, net)

    def exact(self, out: np.ndarray, c: np.ndarray, net: Network) -> np.ndarray:
        """With the exact values put in for decided positions and, with ``net.bearoff``,
        races both sides all home (and, with ``net.races``, the race model's values for
        the other races)."""
        on = c.sum(2)
        done = on[:, 1] == 0  # the opponent has borne off all 15: the side to move lost
        if done.any():
            out[done] = 0.0
            out[done, 2] = on[done, 0] == CHECKERS
        if net.bearoff:
            exact = ~done & (race(c) if net.races else _both_home(c))
            if exact.any():
                out[exact] = bearoff.table().race_values(c[exact, 0], c[exact, 1])
        return out

    def end_boards(self, position: Position, dice: tuple[int, int]) -> bytes:
        return self.rules.end_boards(position, dice)

    def pack(self, position: Position) -> bytes:
        return np.array(position.board, np.int8).tobytes()

    def position(self, row: bytes | np.ndarray, turn: Color) -> Position:
        return Position(turn, tuple(np.frombuffer(bytes(row), np.int8).tolist()))

    def in_race(self, position: Position) -> bool:
        return in_race(position)

    def stop(self, position: Position, races: bool) -> bool:
        return in_race(position) if races else both_home(position)


FEATURES = LongFeatures()
