"""The variant interface: everything the arbiter and engines need from a rule set.

Long nardy is the default. Short nardy (backgammon) is added as another module that
implements :class:`Variant` and registers in :data:`VARIANTS`; no long-nardy code changes.
"""

from __future__ import annotations

from typing import Protocol

from nardy.movegen import Play, legal_plays
from nardy.position import Color, Position
from nardy.scoring import GameResult, Termination, forfeit, result
from nardy.turn import match_play


class Variant(Protocol):
    name: str

    def start(self) -> Position: ...
    def parse(self, text: str) -> Position: ...
    def legal_plays(self, position: Position, dice: tuple[int, int]) -> list[Play]: ...
    def match_play(self, position: Position, dice: tuple[int, int], text: str) -> Play: ...
    def result(self, position: Position, *, koks: bool = False) -> GameResult | None: ...
    def forfeit(self, position: Position, loser: Color, why: Termination) -> GameResult: ...


class LongNardy:
    """Long nardy as RULES.md §1-5 define it."""

    name = "long"
    start = staticmethod(Position.start)
    parse = staticmethod(Position.parse)
    legal_plays = staticmethod(legal_plays)
    match_play = staticmethod(match_play)
    result = staticmethod(result)
    forfeit = staticmethod(forfeit)


VARIANTS: dict[str, Variant] = {"long": LongNardy()}


def variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}") from None
