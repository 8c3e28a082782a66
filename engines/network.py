"""The value network: a small MLP over a variant's inputs, its search and ``best_plays``.

**What the network says.** For a position (before the dice of the side to move) it gives
the chances of the outcomes for the side to move, in the layout of its variant's feature
module (engines/features.py): long nardy's three (it wins, wins by mars, loses by mars;
engines/features_long.py), short nardy's five (it wins, wins a gammon, wins a backgammon,
loses a gammon, loses a backgammon; engines/features_short.py). The **equity** of a
position is its expected points (:func:`equity`). A play is judged by its end position,
where the opponent is to move: its value for the mover is the opponent's value turned
round (:func:`flip`).

**The model**: inputs -> ``hidden`` sigmoid units -> ``2 kinds - 1`` sigmoid outputs,
evaluated on a batch of positions at once (all end positions of a turn);
:meth:`Network.forward` in float64 for learning, :meth:`Network.outputs` in float32 for
play. Positions whose values are known exactly (a finished game, a bear-off race) are not
asked of the network: the feature module puts the exact values in.

The lookahead reads the replies' end boards packed as bytes
(:meth:`engines.features.Features.end_boards`, :meth:`Network.board_values`): no Play or
Position objects for the thousands of boards of a 2-ply search, only for the best reply
to each roll.

``best_plays(position, dice)`` ranks the legal plays of a turn by the network
(``ply=0``) or by a 1-ply lookahead over the opponent's 21 rolls (``ply=1``; ``ply=2``
looks two rolls ahead); it is the call behind the terminal client's ``hint``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from engines.features import Features, equity, features, flip
from nardy.game import Color
from nardy.match import DEFAULT_VARIANT

Position = Any  # a position of the network's variant
Play = Any  # a play of the network's variant

#: The shipped weights of long nardy's network (short nardy's: ``features("short").weights``).
WEIGHTS = features("long").weights


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 + 0.5 * np.tanh(0.5 * x)  # = 1 / (1 + exp(-x)), without overflow


def _sigmoid_(x: np.ndarray) -> np.ndarray:
    """:func:`_sigmoid` in place."""
    x *= 0.5
    np.tanh(x, out=x)
    x *= 0.5
    x += 0.5
    return x


class Network:
    """An MLP ``inputs -> hidden (sigmoid) -> outputs (sigmoid)`` of one variant's feature
    module (``features``; see the module docstring)."""

    def __init__(
        self,
        w1: np.ndarray,
        b1: np.ndarray,
        w2: np.ndarray,
        b2: np.ndarray,
        meta: dict | None = None,
        variant: str | None = None,
    ) -> None:
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2
        self.meta = dict(meta or {})
        self.features: Features = features(variant or self.meta.get("variant", "long"))
        self.meta["variant"] = self.features.variant
        if w1.shape[0] != self.features.size or w2.shape[1] != self.features.outputs:
            raise ValueError(
                f"weights of {w1.shape[0]} inputs and {w2.shape[1]} outputs; {self.variant} "
                f"nardy's network has {self.features.size} and {self.features.outputs}"
            )
        #: judge races with both sides all home by the exact bear-off tables
        self.bearoff = True
        #: ... and, with :attr:`bearoff`, the variant's other races by its race model, if
        #: it has one (long nardy's: engines/bearoff.py; training keeps the network's own)
        self.races = True
        self._single: list[np.ndarray] | None = None  # float32 weights for :meth:`outputs`

    @classmethod
    def random(cls, hidden: int = 80, seed: int = 0, variant: str = "long") -> Network:
        """Small random weights (the start of training)."""
        f = features(variant)
        rng = np.random.default_rng(seed)
        w1 = rng.normal(0.0, 1.0 / np.sqrt(f.size), (f.size, hidden))
        w2 = rng.normal(0.0, 1.0 / np.sqrt(hidden), (hidden, f.outputs))
        return cls(w1, np.zeros(hidden), w2, np.zeros(f.outputs), variant=f.variant)

    @property
    def hidden(self) -> int:
        return self.w1.shape[1]

    @property
    def variant(self) -> str:
        return self.features.variant

    # -- evaluation ---------------------------------------------------------------------
    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hidden activations and outputs for inputs ``x`` (N, inputs), in float64 (for
        learning: :func:`engines.train.learn`)."""
        h = _sigmoid(x @ self.w1 + self.b1)
        return h, _sigmoid(h @ self.w2 + self.b2)

    def outputs(self, x: np.ndarray) -> np.ndarray:
        """The outputs for inputs ``x``, computed in float32 (the shipped weights are
        float32; about twice as fast as :meth:`forward`, which differs by ~1e-7)."""
        w1, b1, _, _ = self.single()
        h = x.astype(np.float32) @ w1
        h += b1
        return self.head(h)

    def head(self, h: np.ndarray) -> np.ndarray:
        """The outputs (float64) of the hidden layer's inputs ``h`` (float32, overwritten)."""
        _, _, w2, b2 = self.single()
        y = _sigmoid_(h) @ w2
        y += b2
        return _sigmoid_(y).astype(np.float64)

    def single(self) -> list[np.ndarray]:
        """The weights in float32 (``w1, b1, w2, b2``), made once."""
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
        """``(N, outputs)`` values of positions for their side to move; exact once known."""
        return self.features.values(self, positions)

    def board_values(self, boards: bytes, turn: Color) -> np.ndarray:
        """:meth:`values` of packed boards (:meth:`Features.end_boards`), with ``turn`` to
        move in every one: the lookahead's path, with no Positions."""
        return self.features.board_values(self, boards, turn)

    def after(self, plays: list[Play]) -> np.ndarray:
        """``(N, outputs)`` values of each play's end position for the side that plays it."""
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
        """Read weights written by :meth:`save` (float64 in memory); their variant is
        ``meta["variant"]`` (long nardy for files from before there was one)."""
        with np.load(path) as f:
            arrays = [f[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2")]
            meta = json.loads(str(f["meta"])) if "meta" in f else {}
        try:
            return cls(*arrays, meta=meta)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


_SHIPPED: dict[str, Network] = {}


def shipped(variant: str = DEFAULT_VARIANT) -> Network:
    """The network shipped for ``variant`` (loaded once), or the weights file named by the
    environment variable ``NARDY_WEIGHTS`` (long nardy) or ``NARDY_WEIGHTS_SHORT`` (short
    nardy), e.g. a training run's export."""
    variant = variant or DEFAULT_VARIANT
    if variant not in _SHIPPED:
        env = "NARDY_WEIGHTS" + ("" if variant == DEFAULT_VARIANT else "_" + variant.upper())
        _SHIPPED[variant] = Network.load(os.environ.get(env) or features(variant).weights)
    return _SHIPPED[variant]


# -- search -------------------------------------------------------------------------------

#: The 21 distinct rolls and their probabilities.
ROLLS: tuple[tuple[tuple[int, int], float], ...] = tuple(
    ((a, b), (1 if a == b else 2) / 36) for a in range(6, 0, -1) for b in range(a, 0, -1)
)


def lookahead(
    net: Network,
    end: Position,
    deadline: float | None = None,
    *,
    depth: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> np.ndarray | None:
    """Value of an end position for the side that just played, looking ``depth`` rolls
    ahead (None if ``clock()`` passes ``deadline`` first: it is read before each of the
    21 rolls of each end position searched, so a search stops within one roll's work).

    ``depth=1``: the average over the opponent's 21 rolls of the position after the
    opponent's best reply by the network. ``depth=2``: the same replies, each then judged
    by 1-ply from the other side (the average over *its* 21 rolls of its best reply by the
    network), i.e. two rolls ahead, with every choice on the way made at 0 ply."""
    f = net.features
    if f.over(end):
        return flip(net.values([end]))[0]
    got = _replies(net, [end], deadline, clock)
    if got is None:
        return None
    replies, v = got  # v: for the side that played ``end``, to move again in ``replies``
    open_ = [i for i, r in enumerate(replies) if not f.over(r)]
    if depth >= 2 and open_:
        unique = list(dict.fromkeys(replies[i] for i in open_))  # rolls with the same reply
        deeper = _replies(net, unique, deadline, clock)
        if deeper is None:
            return None
        v2 = flip(deeper[1]).reshape(len(unique), len(ROLLS), f.outputs)  # back to that side
        one = np.einsum("r,irk->ik", _WEIGHTS, v2)
        where = {r: j for j, r in enumerate(unique)}
        v[open_] = one[[where[replies[i]] for i in open_]]
    return _WEIGHTS @ v


_WEIGHTS = np.array([w for _, w in ROLLS])


def _replies(
    net: Network, ends: list[Position], deadline: float | None, clock: Callable[[], float]
) -> tuple[list[Position], np.ndarray] | None:
    """For each end position (game not over, one side to move in all) and each of the 21
    rolls in :data:`ROLLS` order, the side to move's best reply by the network: the
    positions after the replies (``len(ends) * 21``) and their values for the side that
    played each end, to move in them (None past ``deadline``)."""
    f = net.features
    turn = ends[0].turn.opponent
    parts: list[bytes] = []  # each end's replies, packed
    starts: list[int] = []
    values: list[np.ndarray] = []
    n = 0
    for end in ends:  # judged an end at a time, so a search past its deadline stops soon
        stay = f.pack(end)  # no play: the turn passes
        chunks: list[bytes] = []
        for roll, _ in ROLLS:
            if deadline is not None and clock() > deadline:
                return None
            boards = f.end_boards(end, roll) or stay
            starts.append(n)
            n += len(boards) // f.width
            chunks.append(boards)
        parts.append(b"".join(chunks))
        values.append(net.board_values(parts[-1], turn))
    if deadline is not None and clock() > deadline:
        return None
    packed = b"".join(parts)
    v = np.concatenate(values)
    rolls = np.repeat(np.arange(len(starts)), np.diff(starts + [n]))
    best = np.lexsort((equity(v), rolls))[starts]  # per roll the first least for the replier
    rows = np.frombuffer(packed, np.int8).reshape(n, f.width)[best]
    return [f.position(r, turn) for r in rows], v[best]


class RankedPlay(NamedTuple):
    """A play with the network's judgement of it, for the side that plays it: its equity
    (expected points) and the chances of the outcomes (the variant's layout: win, then
    winning by each kind above the least, then losing by each)."""

    play: Play
    equity: float
    chances: tuple[float, ...]

    @property
    def win(self) -> float:
        """The chance of winning."""
        return self.chances[0]


def best_plays(
    position: Position,
    dice: tuple[int, int],
    *,
    ply: int = 0,
    candidates: int = 6,
    network: Network | None = None,
    variant: str = "long",
) -> list[RankedPlay]:
    """The legal plays of ``position`` with ``dice``, best first, ranked by the network.

    ``ply=0`` judges each end position by the network; ``ply=1`` (or 2) first ranks all
    plays at 0 ply, then looks one roll (two rolls) ahead for the best ``candidates`` of
    them (they come first, in that order, followed by the rest in 0-ply order). An empty
    list when no play is legal. Uses the variant's shipped weights unless ``network``
    is given.
    """
    net = network or shipped(variant)
    plays = net.features.rules.legal_plays(position, dice)
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
    return RankedPlay(play, float(equity(v)), tuple(float(x) for x in v))


__all__ = [
    "ROLLS",
    "WEIGHTS",
    "Network",
    "RankedPlay",
    "best_plays",
    "equity",
    "flip",
    "lookahead",
    "shipped",
]
