"""Long nardy positions: the board, the side to move, and the position text (RULES.md §1).

Two coordinate systems meet here:

* the **absolute index** ``a = 0..23`` of the position text (white's head is ``a=0``,
  black's head ``a=12``);
* **player-relative points** ``24..1`` of move notation: each side's own path from its
  head (24) to its last point (1); ``0`` stands for "off".
"""

from __future__ import annotations

import re
from typing import NamedTuple

from nardy.game import Color, PositionError
from nardy.long.compiled import MODULE as _compiled

CHECKERS = 15
POINTS = 24
HEAD = 24


def absolute(color: Color, point: int) -> int:
    """Absolute index of ``color``'s player-relative ``point`` (1..24)."""
    return POINTS - point if color is Color.WHITE else (36 - point) % POINTS


def relative(color: Color, a: int) -> int:
    """``color``'s player-relative point (1..24) at absolute index ``a``."""
    return POINTS - a if color is Color.WHITE else (36 - a - 1) % POINTS + 1


# Per side: ABS[color][p] is the absolute index of point p (index 0 unused).
ABS: tuple[tuple[int, ...], tuple[int, ...]] = (
    (-1, *(absolute(Color.WHITE, p) for p in range(1, 25))),
    (-1, *(absolute(Color.BLACK, p) for p in range(1, 25))),
)

_TEXT = re.compile(r"^\s*([A-Za-z]+)\s*/\s*(.*?)\s*$", re.S)
_COUNT = r"\s*[+-]?\d{1,3}\s*"
_COUNTS = re.compile(rf"{_COUNT}(?:,{_COUNT}){{{POINTS - 1}}}", re.ASCII)  # the common case


class Position(NamedTuple):
    """An immutable, hashable long nardy position.

    ``board`` holds the 24 counts by absolute index, white positive and black negative;
    borne-off checkers are ``15 - on board`` per side.
    """

    turn: Color
    board: tuple[int, ...]

    # -- construction -------------------------------------------------------------------
    @classmethod
    def start(cls) -> Position:
        """The starting position: 15 on each head, white to move (RULES.md §2)."""
        board = [0] * POINTS
        board[0], board[12] = CHECKERS, -CHECKERS
        return cls(Color.WHITE, tuple(board))

    @classmethod
    def parse(cls, text: str) -> Position:
        """Read the position text ``<side>/<c0>,...,<c23>``; raise PositionError if invalid."""
        m = _TEXT.match(text)
        if not m:
            raise PositionError(f"expected '<w|b>/<24 comma-separated counts>', got {text!r}")
        side, counts = m.groups()
        turn = Color.from_letter(side)
        if _COUNTS.fullmatch(counts):  # 24 well-formed counts: no need to look at each
            return cls.from_board(turn, [int(f) for f in counts.split(",")])
        fields = [f.strip() for f in counts.split(",")]
        if len(fields) != POINTS:
            raise PositionError(f"expected 24 point counts, got {len(fields)}")
        board = []
        for a, f in enumerate(fields):
            if not re.fullmatch(r"[+-]?\d{1,3}", f, re.ASCII):
                raise PositionError(f"point a={a}: {f!r} is not a whole number")
            board.append(int(f))
        return cls.from_board(turn, board)

    @classmethod
    def from_board(cls, turn: Color, board: list[int] | tuple[int, ...]) -> Position:
        """Build a position from 24 signed counts, checking checker totals."""
        if len(board) != POINTS:
            raise PositionError(f"expected 24 point counts, got {len(board)}")
        white = sum(c for c in board if c > 0)
        black = -sum(c for c in board if c < 0)
        for name, n in (("white", white), ("black", black)):
            if n > CHECKERS:
                raise PositionError(f"{name} has {n} checkers on the board; at most 15")
        if white == 0 and black == 0:
            raise PositionError("both sides have borne off all 15 checkers")
        return cls(Color(turn), tuple(board))

    # -- text ---------------------------------------------------------------------------
    def text(self) -> str:
        """The position text (RULES.md §1)."""
        if _compiled is not None:
            return _compiled.text(self.turn, self.board)
        return f"{self.turn.letter}/{','.join(map(str, self.board))}"

    def __str__(self) -> str:
        return self.text()

    # -- queries ------------------------------------------------------------------------
    def count(self, color: Color, point: int) -> int:
        """Checkers of ``color`` on its own player-relative ``point`` (1..24)."""
        c = self.board[ABS[color][point]] * color.sign
        return c if c > 0 else 0

    def on_board(self, color: Color) -> int:
        s = color.sign
        return sum(c * s for c in self.board if c * s > 0)

    def borne_off(self, color: Color) -> int:
        return CHECKERS - self.on_board(color)

    def is_first_turn(self, color: Color | None = None) -> bool:
        """True while all 15 of the side's checkers are on its head (RULES.md §1)."""
        color = self.turn if color is None else color
        return self.count(color, HEAD) == CHECKERS

    def pips(self, color: Color) -> int:
        """Pip count: the sum of the distances every checker still has to travel."""
        return sum(p * self.count(color, p) for p in range(1, 25))

    @property
    def winner(self) -> Color | None:
        """The side that has borne off all 15 (none of its checkers left on the board), if any."""
        if max(self.board) <= 0:
            return Color.WHITE
        if min(self.board) >= 0:
            return Color.BLACK
        return None

    def passed(self) -> Position:
        """The same board with the opponent to move (a turn with no legal play)."""
        return Position(self.turn.opponent, self.board)
