"""Results of a game: oin, mars, koks, and forfeits by timeout, resignation or leaving (§5)."""

from __future__ import annotations

from enum import StrEnum

from nardy.game import Color, GameResult, Termination
from nardy.long.position import Position

START_QUARTER = range(19, 25)  # a side's own points 24..19


class Kind(StrEnum):
    """Long nardy's kinds of win and their points (§5)."""

    OIN = "oin"
    MARS = "mars"
    KOKS = "koks"

    @property
    def points(self) -> int:
        return _POINTS[self]


_POINTS = {Kind.OIN: 1, Kind.MARS: 2, Kind.KOKS: 3}


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
