"""The one game API: everything the arbiter, clients, engines and records need from a rule set.

A variant (long nardy, short nardy) is a package under ``nardy/`` whose ``VARIANT`` is an
instance of :class:`Variant`; :func:`variant` finds it by name (``"long"``, ``"short"``;
``""`` is :data:`DEFAULT_VARIANT`).
Code outside a variant's package reaches its rules only through these methods and the
shared types of :mod:`nardy.game`; a test keeps ``server/``, ``clients/`` and ``engines/``
from importing ``nardy.long.*`` or ``nardy.short.*``.

What a variant provides (OpenSpiel's game / state split, python-chess's values):

* **Positions** are immutable, hashable values with ``turn`` (the :class:`~nardy.game.Color`
  to move) and ``text()`` (the variant's position text, RULES.md §1 / §9). ``start()`` is
  the opening position, ``parse(text)`` reads a text or raises
  :class:`~nardy.game.PositionError`, ``passed(position)`` is the same board with the
  opponent to move (a turn with no legal play).
* **Plays** have ``end`` (the position after the play, opponent to move), ``steps`` (single
  die steps with ``src``, ``dst``, ``die``) and ``notation()`` (``-`` for none).
  ``legal_plays(position, dice)`` lists every legal play as distinct end positions, ``[]``
  when nothing can be played (§3.6, §3.7). Applying a play is taking its ``end``.
  ``end_boards(position, dice)`` gives the same end positions packed as signed bytes, for
  engines that judge thousands of them: per play its :class:`Board` view's 24 points and,
  in a variant with a bar (``has_bar``), the bars of white and black.
* **Points in steps** are the mover's own numbers: 1..24, ``OFF`` (0) for borne off and
  ``BAR`` (25) for a checker entering from the bar (variants with a bar).
* ``match_play(position, dice, text)`` is the legal play written as ``text`` or an
  :class:`~nardy.game.IllegalPlay` naming the step and rule; ``parse_moves(text)`` reads
  notation into ``(src, dst)`` moves or raises :class:`~nardy.game.NotationError`.
* ``turn_builder(position, dice)`` plays a turn step by step for people: ``plays``,
  ``steps``, ``remaining`` dice, ``complete``, ``legal_steps()``, ``step(src, dst)``
  (several dice when one does not cover the distance), ``undo()``, ``rewind(mark)``,
  ``play()``; every refusal is an ``IllegalPlay`` giving the reason. What does not depend
  on the board is written once, in :class:`BaseTurnBuilder`.
* **Results**: ``result(position, rules)`` is the :class:`~nardy.game.GameResult` once the
  game is over (else ``None``); its ``kind`` is one of the variant's ``kinds`` (a
  ``StrEnum`` whose members have ``points``). ``forfeit(position, loser, termination)``
  scores a timeout, resignation, abandonment or too many illegal plays.
* **Options**: ``house_rules`` names the boolean rule options the variant accepts (long
  nardy: ``koks``); ``check(options)`` refuses a :class:`~nardy.match.GameOptions` the
  variant cannot play. ``default_opening`` is how white's first roll is made.
  :data:`~nardy.match.DEFAULT_VARIANT` is the variant of a game that names none.
* **Views**: ``board(position)`` is a :class:`Board` (points by absolute index, bar and off
  per colour) for the wire and for pictures; ``point_index(color, point)`` places a side's
  own point on that board; ``pips(position, color)`` is a side's pip count; ``head`` is
  the point all checkers start on (long nardy: 24), None for a variant without one.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from nardy.game import Color, GameResult, IllegalPlay, Termination
from nardy.match import DEFAULT_VARIANT, GameOptions, Opening

OFF = 0  # a step's destination when the checker is borne off
BAR = 25  # a step's source when the checker enters from the bar


class GamePosition(Protocol):
    """What generic code may read from any variant's position."""

    @property
    def turn(self) -> Color: ...

    def text(self) -> str: ...


class GameStep(Protocol):
    @property
    def src(self) -> int: ...
    @property
    def dst(self) -> int: ...
    @property
    def die(self) -> int: ...


