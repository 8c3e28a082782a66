"""Results of a game: oin, mars, koks, and forfeits by timeout, resignation or leaving (§5)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from nardy.position import Color, Position

START_QUARTER = range(19, 25)  # a side's own points 24..19


class Termination(StrEnum):
    """How a game ended."""

    NORMAL = "normal"
    TIMEOUT = "timeout"
    RESIGNATION = "resignation"
    ABANDONMENT = "abandonment"
    ILLEGAL_PLAYS = "illegal-plays"  # too many refused plays in one game (ladders)


class Kind(StrEnum):
    OIN = "oin"
    MARS = "mars"
    KOKS = "koks"


POINTS = {Kind.OIN: 1, Kind.MARS: 2, Kind.KOKS: 3}


@dataclass(frozen=True, slots=True)
class GameResult:
    winner: Color
    kind: Kind
    termination: Termination = Termination.NORMAL

    @property
    def points(self) -> int:
        return POINTS[self.kind]

    @property
    def loser(self) -> Color:
        return self.winner.opponent

    def __str__(self) -> str:
        how = "" if self.termination is Termination.NORMAL else f" by {self.termination}"
        return f"{self.winner.name.lower()} wins {self.kind} ({self.points}){how}"


def result(position: Position, *, koks: bool = False) -> GameResult | None:
    """The result when a side has borne off all 15, else None (§5).

    With the ``koks`` variant option a loser with nothing off and a checker still in its
    starting quarter (its points 24..19) loses 3 points.
    """
    winner = position.winner
    if winner is None:
        return None
    loser = winner.opponent
    if position.borne_off(loser):
        return GameResult(winner, Kind.OIN)
    if koks and any(position.count(loser, p) for p in START_QUARTER):
        return GameResult(winner, Kind.KOKS)
    return GameResult(winner, Kind.MARS)


def forfeit(position: Position, loser: Color, termination: Termination) -> GameResult:
    """The side that timed out, resigned or left loses: mars if it bore off nothing (§5).

    A loss by too many illegal plays (a ladder rule) is scored the same way."""
    kind = Kind.OIN if position.borne_off(loser) else Kind.MARS
    return GameResult(loser.opponent, kind, termination)
