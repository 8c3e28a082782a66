"""The long-nardy value network: board encoding, evaluation and ``best_plays``.

**What the network says.** For a position (before the dice of the side to move) it
gives three probabilities from the point of view of the side to move: it wins, it wins
by mars (the opponent has borne off nothing, RULES.md §5), it loses by mars. The
**equity** of a position, in points, is ``2 win - 1 + win_mars - loss_mars`` (an oin is
1 point, a mars 2). A play is judged by its end position, where the opponent is to move:
its value for the mover is the opponent's value turned round (:func:`flip`).

**The encoding** (:func:`encode`, :data:`FEATURES` = 215 inputs), *turn-relative*: the
side to move first, then its opponent, each in its own player-relative points 1..24
(24 is the head, 6..1 home; the opponent's point ``q`` is the mover's ``q±12``). Per side:

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
The board is read only through :class:`nardy.Position` (the absolute index ``a`` of
RULES.md §1) and the top-level API.

**The model**: inputs -> ``hidden`` sigmoid units -> 3 sigmoid outputs, evaluated on a
batch of positions at once (all end positions of a turn); :meth:`Network.forward` in
float64 for learning, :meth:`Network.values` in float32 for play: with the compiled
encoder (engines/_network.c) the first layer is summed over the nonzero inputs only.
Positions that are already decided (a side has borne off all 15) are not asked of the
network: their value is exact; nor are races with both sides all home: the exact bear-off
tables value them (engines/bearoff.py; ``Network.bearoff = False`` turns that off); nor,
at play, the other races: the tables' race model values them, about 2.4 times closer
to rollouts than the network (``Network.races = False`` turns that off, as training does).

The lookahead reads the replies' end boards packed as bytes (:func:`nardy.end_boards`,
:meth:`Network.board_values`): no Play or Position objects for the thousands of boards of
a 2-ply search, only for the best reply to each roll.

``best_plays(position, dice)`` ranks the legal plays of a turn by the network
(``ply=0``) or by a 1-ply lookahead over the opponent's 21 rolls (``ply=1``; ``ply=2``
looks two rolls ahead); it is the call behind the terminal client's ``hint``.
"""

from __future__ import annotations

import json
import os
import time
from itertools import chain
from pathlib import Path
from typing import NamedTuple

import numpy as np

from engines import bearoff
from engines.bearoff import HOME
from nardy import CHECKERS, Color, Play, Position, end_boards, legal_plays
from nardy.compiled import load

WEIGHTS = Path(__file__).with_name("weights") / "long.npz"

POINTS = 24
UNITS = 4  # per point and side
BLOCK = 7  # per side: the blocks it makes against the other side
SIDE = POINTS * UNITS + 4 + BLOCK
FEATURES = 2 * SIDE + 1
OUTPUTS = 3  # win, win by mars, loss by mars (side to move)

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


def _boards(positions: list[Position]) -> tuple[np.ndarray, np.ndarray]:
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
    return position.winner is None and bool(race(counts(*_boards([position])))[0])


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
    """The network inputs ``(N, FEATURES)`` of both sides' counts (:func:`counts`)."""
    n = len(c)
    x = np.empty((n, FEATURES))
    units = _UNITS[c].reshape(n, 2, -1)
    x[:, _UNITS_AT[0]], x[:, _UNITS_AT[1]] = units[:, 0], units[:, 1]
    extra = c @ _EXTRA
    extra[:, :, 0] += CHECKERS  # minus the checkers on the board
    x[:, _EXTRA_AT] = extra / _EXTRA_SCALE
    x[:, _BLOCK_AT] = blocks(c)
    x[:, -1] = race(c)
    return x


def encode(positions: list[Position]) -> np.ndarray:
    """The network inputs of positions (see the module docstring)."""
    return _encode(positions)[0]


_COMPILED = load("engines._network")


def _encode(positions: list[Position]) -> tuple[np.ndarray, np.ndarray]:
    """The inputs and the counts (:func:`counts`) of positions: by the compiled encoder
    (engines/_network.c, bit-identical, ~9x faster) when it was built, else by numpy."""
    if _COMPILED is None:
        c = counts(*_boards(positions))
        return features(c), c
    n = len(positions)
    x, c = np.empty((n, FEATURES)), np.empty((n, 2, POINTS), dtype=np.int64)
    _COMPILED.encode(positions, x, c)
    return x, c