class GamePlay(Protocol):
    @property
    def steps(self) -> Sequence[GameStep]: ...
    @property
    def end(self) -> Any: ...

    def notation(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Board:
    """A position as pictures and the wire show it.

    ``points``: 24 signed counts by absolute index (white positive, black negative);
    ``bar`` and ``off``: checkers on the bar and borne off, indexed by :class:`Color`.
    """

    turn: Color
    points: tuple[int, ...]
    bar: tuple[int, int]
    off: tuple[int, int]


class Variant(ABC):
    """A rule set. Subclasses implement the abstract methods; see the module docstring."""

    name: str
    house_rules: frozenset[str] = frozenset()
    kinds: type[StrEnum]
    head: int | None = None  # the point every checker starts on (long nardy's 24), if any
    has_bar: bool = False  # checkers can be hit and wait on the bar (short nardy)

    @property
    def default_opening(self) -> Opening:
        return Opening.FRESH_ROLL

    def options(self) -> GameOptions:
        """This variant's game options with its own defaults (short nardy: the opening dice
        are white's first roll, RULES.md §8)."""
        return GameOptions(variant=self.name, opening=self.default_opening)

    # -- positions ----------------------------------------------------------------------
    @abstractmethod
    def start(self) -> Any: ...

    @abstractmethod
    def parse(self, text: str) -> Any: ...

    @abstractmethod
    def passed(self, position: Any) -> Any: ...

    # -- plays --------------------------------------------------------------------------
    @abstractmethod
    def legal_plays(self, position: Any, dice: tuple[int, int]) -> list[Any]: ...

    def end_texts(self, position: Any, dice: tuple[int, int]) -> list[str]:
        """The sorted end-position texts of the legal plays (``[]`` when the turn passes);
        a variant may compute them without building the plays (``nardy legal``)."""
        return sorted(p.end.text() for p in self.legal_plays(position, dice))

    def end_boards(self, position: Any, dice: tuple[int, int]) -> bytes:
        """The legal plays' end positions in ``legal_plays`` order, ``24 (+ 2 with a bar)``
        signed bytes each (``b""`` when the turn passes); a variant may make them without
        building the plays."""
        out = bytearray()
        for p in self.legal_plays(position, dice):
            b = self.board(p.end)
            out += bytes(c & 0xFF for c in b.points + (b.bar if self.has_bar else ()))
        return bytes(out)

    def legal_plays_wire(self, plays: Sequence[Any]) -> bytes | None:
        """``plays`` as the protobuf entries of ``GameState.legal_plays``, when a compiled
        helper of the variant writes them; None when it has none (the caller encodes them)."""
        return None

    @abstractmethod
    def match_play(self, position: Any, dice: tuple[int, int], text: str) -> Any: ...

    @abstractmethod
    def parse_moves(self, text: str) -> list[tuple[int, int]]: ...

    @abstractmethod
    def turn_builder(self, position: Any, dice: tuple[int, int]) -> BaseTurnBuilder: ...

    # -- results ------------------------------------------------------------------------
    @abstractmethod
    def result(self, position: Any, rules: Iterable[str] = ()) -> GameResult | None: ...

    @abstractmethod
    def forfeit(self, position: Any, loser: Color, termination: Termination) -> GameResult: ...

    def kind(self, name: str) -> Any:
        """The result kind called ``name``; ValueError if this variant has none such."""
        try:
            return self.kinds(name)
        except ValueError:
            known = ", ".join(k.value for k in self.kinds)
            raise ValueError(f"{self.name} nardy has no result {name!r}; known: {known}") from None

    # -- options ------------------------------------------------------------------------
    def check(self, options: GameOptions) -> None:
        """Refuse options this variant does not play (ValueError naming them)."""
        unknown = set(options.rules) - self.house_rules
        if unknown:
            raise ValueError(
                f"{self.name} nardy has no rule option {', '.join(sorted(unknown))}"
                + (f" (it has: {', '.join(sorted(self.house_rules))})" if self.house_rules else "")
            )

    # -- views --------------------------------------------------------------------------
    @abstractmethod
    def board(self, position: Any) -> Board: ...

    @abstractmethod
    def point_index(self, color: Color, point: int) -> int: ...

    @abstractmethod
    def pips(self, position: Any, color: Color) -> int: ...


def not_all_home(step: str) -> IllegalPlay:
    """The refusal of ``step`` bearing a checker off while others are outside the home."""
    return IllegalPlay(f"{step}: cannot bear off until all 15 checkers are home (RULES §4.1)")


class BaseTurnBuilder(ABC):
    """A turn played step by step, what every variant's ``TurnBuilder`` shares: the dice
    of the turn, the steps so far with the state each one reached (so undo and rewind are
    exact), and the refusals that do not depend on the board. A variant adds its board
    (``board``, ``position``), which steps are legal (``legal_steps``, ``_one``), how a
    move reads as dice (``_dice_for``) and when a state is a legal play (``_is_end``).
    """

    #: The variant's play type, ``Play(steps, end)``, and step notation, ``(src, dst)``.
    play_type: ClassVar[type]
    format_step: ClassVar[Callable[[int, int], str]]

    def __init__(self, position: Any, dice: tuple[int, int], plays: list[Any], start: Any) -> None:
        a, b = dice
        self.start_position = position
        self.dice: tuple[int, ...] = (a,) * 4 if a == b else (max(a, b), min(a, b))
        self.plays = plays
        self.most = max((len(p.steps) for p in plays), default=0)
        self.steps: list[Any] = []
        self._states: list[Any] = [start]  # the state before each step and after the last

    # -- state --------------------------------------------------------------------------
    @property
    @abstractmethod
    def board(self) -> tuple[int, ...]:
        """The mover's counts by own point after the steps so far."""

    @property
    @abstractmethod
    def position(self) -> Any:
        """The position the steps so far make, with the opponent to move."""

    @property
    def remaining(self) -> tuple[int, ...]:
        """The dice not played yet."""
        left = list(self.dice)
        for s in self.steps:
            left.remove(s.die)
        return tuple(left)

    @property
    def complete(self) -> bool:
        """True when the steps so far make a legal play (or there is none to make)."""
        return not self.plays or self._is_end(self._states[-1], len(self.steps))

    def play(self) -> Any:
        """The legal play made by the steps so far; IllegalPlay if they are not one."""
        if not self.plays:
            if self.steps:
                raise IllegalPlay("no legal play exists with these dice")
            return self.play_type((), self.start_position.passed())
        if not self.complete:
            raise IllegalPlay(self._incomplete_reason())
        return self.play_type(tuple(self.steps), self.position)

    # -- stepping -----------------------------------------------------------------------
    @abstractmethod
    def legal_steps(self) -> list[Any]:
        """Every single step from here that can still be completed into a legal play."""

    def step(self, src: int, dst: int) -> list[Any]:
        """Move one checker from ``src`` to ``dst`` (``OFF``: borne off, ``BAR``: entering)
        with one or more dice: several when no single die covers the distance (``24/13``).

        Raises IllegalPlay with the reason when the move cannot be made; nothing changes then.
        """
        self.home_first(src, dst)
        first: IllegalPlay | None = None
        for dice in self._dice_for(src, dst):
            try:
                return self._apply(src, dice)
            except IllegalPlay as e:
                first = first or e
        raise first or IllegalPlay(f"{self.format_step(src, dst)}: no die left covers this move")

    def home_first(self, src: int, dst: int) -> None:
        """Bearing off with checkers still outside the home is refused for that, whatever
        the dice would meet on the way (RULES §4.1; the moving checker itself may still get
        home first): IllegalPlay."""
        if dst == OFF and sum(self.board[7:]) - (src >= 7) > 0:  # others still outside
            raise not_all_home(self.format_step(src, dst))

    def undo(self) -> Any:
        """Take back the last step (and return it); None if there is none."""
        if not self.steps:
            return None
        self._states.pop()
        return self.steps.pop()

    def rewind(self, mark: int) -> None:
        """Take back every step after the first ``mark``."""
        del self.steps[mark:]
        del self._states[mark + 1 :]

    # -- internals ----------------------------------------------------------------------
    @abstractmethod
    def _is_end(self, state: Any, used: int) -> bool:
        """Is ``state``, reached with ``used`` dice, one of the legal plays?"""

    @abstractmethod
    def _dice_for(self, src: int, dst: int) -> list[tuple[int, ...]]:
        """Readings of a move as a die sequence for one checker, the most natural first."""

    @abstractmethod
    def _one(self, src: int, die: int) -> Any:
        """Play one die with the checker on ``src`` (the step made) or raise IllegalPlay."""

    def _apply(self, src: int, dice: tuple[int, ...]) -> list[Any]:
        """Play ``dice`` in order with one checker from ``src``, all or nothing."""
        mark = len(self.steps)
        try:
            at = src
            for die in dice:
                if at == OFF:
                    raise IllegalPlay(
                        f"{self.format_step(src, OFF)}: the checker is off before all dice are used"
                    )
                at = self._one(at, die).dst
            return self.steps[mark:]
        except IllegalPlay:
            self.rewind(mark)
            raise

    def _dead_end_reason(self) -> str:
        most = self.most
        if most == 1 and len(self.dice) == 2 and self.dice[0] != self.dice[1]:
            return f"the larger die ({self.dice[0]}) must be played (RULES §3.6)"
        return (
            f"after this step the play cannot be finished legally: a legal play uses {most} "
            f"{'die' if most == 1 else 'dice'} (RULES §3.6)"
        )

    def _incomplete_reason(self) -> str:
        return (
            f"the play uses {len(self.steps)} of the dice but a legal play uses {self.most} "
            "(RULES §3.6: play as many dice as possible)"
        )

    def _left_text(self) -> str:
        return "-".join(map(str, self.remaining)) or "none"


def without(dice: tuple[int, ...], die: int) -> tuple[int, ...]:
    """``dice`` less one ``die``."""
    i = dice.index(die)
    return dice[:i] + dice[i + 1 :]


# Each variant lives in its own package, imported the first time it is asked for.
_PACKAGES = {"long": "nardy.long", "short": "nardy.short"}
_LOADED: dict[str, Variant] = {}


def variant(name: str) -> Variant:
    """The variant called ``name`` (``""``: :data:`DEFAULT_VARIANT`, long nardy); ValueError
    if unknown."""
    found = _load(name or DEFAULT_VARIANT)
    if found is None:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(available())}")
    return found


def available() -> list[str]:
    """The names of the variants this installation can play."""
    return [n for n in _PACKAGES if _load(n) is not None]


def _load(name: str) -> Variant | None:
    if name in _LOADED:
        return _LOADED[name]
    package = _PACKAGES.get(name)
    if package is None:
        return None
    try:
        module = importlib.import_module(package)
    except ModuleNotFoundError as e:
        if e.name != package:
            raise
        return None
    found = getattr(module, "VARIANT", None)
    if not isinstance(found, Variant):
        return None
    _LOADED[name] = found
    return found
