"""Move notation (RULES.md §1): player-relative ``from/to`` steps, ``off``, ``-`` and shorthands.

A written play is read into *moves*: ``(src, dst)`` pairs in the mover's points, ``dst`` 0
for off. A move may cover several dice (``24/13``); matching moves to dice is the turn's
job (:mod:`nardy.long.turn`), because only the position says which reading is legal.
"""

from __future__ import annotations

import re

from nardy.game import NotationError

OFF = 0
_MOVE = re.compile(r"(\d{1,2})((?:/(?:\d{1,2}|off))+)(?:\((\d)\))?", re.I | re.ASCII)


def parse_moves(text: str) -> list[tuple[int, int]]:
    """Read ``24/18 18/13``, ``24/13``, ``24/16(2)``, ``24/18/13``, ``6/off`` or ``-``."""
    text = text.strip()
    if text in ("-", ""):
        return []
    moves: list[tuple[int, int]] = []
    for token in re.split(r"[\s,]+", text):
        m = _MOVE.fullmatch(token)
        if not m:
            raise NotationError(f"{token!r} is not a move (expected e.g. 24/18, 6/off, 24/16(2))")
        points = [int(m.group(1))] + [
            OFF if p.lower() == "off" else int(p) for p in m.group(2).split("/")[1:]
        ]
        repeat = int(m.group(3) or 1)
        if not 1 <= repeat <= 4:
            raise NotationError(f"{token!r}: a move repeats 1 to 4 times")
        chain = list(zip(points, points[1:], strict=False))
        for src, dst in chain:
            if not 1 <= src <= 24:
                raise NotationError(f"{token!r}: point {src} is not on the board (1..24)")
            if dst != OFF and not 1 <= dst <= 24:
                raise NotationError(f"{token!r}: point {dst} is not on the board (1..24)")
            if dst != OFF and dst >= src:
                raise NotationError(f"{token!r}: checkers move from higher to lower points")
        moves.extend(chain * repeat)
    return moves


def format_step(src: int, dst: int) -> str:
    return f"{src}/{'off' if dst == OFF else dst}"
