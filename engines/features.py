"""What the value network needs to know of a variant: its inputs, its outcomes, its exact values.

The network (engines/network.py), its search, self-play (engines/selfplay.py), training
(engines/train.py) and fitting (engines/fit.py) are written once for every variant; each
variant has an engine-side **feature module** whose :class:`Features` object declares:

* **the encoding**: ``size`` inputs per position, turn-relative (the side to move first),
  :meth:`Features.encode`; a long-nardy position has its own (engines/features_long.py,
  215 inputs), a short-nardy one TD-Gammon's and a few more (engines/features_short.py);
* **the outcomes**: ``kinds`` ways to win, worth 1..kinds points (long nardy: oin 1, mars
  2; short nardy: single 1, gammon 2, backgammon 3, RULES.md §5 and §8). The network has
  ``2 kinds - 1`` sigmoid outputs for the side to move, gnubg's layout: it wins; it wins
  by at least a mars (gammon), .. by the top kind; it loses by at least a mars (gammon),
  .. by the top kind. :func:`flip` turns them round for the other side, :func:`equity`
  weighs them by points or by what each outcome is worth in a match;
* **exact values**: a finished game is never asked of the network; a variant with a
  bear-off database (both variants: engines/bearoff.py) values its races from it;
* **packed boards**: the search reads the legal plays' end positions as rows of ``width``
  signed bytes (:meth:`Features.end_boards`), not as Play objects, and makes a Position
  only of the reply it keeps.

:func:`features` finds a variant's module by name.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nardy.game import Color
from nardy.match import DEFAULT_VARIANT
from nardy.variant import Variant, variant

if TYPE_CHECKING:
    from engines.network import Network

WEIGHTS_DIR = Path(__file__).with_name("weights")
Position = Any  # a position of the variant's (nardy.variant.GamePosition)


class Features(ABC):
    """A variant's encoding, outcomes and exact values (see the module docstring)."""

    variant: str  # the variant's name (nardy.variant)
    size: int  # network inputs per position
    kinds: int  # ways to win, worth 1..kinds points
    width: int  # signed bytes per packed board

    @property
    def outputs(self) -> int:
        return 2 * self.kinds - 1

    @property
    def weights(self) -> Path:
        """The shipped weights of this variant's network."""
        return WEIGHTS_DIR / f"{self.variant}.npz"

    @cached_property
    def rules(self) -> Variant:
        return variant(self.variant)

    # -- inputs and values ------------------------------------------------------------------
    @abstractmethod
    def inputs(self, positions: list[Position]) -> tuple[np.ndarray, Any]:
        """``(x, aux)``: the inputs ``(N, size)`` and what :meth:`exact` needs of them."""

    @abstractmethod
    def board_inputs(self, boards: bytes, turn: Color) -> tuple[np.ndarray, Any]:
        """:meth:`inputs` of packed boards with ``turn`` to move in each."""

    @abstractmethod
    def exact(self, out: np.ndarray, aux: Any, net: Network) -> np.ndarray:
        """The network's outputs ``out`` with exact values put in where they are known:
        finished games, and races by the bear-off tables as ``net.bearoff`` and
        ``net.races`` say."""

    def encode(self, positions: list[Position]) -> np.ndarray:
        """The network inputs of positions."""
        return self.inputs(positions)[0]

    def values(self, net: Network, positions: list[Position]) -> np.ndarray:
        """``(N, outputs)`` values of positions for their side to move; exact once known."""
        if not positions:
            return np.zeros((0, self.outputs))
        x, aux = self.inputs(positions)
        return self.exact(net.outputs(x), aux, net)

    def board_values(self, net: Network, boards: bytes, turn: Color) -> np.ndarray:
        """:meth:`values` of packed boards (``turn`` to move in each)."""
        if not boards:
            return np.zeros((0, self.outputs))
        x, aux = self.board_inputs(boards, turn)
        return self.exact(net.outputs(x), aux, net)

    # -- boards -----------------------------------------------------------------------------
    @abstractmethod
    def end_boards(self, position: Position, dice: tuple[int, int]) -> bytes:
        """The legal plays' end positions packed, in ``legal_plays`` order (b"": none)."""

    @abstractmethod
    def pack(self, position: Position) -> bytes:
        """A position's board as ``width`` signed bytes."""

    @abstractmethod
    def position(self, row: bytes | np.ndarray, turn: Color) -> Position:
        """The position of a packed board with ``turn`` to move."""

    def start(self) -> Position:
        return self.rules.start()

    def first_roll(self, rng) -> tuple[int, int]:
        """The dice of a game's first turn (short nardy: the opening throw, never a
        double, RULES.md §8); ``rng`` is a ``random.Random``."""
        return (rng.randint(1, 6), rng.randint(1, 6))

    # -- the course of a game ---------------------------------------------------------------
    @staticmethod
    def over(position: Position) -> bool:
        """True once a side has borne off all 15."""
        return position.winner is not None

    @abstractmethod
    def in_race(self, position: Position) -> bool:
        """A race that is not over: no checker of either side can meet the other's."""

    @abstractmethod
    def stop(self, position: Position, races: bool) -> bool:
        """Where self-play stops and exact values take over: both sides all home (and, with
        ``races``, any race this variant's race model values)."""

    def loss(self, position: Position) -> np.ndarray:
        """The outcome of a finished game for its side to move, who has lost: by at least
        kind 2, .. kind ``kinds`` (RULES.md §5, §8)."""
        points = self.rules.result(position).kind.points
        out = np.zeros(self.outputs)
        out[self.kinds :] = [points >= k for k in range(2, self.kinds + 1)]
        return out


