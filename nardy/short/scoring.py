"""Short nardy results: single game, gammon, backgammon and forfeits (RULES.md §8).

There is no doubling cube: a game is worth 1, 2 or 3 points.
"""

from __future__ import annotations

from enum import StrEnum

from nardy.game import Color, GameResult, Termination
from nardy.short.position import BAR, Position

WINNERS_HOME = range(19, 25)  # the winner's home as the loser's own points 24..19


class Kind(StrEnum):
    """How much a short nardy game is won by."""

    SINGLE = "single"  # the loser has borne off at least one checker
    GAMMON = "gammon"  # the loser has borne off none
    BACKGAMMON = "backgammon"  # ... and has a checker on the bar or in the winner's home

    @property
    def points(self) -> int:
        return _POINTS[self]


_POINTS = {Kind.SINGLE: 1, Kind.GAMMON: 2, Kind.BACKGAMMON: 3}


def result(position: Position) -> GameResult | None:
    """The result when a side has borne off all 15, else None (§8)."""
    winner = position.winner
    if winner is None:
        return None
    loser = winner.opponent
    if position.borne_off(loser):
        return GameResult(winner, Kind.SINGLE)
    if position.count(loser, BAR) or any(position.count(loser, p) for p in WINNERS_HOME):
        return GameResult(winner, Kind.BACKGAMMON)
    return GameResult(winner, Kind.GAMMON)


def forfeit(position: Position, loser: Color, termination: Termination) -> GameResult:
    """The side that timed out, resigned or left loses: a gammon (2) if it has borne off
    nothing, else a single game (1); never a backgammon (§8)."""
    kind = Kind.SINGLE if position.borne_off(loser) else Kind.GAMMON
    return GameResult(loser.opponent, kind, termination)
