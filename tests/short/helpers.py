"""Building short-nardy test positions from each side's own points (RULES.md §9)."""

from __future__ import annotations

from nardy.game import Color
from nardy.short.position import Position

W, B = Color.WHITE, Color.BLACK


def pos(turn: Color, white: dict[int, int], black: dict[int, int], bar=(0, 0)) -> Position:
    """A position from ``{own point: count}`` per side; the rest of each side is off."""
    board = [0] * 24
    for point, n in white.items():
        board[24 - point] += n  # §9: white's point p at a = 24 - p
    for point, n in black.items():
        assert board[point - 1] == 0, "a point holds one side's checkers"
        board[point - 1] -= n  # §9: black's point q at a = q - 1
    return Position.from_board(turn, board, bar)
