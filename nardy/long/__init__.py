"""Long nardy (RULES.md §1-7) behind the variant API: ``VARIANT`` is what :func:`nardy.variant`
returns for ``"long"``. The modules here are the rules; nothing outside ``nardy/`` imports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nardy.game import Color, GameResult, Termination
from nardy.long.movegen import end_boards, end_texts, legal_plays, legal_plays_wire
from nardy.long.notation import parse_moves
from nardy.long.position import ABS, HEAD, Position
from nardy.long.scoring import Kind, forfeit, result
from nardy.long.turn import TurnBuilder, match_play
from nardy.variant import Board, Variant


class LongNardy(Variant):
    """Long nardy: no hitting, blocks, the head rule and the six-point rule; oin, mars, koks."""

    name = "long"
    house_rules = frozenset({"koks"})
    kinds = Kind
    head = HEAD

    def start(self) -> Position:
        return Position.start()

    def parse(self, text: str) -> Position:
        return Position.parse(text)

    def passed(self, position: Position) -> Position:
        return position.passed()

    def legal_plays(self, position: Position, dice: tuple[int, int]):
        return legal_plays(position, dice)

    def end_texts(self, position: Position, dice: tuple[int, int]) -> list[str]:
        return end_texts(position, dice)

    def end_boards(self, position: Position, dice: tuple[int, int]) -> bytes:
        return end_boards(position, dice)

    def legal_plays_wire(self, plays: Sequence[Any]) -> bytes | None:
        return legal_plays_wire(plays)

    def match_play(self, position: Position, dice: tuple[int, int], text: str):
        return match_play(position, dice, text)

    def parse_moves(self, text: str) -> list[tuple[int, int]]:
        return parse_moves(text)

    def turn_builder(self, position: Position, dice: tuple[int, int]) -> TurnBuilder:
        return TurnBuilder(position, dice)

    def result(self, position: Position, rules: Iterable[str] = ()) -> GameResult | None:
        return result(position, koks="koks" in rules)

    def forfeit(self, position: Position, loser: Color, termination: Termination) -> GameResult:
        return forfeit(position, loser, termination)

    def board(self, position: Position) -> Board:
        off = (position.borne_off(Color.WHITE), position.borne_off(Color.BLACK))
        return Board(position.turn, position.board, (0, 0), off)

    def point_index(self, color: Color, point: int) -> int:
        return ABS[color][point]

    def pips(self, position: Position, color: Color) -> int:
        return position.pips(color)


VARIANT = LongNardy()
