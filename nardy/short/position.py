"""Short nardy (backgammon) positions: board, bar, side to move and position text (RULES.md §9).

Coordinates:

* the **absolute index** ``a = 0..23`` of the position text: white's point ``p`` is at
  ``a = 24 - p`` (white moves toward ``a = 23``), black's point ``q`` at ``a = q - 1``
  (black moves toward ``a = 0``);
* **player-relative points** ``24..1`` of move notation, with ``25`` standing for the bar
  and ``0`` for "off".
"""

from __future__ import annotations

import re
from typing import NamedTuple

from nardy.game import Color, PositionError

CHECKERS = 15
POINTS = 24
BAR = 25  # the bar as a player-relative point: a checker there enters on 25 - die
OFF = 0

# The standard backgammon start in each side's own points (RULES.md §8).
START_POINTS = {24: 2, 13: 5, 8: 3, 6: 5}


def absolute(color: Color, point: int) -> int:
    """Absolute index of ``color``'s player-relative ``point`` (1..24)."""
    return POINTS - point if color is Color.WHITE else point - 1


def relative(color: Color, a: int) -> int:
    """``color``'s player-relative point (1..24) at absolute index ``a``."""
    return POINTS - a if color is Color.WHITE else a + 1


_TEXT = re.compile(r"^\s*([A-Za-z]+)\s*/([^/]*)/([^/]*?)\s*$", re.S)
_COUNT = re.compile(r"[+-]?\d{1,3}", re.ASCII)


class Position(NamedTuple):
    """An immutable, hashable short nardy position.

    ``board`` holds the 24 counts by absolute index, white positive and black negative;
    ``bar`` the checkers of (white, black) on the bar. Borne-off checkers are
    ``15 - on board - on bar`` per side.
    """

    turn: Color
    board: tuple[int, ...]
    bar: tuple[int, int] = (0, 0)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def start(cls) -> Position:
        """2 on the 24-point, 5 on the 13, 3 on the 8, 5 on the 6; white to move (§8)."""
        board = [0] * POINTS
        for color in Color:
            for point, n in START_POINTS.items():
                board[absolute(color, point)] = n * color.sign
        return cls(Color.WHITE, tuple(board), (0, 0))

    @classmethod
    def parse(cls, text: str) -> Position:
        """Read ``<side>/<c0>,...,<c23>/<white bar>,<black bar>``; PositionError if invalid."""
        m = _TEXT.match(text)
        if not m:
            raise PositionError(
                "expected '<w|b>/<24 comma-separated counts>/<white bar>,<black bar>', "
                f"got {text!r}"
            )
        side, counts, bar = m.groups()
        turn = Color.from_letter(side.strip())
        board = _numbers(counts, POINTS, "point counts", lambda i: f"point a={i}")
        bars = _numbers(bar, 2, "bar counts (white, black)", lambda i: f"{Color(i).name} bar")
        return cls.from_board(turn, board, bars)

    @classmethod
    def from_board(
        cls,
        turn: Color,
        board: list[int] | tuple[int, ...],
        bar: list[int] | tuple[int, ...] = (0, 0),
    ) -> Position:
        """Build a position from 24 signed counts and the two bar counts, checking totals."""
        if len(board) != POINTS:
            raise PositionError(f"expected 24 point counts, got {len(board)}")
        if len(bar) != 2:
            raise PositionError(f"expected 2 bar counts (white, black), got {len(bar)}")
        for color in Color:
            if bar[color] < 0:
                raise PositionError(f"{color.name.lower()} bar: {bar[color]} is negative")
        totals = []
        for color in Color:
            s = color.sign
            n = sum(c * s for c in board if c * s > 0)
            total = n + bar[color]
            if total > CHECKERS:
                raise PositionError(
                    f"{color.name.lower()} has {total} checkers on the board and bar "
                    f"({n} + {bar[color]}); at most 15"
                )
            totals.append(total)
        if not any(totals):
            raise PositionError("both sides have borne off all 15 checkers")
        return cls(Color(turn), tuple(board), (bar[0], bar[1]))

    # -- text ---------------------------------------------------------------------------
    def text(self) -> str:
        """The position text (RULES.md §9)."""
        return f"{self.turn.letter}/{','.join(map(str, self.board))}/{self.bar[0]},{self.bar[1]}"

    def __str__(self) -> str:
        return self.text()

    # -- queries ------------------------------------------------------------------------
    def count(self, color: Color, point: int) -> int:
        """Checkers of ``color`` on its own ``point`` (1..24, or 25 for the bar)."""
        if point == BAR:
            return self.bar[color]
        c = self.board[absolute(color, point)] * color.sign
        return c if c > 0 else 0

    def on_bar(self, color: Color) -> int:
        return self.bar[color]

    def on_board(self, color: Color) -> int:
        """Checkers of ``color`` on the 24 points (not counting the bar)."""
        s = color.sign
        return sum(c * s for c in self.board if c * s > 0)

    def borne_off(self, color: Color) -> int:
        return CHECKERS - self.on_board(color) - self.bar[color]

    def pips(self, color: Color) -> int:
        """Pip count: the distance every checker still has to travel (the bar is 25)."""
        return sum(p * self.count(color, p) for p in range(1, 26))

    @property
    def winner(self) -> Color | None:
        """The side that has borne off all 15, if any."""
        for color in Color:
            if self.borne_off(color) == CHECKERS:
                return color
        return None

    def passed(self) -> Position:
        """The same board with the opponent to move (a turn with no legal play)."""
        return Position(self.turn.opponent, self.board, self.bar)


def _numbers(text: str, n: int, what: str, name) -> list[int]:
    fields = [f.strip() for f in text.split(",")]
    if len(fields) != n:
        raise PositionError(f"expected {n} {what}, got {len(fields)}")
    out = []
    for i, f in enumerate(fields):
        if not _COUNT.fullmatch(f):
            raise PositionError(f"{name(i)}: {f!r} is not a whole number")
        out.append(int(f))
    return out
