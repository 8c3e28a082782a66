"""Short nardy move notation (RULES.md §9, shorthands as §1): ``bar/22 13/7* 6/off``.

A written play is read into *moves*: ``(src, dst)`` pairs in the mover's points, with
``25`` for the bar and ``0`` for off. ``*`` (a hit) is accepted and ignored on reading: the
position decides whether a step hits. ``24/13`` (one checker, several dice), ``24/18/13``
(a chain) and ``8/5(2)`` (a repeat) are read as moves; matching moves to dice is the
turn's job (:mod:`nardy.short.turn`).
"""

from __future__ import annotations

import re

from nardy.game import NotationError
from nardy.short.position import BAR, OFF

_MOVE = re.compile(r"(bar|\d{1,2})((?:/(?:\d{1,2}|off)\*?)+)(?:\((\d)\))?", re.I | re.ASCII)


def parse_moves(text: str) -> list[tuple[int, int, bool]]:
    """Read ``bar/22 13/7* 6/off``, ``24/13``, ``24/18*/13``, ``8/5(2)`` or ``-``.

    Returns ``(src, dst, starred)`` per move: ``starred`` says a ``*`` was written after
    ``dst``. Readers do not require the marks; they only choose between readings that
    end in different positions (``24/13`` vs ``24/18*/13``).
    """
    text = text.strip()
    if text in ("-", ""):
        return []
    moves: list[tuple[int, int, bool]] = []
    for token in re.split(r"[\s,]+", text):
        m = _MOVE.fullmatch(token)
        if not m:
            raise NotationError(
                f"{token!r} is not a move (expected e.g. 24/18, 13/7*, bar/22, 6/off, 8/5(2))"
            )
        first = BAR if m.group(1).lower() == "bar" else int(m.group(1))
        marks = [p.endswith("*") for p in m.group(2).split("/")[1:]]
        points = [first] + [_point(p.rstrip("*")) for p in m.group(2).split("/")[1:]]
        repeat = int(m.group(3) or 1)
        if not 1 <= repeat <= 4:
            raise NotationError(f"{token!r}: a move repeats 1 to 4 times")
        chain = list(zip(points, points[1:], marks, strict=False))
        for src, dst, _ in chain:
            if not 1 <= src <= BAR:
                raise NotationError(f"{token!r}: point {src} is not on the board (1..24, bar)")
            if dst != OFF and not 1 <= dst <= 24:
                raise NotationError(f"{token!r}: point {dst} is not on the board (1..24)")
            if dst != OFF and dst >= src:
                raise NotationError(f"{token!r}: checkers move from higher to lower points")
            if src == BAR and dst == OFF:
                raise NotationError(f"{token!r}: a checker on the bar enters; it cannot bear off")
        moves.extend(chain * repeat)
    return moves


def format_step(src: int, dst: int, hit: bool = False) -> str:
    """``13/7*``, ``bar/22``, ``6/off``."""
    return f"{'bar' if src == BAR else src}/{'off' if dst == OFF else dst}{'*' if hit else ''}"


def _point(text: str) -> int:
    return OFF if text.lower() == "off" else int(text)
