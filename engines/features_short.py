"""Short nardy's (backgammon's) network inputs and exact values (engines/features.py).

**Outcomes** (``kinds`` = 3, RULES.md §8): the network's five outputs for the side to
move are gnubg's: it wins; it wins a gammon or more (the loser has borne off nothing); it
wins a backgammon (... and has a checker on the bar or in the winner's home); it loses a
gammon or more; it loses a backgammon. The equity is ``2 win - 1 + win_gammon +
win_backgammon - loss_gammon - loss_backgammon`` (1, 2 or 3 points).

**The encoding** (:data:`SIZE` = 205 inputs), *turn-relative*: the side to move first,
then its opponent, each in its own points 1..24 (§9: a side's point ``p`` is the other's
``25 - p``). Per side, TD-Gammon's 98 inputs:

* per point ``p`` = 1..24, four units: ``n >= 1`` (a blot or more), ``n >= 2`` (a made
  point), ``n >= 3``, ``(n-3)/2`` for ``n > 3``: 96 inputs;
* checkers on the bar / 2, checkers borne off / 15: 2 inputs;

then four of the hand-made inputs that TD-Gammon's later versions and gnubg add:

* pip count / 167 (a checker on the bar counts 25);
* its **exposure**: the share of the 36 rolls with which the other side hits at least
  one of its blots, by a single die or by one checker moving both dice (or a double's
  steps), counting every checker of the other on its path and on the bar as a shooter,
  and not looking at blocked points on the way (:func:`exposure`);
* its longest run of made points / 6 (a prime; longer runs count as six);
* its made points in its home board / 6;

and finally one input that is 1 in a **race** (no checker of either side can meet one of
the other's: the two rearmost checkers have passed each other).

**Exact values**: a finished game is never asked of the network, and with
``Network.bearoff`` neither is a position with both sides all in their home boards (no
checker on the bar): the exact one-sided bear-off tables of engines/bearoff.py value it.
Bearing off is the same in both variants (§4, §8), so the tables built from long nardy's
plays serve here as they are (tests/engines/test_short_network.py rebuilds them from
short nardy's plays): the race is won by the side that bears off first, a gammon is a
side that has borne off nothing losing it, and a backgammon cannot happen once both sides
are all home. Races not yet all home are left to the network: the race model of
engines/bearoff.py has no backgammons (``Network.races`` does not apply here).

Packed boards: 26 signed bytes, the 24 counts by absolute index of the position text
(§9, white positive) and the checkers on the bar of white and of black.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from engines import bearoff
from engines.bearoff import HOME
from engines.features import Features
from nardy.compiled import load
from nardy.game import Color

if TYPE_CHECKING:
    from engines.network import Network

CHECKERS = 15
POINTS = 24
WIDTH = POINTS + 2  # a packed board: 24 counts, then the bars of white and black
UNITS = 4
EXTRA = 4  # per side: pips, exposure, prime, home points
SIDE = POINTS * UNITS + 2 + EXTRA
SIZE = 2 * SIDE + 1
PIPS = 167  # a side's pips at the start

# IDX[color][p-1]: the absolute index of color's own point p (§9).
IDX = np.array([[POINTS - p for p in range(1, 25)], [p - 1 for p in range(1, 25)]], np.intp)
_GATHER = np.array([np.concatenate([IDX[t], IDX[1 - t]]) for t in (0, 1)])
_SIGNS = np.array([[1] * 24 + [-1] * 24, [-1] * 24 + [1] * 24], dtype=np.int64)
_BARS = np.array([[0, 1], [1, 0]], np.intp)  # by side to move: its bar, then the other's
# The four units of a point holding n = 0..15 checkers (TD-Gammon's).
_UNITS = np.array([[n >= 1, n >= 2, n >= 3, max(n - 3, 0) / 2] for n in range(16)], dtype=float)
_PIP_OF = np.arange(1, POINTS + 1, dtype=np.int64)
_BIT = np.int64(1) << np.arange(POINTS, dtype=np.int64)


def _reach() -> np.ndarray:
    """``(24, 36)``: whether roll ``r`` (of the 36) moves one checker exactly ``d`` pips
    (row ``d - 1``): one die, both dice, or two to four steps of a double."""
    out = np.zeros((POINTS, 36), bool)
    for i in range(36):
        a, b = divmod(i, 6)
        a, b = a + 1, b + 1
        steps = {a, b} | ({2 * a, 3 * a, 4 * a} if a == b else {a + b})
        for d in steps:
            out[d - 1, i] = True
    return out


_REACH = _reach().astype(np.float64)
# _DISTANCE[p * 25 + r, d - 1]: a blot on point p (1..24) and a shooter at r (0..24, 0 the
# bar), both in the blot's side's points, are d = p - r pips apart
_DISTANCE = np.zeros((25 * 25, POINTS))
for _p in range(1, 25):
    for _r in range(_p):
        _DISTANCE[_p * 25 + _r, _p - _r - 1] = 1.0
# where each part of the inputs goes
_UNITS_AT = [s * SIDE + np.arange(POINTS * UNITS) for s in (0, 1)]
_REST_AT = np.array([[s * SIDE + POINTS * UNITS + k for k in range(2 + EXTRA)] for s in (0, 1)])


def rows_of(positions: list) -> tuple[np.ndarray, np.ndarray]:
    """Packed rows ``(N, 26)`` (module docstring) and sides to move ``(N,)`` of positions."""
    rows = np.array([p.board + p.bar for p in positions], dtype=np.int8).reshape(-1, WIDTH)
    turns = np.array([p.turn.value for p in positions], dtype=np.intp)
    return rows, turns


def counts(rows: np.ndarray, turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(c, bar)``: ``c (N, 2, 24)`` the checkers of the side to move ``[:, 0]`` and of its
    opponent ``[:, 1]`` on their own points 1..24 (column ``p - 1``); ``bar (N, 2)``."""
    n = len(rows)
    ix = np.arange(n)[:, None]
    c = rows[ix, _GATHER[turns]] * _SIGNS[turns]
    np.maximum(c, 0, out=c)
    bar = rows[:, POINTS:][ix, _BARS[turns]]
    return c.reshape(n, 2, POINTS), bar


