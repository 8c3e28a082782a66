"""The types every variant shares: sides, how a game ended, results, and rule errors.

Nothing here knows a rule of any variant: a result's *kind* (oin, mars, gammon, ...) and
its points are defined by the variant that scored it (:mod:`nardy.variant`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Protocol


class Color(IntEnum):
    """The two sides. White is, by definition, the side that moves first in a game."""

    WHITE = 0
    BLACK = 1

    @property
    def opponent(self) -> Color:
        return Color(1 - self)

    @property
    def letter(self) -> str:
        return "wb"[self]

    @property
    def sign(self) -> int:
        """+1 for white, -1 for black: the sign of this side's counts in a position text."""
        return 1 - 2 * self

    @classmethod
    def from_letter(cls, letter: str) -> Color:
        try:
            return cls("wb".index(letter))
        except ValueError:
            raise PositionError(f"side to move must be 'w' or 'b', not {letter!r}") from None


class PositionError(ValueError):
    """A position text that is not a valid position; the message names the problem."""


class NotationError(ValueError):
    """Text that is not move notation; the message names the bad token."""


class IllegalPlay(ValueError):
    """A play or step the rules refuse; ``str()`` gives the reason in words."""


class Termination(StrEnum):
    """How a game ended."""

    NORMAL = "normal"
    TIMEOUT = "timeout"
    RESIGNATION = "resignation"
    ABANDONMENT = "abandonment"
    ILLEGAL_PLAYS = "illegal-plays"  # too many refused plays in one game (ladders)


class ResultKind(Protocol):
    """A variant's kind of win (a ``StrEnum`` member such as ``oin`` or ``gammon``)."""

    @property
    def value(self) -> str: ...

    @property
    def points(self) -> int: ...


@dataclass(frozen=True, slots=True)
class GameResult:
    """Who won, how (a variant's result kind, which carries the points) and why it ended."""

    winner: Color
    kind: ResultKind
    termination: Termination = Termination.NORMAL

    @property
    def points(self) -> int:
        return self.kind.points

    @property
    def loser(self) -> Color:
        return self.winner.opponent

    def __str__(self) -> str:
        how = "" if self.termination is Termination.NORMAL else f" by {self.termination}"
        return f"{self.winner.name.lower()} wins {self.kind} ({self.points}){how}"
