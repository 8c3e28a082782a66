"""Short nardy (backgammon without the cube, RULES.md §8-9) behind the variant API:
``VARIANT`` is what :func:`nardy.variant` returns for ``"short"``. The modules here are the
pure rules (no I/O); nothing outside ``nardy/`` imports them.
"""

from __future__ import annotations

from collections.abc import Iterable

from nardy.game import Color, GameResult, Termination
from nardy.match import Opening
from nardy.short.movegen import Play, end_boards, legal_plays
from nardy.short.notation import parse_moves
from nardy.short.position import Position, absolute
from nardy.short.scoring import Kind, forfeit, result
from nardy.short.turn import TurnBuilder, match_play
from nardy.variant import Board, Variant


class ShortNardy(Variant):
    """Backgammon without the cube: hitting, the bar, gammon and backgammon (1/2/3 points)."""

    name = "short"
    kinds = Kind
    has_bar = True

    @property
    def default_opening(self) -> Opening:
        return Opening.USE_OPENING_DICE  # §8: the opening throw is white's first roll

    def start(self) -> Position:
        return Position.start()

    def parse(self, text: str) -> Position:
        return Position.parse(text)

    def passed(self, position: Position) -> Position:
        return position.passed()

    def legal_plays(self, position: Position, dice: tuple[int, int]) -> list[Play]:
        return legal_plays(position, dice)

    def end_boards(self, position: Position, dice: tuple[int, int]) -> bytes:
        return end_boards(position, dice)

    def match_play(self, position: Position, dice: tuple[int, int], text: str) -> Play:
        return match_play(position, dice, text)

    def parse_moves(self, text: str) -> list[tuple[int, int]]:
        return [(src, dst) for src, dst, _ in parse_moves(text)]

    def turn_builder(self, position: Position, dice: tuple[int, int]) -> TurnBuilder:
        return TurnBuilder(position, dice)

    def result(self, position: Position, rules: Iterable[str] = ()) -> GameResult | None:
        return result(position)

    def forfeit(self, position: Position, loser: Color, termination: Termination) -> GameResult:
        return forfeit(position, loser, termination)

    def board(self, position: Position) -> Board:
        off = (position.borne_off(Color.WHITE), position.borne_off(Color.BLACK))
        return Board(position.turn, position.board, position.bar, off)

    def point_index(self, color: Color, point: int) -> int:
        return absolute(color, point)

    def pips(self, position: Position, color: Color) -> int:
        return position.pips(color)


VARIANT = ShortNardy()