def flip(v: np.ndarray) -> np.ndarray:
    """Values for the side to move -> the same values for its opponent (and back)."""
    out = v[..., _FLIP]
    out[..., 0] = 1.0 - out[..., 0]
    return out


_FLIP = [0, 2, 1]


def equity(v: np.ndarray, values=None) -> np.ndarray:
    """Expected points for the side whose values ``v`` are (win, win mars, loss mars), or
    the expected value of the outcomes by ``values`` (an :class:`engines.evaluate.Values`:
    what an oin and a mars won or lost are worth, e.g. in a match)."""
    win, win_mars, loss_mars = v[..., 0], v[..., 1], v[..., 2]
    if values is None:
        return 2.0 * win - 1.0 + win_mars - loss_mars
    return (
        (win - win_mars) * values.win
        + win_mars * values.win_mars
        + (1.0 - win - loss_mars) * values.loss
        + loss_mars * values.loss_mars
    )


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 + 0.5 * np.tanh(0.5 * x)  # = 1 / (1 + exp(-x)), without overflow


def _outputs(h: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """The outputs (float64) of the hidden layer's inputs ``h`` (float32, overwritten)."""
    y = _sigmoid_(h) @ w2
    y += b2
    return _sigmoid_(y).astype(np.float64)


def _sigmoid_(x: np.ndarray) -> np.ndarray:
    """:func:`_sigmoid` in place."""
    x *= 0.5
    np.tanh(x, out=x)
    x *= 0.5
    x += 0.5
    return x


class Network:
    """An MLP ``FEATURES -> hidden (sigmoid) -> 3 (sigmoid)``; see the module docstring."""

    def __init__(
        self,
        w1: np.ndarray,
        b1: np.ndarray,
        w2: np.ndarray,
        b2: np.ndarray,
        meta: dict | None = None,
    ) -> None:
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2
        self.meta = dict(meta or {})
        #: judge positions with both sides all home by the exact bear-off tables
        self.bearoff = True
        #: ... and, with :attr:`bearoff`, races not yet all home by the tables' race model
        #: (engines/bearoff.py; training's self-play keeps the network's own values there)
        self.races = True
        self._single: list[np.ndarray] | None = None  # float32 weights for :meth:`outputs`

    @classmethod
    def random(cls, hidden: int = 80, seed: int = 0) -> Network:
        """Small random weights (the start of training)."""
        rng = np.random.default_rng(seed)
        w1 = rng.normal(0.0, 1.0 / np.sqrt(FEATURES), (FEATURES, hidden))
        w2 = rng.normal(0.0, 1.0 / np.sqrt(hidden), (hidden, OUTPUTS))
        return cls(w1, np.zeros(hidden), w2, np.zeros(OUTPUTS))

    @property
    def hidden(self) -> int:
        return self.w1.shape[1]

    # -- evaluation ---------------------------------------------------------------------
    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hidden activations and outputs for inputs ``x`` (N, FEATURES), in float64 (for
        learning: :func:`engines.train.learn`)."""
        h = _sigmoid(x @ self.w1 + self.b1)
        return h, _sigmoid(h @ self.w2 + self.b2)

    def outputs(self, x: np.ndarray) -> np.ndarray:
        """The outputs for inputs ``x``, computed in float32 (the shipped weights are
        float32; about twice as fast as :meth:`forward`, which differs by ~1e-7)."""
        w1, b1, w2, b2 = self._float32()
        h = x.astype(np.float32) @ w1
        h += b1
        return _outputs(h, w2, b2)

    def _float32(self) -> list[np.ndarray]:
        if self._single is None:
            self._single = [
                np.ascontiguousarray(a, dtype=np.float32)
                for a in (self.w1, self.b1, self.w2, self.b2)
            ]
        return self._single

    def changed(self) -> None:
        """Say that the weights were changed in place (drops the float32 copies)."""
        self._single = None

    def values(self, positions: list[Position]) -> np.ndarray:
        """``(N, 3)`` values of positions for their side to move; exact once decided."""
        if not positions:
            return np.zeros((0, OUTPUTS))
        if _COMPILED is None:
            x, c = _encode(positions)
            return self._exact(self.outputs(x), c)
        return self._compiled(_COMPILED.hidden, positions, n=len(positions))

    def board_values(self, boards: bytes, turn: Color) -> np.ndarray:
        """:meth:`values` of boards packed as by :func:`nardy.end_boards` (24 signed bytes
        each), with ``turn`` to move in every one: the lookahead's path, with no Positions."""
        n = len(boards) // POINTS
        if not n:
            return np.zeros((0, OUTPUTS))
        if _COMPILED is None:
            b = np.frombuffer(boards, np.int8).reshape(n, POINTS).astype(np.int64)
            c = counts(b, np.full(n, turn.value, dtype=np.intp))
            return self._exact(self.outputs(features(c)), c)
        return self._compiled(_COMPILED.hidden_boards, boards, turn.value, n=n)

    def _compiled(self, hidden, *source, n: int) -> np.ndarray:
        """Values by the compiled first layer (summed over the nonzero inputs only)."""
        w1, b1, w2, b2 = self._float32()
        h = np.empty((n, len(b1)), dtype=np.float32)
        c = np.empty((n, 2, POINTS), dtype=np.int64)
        hidden(*source, w1, b1, h, c)
        return self._exact(_outputs(h, w2, b2), c)

    def _exact(self, out: np.ndarray, c: np.ndarray) -> np.ndarray:
        """The network's outputs ``out`` of positions with counts ``c`` (:func:`counts`),
        with the exact values put in for decided positions and, with :attr:`bearoff`,
        races both sides all home (and, with :attr:`races`, the race model's values for
        the other races)."""
        on = c.sum(2)
        done = on[:, 1] == 0  # the opponent has borne off all 15: the side to move lost
        if done.any():
            out[done] = 0.0
            out[done, 2] = on[done, 0] == CHECKERS
        if self.bearoff:
            exact = ~done & (race(c) if self.races else _both_home(c))
            if exact.any():
                out[exact] = bearoff.table().race_values(c[exact, 0], c[exact, 1])
        return out

    def after(self, plays: list[Play]) -> np.ndarray:
        """``(N, 3)`` values of each play's end position for the side that plays it."""
        return flip(self.values([p.end for p in plays]))

    # -- files --------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, dtype=np.float32, **extra: np.ndarray) -> None:
        """Write the weights (float32 unless told) and ``meta`` as an .npz file, atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(
            tmp,
            w1=self.w1.astype(dtype),
            b1=self.b1.astype(dtype),
            w2=self.w2.astype(dtype),
            b2=self.b2.astype(dtype),
            meta=np.array(json.dumps(self.meta)),
            **extra,
        )
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike = WEIGHTS) -> Network:
        """Read weights written by :meth:`save` (float64 in memory)."""
        with np.load(path) as f:
            if f["w1"].shape[0] != FEATURES:
                raise ValueError(
                    f"{path}: weights expect {f['w1'].shape[0]} inputs, the encoding has {FEATURES}"
                )
            arrays = [f[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2")]
            meta = json.loads(str(f["meta"])) if "meta" in f else {}
        return cls(*arrays, meta=meta)


_SHIPPED: Network | None = None


def shipped() -> Network:
    """The network shipped with the package (loaded once), or the weights file named by
    the environment variable ``NARDY_WEIGHTS`` (e.g. a training run's export)."""
    global _SHIPPED
    if _SHIPPED is None:
        _SHIPPED = Network.load(os.environ.get("NARDY_WEIGHTS") or WEIGHTS)
    return _SHIPPED


# -- search -------------------------------------------------------------------------------

#: The 21 distinct rolls and their probabilities.
ROLLS: tuple[tuple[tuple[int, int], float], ...] = tuple(
    ((a, b), (1 if a == b else 2) / 36) for a in range(6, 0, -1) for b in range(a, 0, -1)
)


def lookahead(
    net: Network, end: Position, deadline: float | None = None, *, depth: int = 1
) -> np.ndarray | None:
    """Value of an end position for the side that just played, looking ``depth`` rolls
    ahead (None if ``time.perf_counter()`` passes ``deadline`` first).

    ``depth=1``: the average over the opponent's 21 rolls of the position after the
    opponent's best reply by the network. ``depth=2``: the same replies, each then judged
    by 1-ply from the other side (the average over *its* 21 rolls of its best reply by the
    network), i.e. two rolls ahead, with every choice on the way made at 0 ply."""
    if end.winner is not None:
        return flip(net.values([end]))[0]
    got = _replies(net, [end], deadline)
    if got is None:
        return None
    replies, v = got  # v: for the side that played ``end``, to move again in ``replies``
    open_ = [i for i, r in enumerate(replies) if r.winner is None]
    if depth >= 2 and open_:
        unique = list(dict.fromkeys(replies[i] for i in open_))  # rolls with the same reply
        deeper = _replies(net, unique, deadline)
        if deeper is None:
            return None
        v2 = flip(deeper[1]).reshape(len(unique), len(ROLLS), OUTPUTS)  # back to that side
        one = np.einsum("r,irk->ik", _WEIGHTS, v2)
        where = {r: j for j, r in enumerate(unique)}
        v[open_] = one[[where[replies[i]] for i in open_]]
    return _WEIGHTS @ v


_WEIGHTS = np.array([w for _, w in ROLLS])


def _replies(
    net: Network, ends: list[Position], deadline: float | None
) -> tuple[list[Position], np.ndarray] | None:
    """For each end position (game not over, one side to move in all) and each of the 21
    rolls in :data:`ROLLS` order, the side to move's best reply by the network: the
    positions after the replies (``len(ends) * 21``) and their values for the side that
    played each end, to move in them (None past ``deadline``)."""
    turn = ends[0].turn.opponent
    parts: list[bytes] = []  # each end's replies, packed
    starts: list[int] = []
    values: list[np.ndarray] = []
    n = 0
    for end in ends:  # judged an end at a time, so a search past its deadline stops soon
        stay = np.array(end.board, np.int8).tobytes()  # no play: the turn passes
        chunks: list[bytes] = []
        for roll, _ in ROLLS:
            if deadline is not None and time.perf_counter() > deadline:
                return None
            boards = end_boards(end, roll) or stay
            starts.append(n)
            n += len(boards) // POINTS
            chunks.append(boards)
        parts.append(b"".join(chunks))
        values.append(net.board_values(parts[-1], turn))
    if deadline is not None and time.perf_counter() > deadline:
        return None
    packed = b"".join(parts)
    v = np.concatenate(values)
    rolls = np.repeat(np.arange(len(starts)), np.diff(starts + [n]))
    best = np.lexsort((equity(v), rolls))[starts]  # per roll the first least for the replier
    boards = np.frombuffer(packed, np.int8).reshape(n, POINTS)[best].tolist()
    return [Position(turn, tuple(b)) for b in boards], v[best]


class RankedPlay(NamedTuple):
    """A play with the network's judgement of it, for the side that plays it."""

    play: Play
    equity: float  # expected points, -2..2
    win: float  # probability of winning
    win_mars: float
    loss_mars: float


def best_plays(
    position: Position,
    dice: tuple[int, int],
    *,
    ply: int = 0,
    candidates: int = 6,
    network: Network | None = None,
) -> list[RankedPlay]:
    """The legal plays of ``position`` with ``dice``, best first, ranked by the network.

    ``ply=0`` judges each end position by the network; ``ply=1`` (or 2) first ranks all
    plays at 0 ply, then looks one roll (two rolls) ahead for the best ``candidates`` of
    them (they come first, in that order, followed by the rest in 0-ply order). An empty
    list when no play is legal. Uses the shipped weights unless ``network`` is given.
    """
    net = network or shipped()
    plays = legal_plays(position, dice)
    if not plays:
        return []
    v = net.after(plays)
    order = np.argsort(-equity(v), kind="stable")
    ranked = [_ranked(plays[i], v[i]) for i in order]
    if ply >= 1 and len(ranked) > 1:
        deep = [_ranked(r.play, lookahead(net, r.play.end, depth=ply)) for r in ranked[:candidates]]
        deep.sort(key=lambda r: -r.equity)
        ranked = deep + ranked[candidates:]
    return ranked


def _ranked(play: Play, v: np.ndarray) -> RankedPlay:
    return RankedPlay(play, float(equity(v)), float(v[0]), float(v[1]), float(v[2]))


__all__ = [
    "FEATURES",
    "ROLLS",
    "WEIGHTS",
    "Network",
    "RankedPlay",
    "best_plays",
    "encode",
    "equity",
    "flip",
    "in_race",
    "lookahead",
    "race",
    "shipped",
]