def exposure(c: np.ndarray, bar: np.ndarray) -> np.ndarray:
    """``(N, 2)``: for each side, the share of the 36 rolls with which the other side can
    hit one of its blots (module docstring: blocks on the way not looked at)."""
    n = len(c)
    blots = np.zeros((n, 2, 25))
    blots[:, :, 1:] = c == 1
    shooters = np.empty((n, 2, 25))  # at the blots' side's point r: the other's 25 - r
    shooters[:, :, 0] = bar[:, ::-1] > 0
    shooters[:, :, 1:] = c[:, ::-1, ::-1] > 0
    pairs = (blots[..., :, None] * shooters[..., None, :]).reshape(2 * n, 625)
    apart = (pairs @ _DISTANCE) > 0  # (2N, 24): some shooter d pips behind some blot
    return ((apart @ _REACH) > 0).sum(1).reshape(n, 2) / 36.0


def longest_run(made: np.ndarray) -> np.ndarray:
    """The longest run of True along the last axis of ``made`` (..., 24), at most six."""
    mask = made.astype(np.int64) @ _BIT
    longest = np.zeros(mask.shape)
    for _ in range(6):
        longest += mask != 0
        mask &= mask >> 1
    return longest


def race(c: np.ndarray, bar: np.ndarray) -> np.ndarray:
    """True where the sides can no longer meet: the rearmost checkers of the two (a
    checker on the bar is on 25) have passed each other."""
    occ = c > 0
    rear = np.where(occ.any(2), POINTS - np.argmax(occ[..., ::-1], axis=2), 0)
    rear = np.where(bar > 0, 25, rear)
    return rear[:, 0] + rear[:, 1] <= 25


def inputs_of(c: np.ndarray, bar: np.ndarray) -> np.ndarray:
    """The network inputs ``(N, SIZE)`` of both sides' counts and bars (:func:`counts`)."""
    n = len(c)
    x = np.empty((n, SIZE))
    units = _UNITS[c].reshape(n, 2, -1)
    x[:, _UNITS_AT[0]], x[:, _UNITS_AT[1]] = units[:, 0], units[:, 1]
    made = c >= 2
    rest = np.empty((n, 2, 2 + EXTRA))
    rest[:, :, 0] = bar / 2
    rest[:, :, 1] = (CHECKERS - c.sum(2) - bar) / CHECKERS
    rest[:, :, 2] = (c @ _PIP_OF + 25 * bar) / PIPS
    rest[:, :, 3] = exposure(c, bar)
    rest[:, :, 4] = longest_run(made) / 6
    rest[:, :, 5] = made[:, :, :HOME].sum(2) / 6
    x[:, _REST_AT] = rest
    x[:, -1] = race(c, bar)
    return x