def flip(v: np.ndarray) -> np.ndarray:
    """Values for the side to move -> the same values for its opponent (and back)."""
    k = (v.shape[-1] + 1) // 2
    out = v[..., [0, *range(k, 2 * k - 1), *range(1, k)]]
    out[..., 0] = 1.0 - out[..., 0]
    return out


def equity(v: np.ndarray, values=None) -> np.ndarray:
    """Expected points for the side whose values ``v`` are, or, with ``values``, the
    expected worth of the outcomes: a pair ``(wins, losses)`` of what winning and losing
    by each kind is worth (e.g. in a match), or a long-nardy
    :class:`engines.evaluate.Values`."""
    k = (v.shape[-1] + 1) // 2
    win = v[..., 0]
    if values is None:  # points: 1 for a win or loss, 1 more for each kind above it
        return 2.0 * win - 1.0 + v[..., 1:k].sum(-1) - v[..., k:].sum(-1)
    wins, losses = outcome_values(values)
    # the chance of each exact outcome from the cumulative outputs
    w = np.concatenate([win[..., None], v[..., 1:k]], axis=-1)
    lose = np.concatenate([(1.0 - win)[..., None], v[..., k:]], axis=-1)
    w_exact = w - np.concatenate([w[..., 1:], np.zeros_like(win)[..., None]], axis=-1)
    l_exact = lose - np.concatenate([lose[..., 1:], np.zeros_like(win)[..., None]], axis=-1)
    return w_exact @ np.asarray(wins, float) + l_exact @ np.asarray(losses, float)


def outcome_values(values) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(wins, losses)``: what winning and losing by each kind is worth."""
    if hasattr(values, "win_mars"):  # engines.evaluate.Values (long nardy)
        return (values.win, values.win_mars), (values.loss, values.loss_mars)
    return tuple(values[0]), tuple(values[1])


_MODULES = {"long": "engines.features_long", "short": "engines.features_short"}
_LOADED: dict[str, Features] = {}


def features(name: str) -> Features:
    """The feature module of variant ``name`` (``""``: the default variant); ValueError if none."""
    name = name or DEFAULT_VARIANT
    if name not in _LOADED:
        if name not in _MODULES:
            raise ValueError(f"no network for {name} nardy; known: {', '.join(_MODULES)}")
        _LOADED[name] = importlib.import_module(_MODULES[name]).FEATURES
    return _LOADED[name]