COMPILED = load("engines._network_short")


def _inputs(rows: np.ndarray, turns: np.ndarray) -> tuple[np.ndarray, tuple]:
    """The inputs and ``(c, bar)`` (:func:`counts`) of packed rows: by the compiled encoder
    (engines/_network_short.c, bit-identical) when it was built, else by numpy."""
    if COMPILED is None:
        c, bar = counts(rows.astype(np.int64), turns)
        return inputs_of(c, bar), (c, bar)
    n = len(rows)
    x = np.empty((n, SIZE))
    c, bar = np.empty((n, 2, POINTS), np.int64), np.empty((n, 2), np.int64)
    COMPILED.encode(rows.astype(np.int8).tobytes(), turns.astype(np.int8).tobytes(), x, c, bar)
    return x, (c, bar)


class ShortFeatures(Features):
    """Short nardy's encoding (module docstring); outcomes single, gammon, backgammon."""

    variant = "short"
    size = SIZE
    kinds = 3
    width = WIDTH

    def inputs(self, positions: list) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        rows, turns = rows_of(positions)
        return _inputs(rows, turns)

    def board_inputs(self, boards: bytes, turn: Color):
        rows = np.frombuffer(boards, np.int8).reshape(-1, WIDTH)
        return _inputs(rows, np.full(len(rows), turn.value, dtype=np.intp))

    def exact(self, out: np.ndarray, aux, net: Network) -> np.ndarray:
        """With the exact values put in for finished games and, with ``net.bearoff``,
        positions with both sides all home (module docstring)."""
        c, bar = aux
        on = c.sum(2) + bar
        done = on[:, 1] == 0  # the opponent has borne off all 15: the side to move lost
        if done.any():
            gammon = on[done, 0] == CHECKERS
            back = (bar[done, 0] > 0) | (c[done, 0, 18:].sum(1) > 0)  # §8: bar or their home
            out[done] = 0.0
            out[done, 3] = gammon
            out[done, 4] = gammon & back
        if net.bearoff:
            home = ~done & (c[:, :, HOME:].sum(2) == 0).all(1) & (bar == 0).all(1)
            if home.any():
                v = bearoff.table().race_values(c[home, 0, :HOME], c[home, 1, :HOME])
                out[home] = 0.0
                out[home, 0], out[home, 1], out[home, 3] = v[:, 0], v[:, 1], v[:, 2]
        return out

    def end_boards(self, position, dice: tuple[int, int]) -> bytes:
        return self.rules.end_boards(position, dice)

    def pack(self, position) -> bytes:
        return np.array(position.board + position.bar, np.int8).tobytes()

    def position(self, row, turn: Color):
        r = np.frombuffer(bytes(row), np.int8).tolist()
        return self._position(turn, tuple(r[:POINTS]), (r[24], r[25]))

    @cached_property
    def _position(self):
        """The variant's position type: ``(turn, board, bar)``, as its Board view has them."""
        return type(self.rules.start())

    def first_roll(self, rng) -> tuple[int, int]:
        while True:  # §8: the opening throw is white's first roll, never a double
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            if dice[0] != dice[1]:
                return dice

    def in_race(self, position) -> bool:
        rows, turns = rows_of([position])
        return not self.over(position) and bool(race(*counts(rows.astype(np.int64), turns))[0])

    def stop(self, position, races: bool) -> bool:
        """Both sides all home (no race model here: module docstring)."""
        return both_home(position)


_OUTSIDE = (IDX[0, HOME:], IDX[1, HOME:])  # absolute indices of each side's points 7..24


def both_home(position) -> bool:
    """True when every checker of both sides still in play is in its home board (none on
    the bar) and the game is not over: the bear-off tables value it exactly."""
    b = position.board
    return (
        position.bar == (0, 0)
        and all(b[a] <= 0 for a in _OUTSIDE[0])
        and all(b[a] >= 0 for a in _OUTSIDE[1])
        and position.winner is None
    )


FEATURES = ShortFeatures()
