"""A board as an SVG picture: the web view's live boards and ``nardy export --svg``.

:func:`board_svg` draws a variant's board view (:class:`nardy.variant.Board`: 24 signed
counts by absolute index, checkers on the bar and borne off per colour) from one side's
point of view, in the usual two-row layout: that side's points 13..24 along the top from
left to right (its 24 top right), 12..1 along the bottom (its home, 6..1, bottom right).
The variant places each side's own point on the board (``point_index``), so the same
picture serves long nardy (both sides travel the same way) and short nardy (opposite
ways, with a bar). Pure: text in, text out, every name escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Protocol

from nardy import Color, variant, wire
from nardy.v1 import game_pb2 as pb

STACK = 5  # checkers drawn per point before the count is written on the last one
W = 40  # a point's width
R = 17  # a checker's radius
BAR_W = 34
EDGE = 12
TRAY = 46  # borne-off tray on the right
NUM_H = 22  # the point numbers above and below
HALF_H = 2 * R * STACK + 8
GAP = 44  # between the two halves: the dice
BOARD_W = EDGE + 6 * W + BAR_W + 6 * W + EDGE
WIDTH = BOARD_W + TRAY
HEIGHT = NUM_H + EDGE + HALF_H + GAP + HALF_H + EDGE + NUM_H

FILL = {Color.WHITE: "#f7f3e8", Color.BLACK: "#2b2b2b"}
STROKE = {Color.WHITE: "#6b5b3e", Color.BLACK: "#000000"}
TEXT_ON = {Color.WHITE: "#2b2b2b", Color.BLACK: "#f7f3e8"}
POINT_FILL = ("#b5793f", "#7c4a22")
MARK = "#2fbf4f"


class BoardView(Protocol):
    """What the picture reads of a variant's board view."""

    @property
    def turn(self) -> Color: ...
    @property
    def points(self) -> Sequence[int]: ...
    @property
    def bar(self) -> Sequence[int]: ...
    @property
    def off(self) -> Sequence[int]: ...


@dataclass(frozen=True)
class Caption:
    """The words around the board: names, pips, dice, whose turn."""

    white: str = "white"
    black: str = "black"
    pips: tuple[int, int] | None = None
    dice: tuple[int, ...] = ()
    to_move: Color | None = None
    title: str = ""


def _point_x(p: int) -> float:
    """Left edge of the column of the perspective side's point ``p``."""
    col = p - 13 if p >= 13 else 12 - p  # 0..11 from the left
    return EDGE + col * W + (BAR_W if col >= 6 else 0)


def _checker(cx: float, cy: float, color: Color, label: str = "", mark: bool = False) -> str:
    ring = (
        f' stroke="{MARK}" stroke-width="4"'
        if mark
        else (f' stroke="{STROKE[color]}" stroke-width="1.5"')
    )
    out = (
        f'<circle class="checker {color.name.lower()}" cx="{cx:.1f}" cy="{cy:.1f}" r="{R - 1}"'
        f' fill="{FILL[color]}"{ring}/>'
    )
    if label:
        out += (
            f'<text x="{cx:.1f}" y="{cy + 5:.1f}" text-anchor="middle" font-size="14"'
            f' font-weight="bold" fill="{TEXT_ON[color]}">{escape(label)}</text>'
        )
    return out


def board_svg(
    board: BoardView,
    point_index: Callable[[Color, int], int],
    *,
    perspective: Color = Color.WHITE,
    marks: Iterable[int] = (),
    caption: Caption | None = None,
    attrs: dict[str, str] | None = None,
) -> str:
    """The board seen from ``perspective`` as a standalone ``<svg>`` element.

    ``marks`` are absolute indices to ring (where the last play landed); ``attrs`` become
    ``data-*`` attributes of the root element (the web view puts the game and turn there).
    """
    cap = caption or Caption()
    marks = set(marks)
    me = perspective
    top_y = NUM_H + EDGE
    bottom_y = top_y + HALF_H + GAP + HALF_H
    parts: list[str] = []
    data = "".join(f' data-{escape(k)}="{escape(str(v))}"' for k, v in (attrs or {}).items())
    label = cap.title or f"{cap.white} (white) against {cap.black} (black)"
    parts.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="nardy-board" viewBox="0 0 {WIDTH} '
        f'{HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(label)}"'
        f"{data}>"
    )
    parts.append(f"<title>{escape(label)}</title>")
    parts.append(
        f'<rect x="0" y="{NUM_H}" width="{BOARD_W}" height="{HEIGHT - 2 * NUM_H}"'
        ' fill="#5a3a1c" rx="6"/>'
    )
    parts.append(
        f'<rect x="{EDGE}" y="{top_y}" width="{BOARD_W - 2 * EDGE}"'
        f' height="{bottom_y - top_y}" fill="#e8d3a9"/>'
    )
    bar_x = EDGE + 6 * W
    parts.append(
        f'<rect x="{bar_x}" y="{NUM_H}" width="{BAR_W}" height="{HEIGHT - 2 * NUM_H}"'
        ' fill="#5a3a1c"/>'
    )
    for p in range(1, 25):
        x = _point_x(p)
        top = p >= 13
        base, tip = (top_y, top_y + HALF_H) if top else (bottom_y, bottom_y - HALF_H)
        shade = POINT_FILL[p % 2]
        parts.append(
            f'<polygon class="point" data-point="{p}" points="{x:.1f},{base} {x + W:.1f},{base}'
            f' {x + W / 2:.1f},{tip}" fill="{shade}"/>'
        )
        num_y = NUM_H - 6 if top else HEIGHT - 6
        parts.append(
            f'<text x="{x + W / 2:.1f}" y="{num_y}" text-anchor="middle" font-size="13"'
            f' fill="#444">{p}</text>'
        )
        count = board.points[point_index(me, p)]
        if not count:
            continue
        owner = Color.WHITE if count > 0 else Color.BLACK
        n = abs(count)
        shown = min(n, STACK)
        for i in range(shown):
            cy = base + R + 2 * R * i if top else base - R - 2 * R * i
            last = i == shown - 1
            text = str(n) if last and n > STACK else ""
            parts.append(_checker(x + W / 2, cy, owner, text, last and point_index(me, p) in marks))
    # the bar (short nardy): each side's checkers in the half it enters from
    for color in Color:
        n = board.bar[color] if len(board.bar) > color else 0
        if n:
            cy = top_y + HALF_H / 2 if color is me else bottom_y - HALF_H / 2
            parts.append(_checker(bar_x + BAR_W / 2, cy, color, str(n) if n > 1 else ""))
    # borne off: a tray on the right, the perspective side's at the bottom
    tray_x = BOARD_W + 6
    for color in Color:
        n = board.off[color]
        y = bottom_y - 30 if color is me else top_y + 6
        parts.append(
            f'<rect x="{tray_x}" y="{y}" width="{TRAY - 10}" height="24" rx="4"'
            f' fill="{FILL[color]}" stroke="{STROKE[color]}"/>'
            f'<text class="off {color.name.lower()}" x="{tray_x + (TRAY - 10) / 2}" y="{y + 17}"'
            f' text-anchor="middle" font-size="13" fill="{TEXT_ON[color]}">{n}</text>'
        )
    # dice in the half of the side to move; names and pips along the middle
    mid_y = top_y + HALF_H + GAP / 2
    if cap.dice:
        right = cap.to_move is me
        x0 = (bar_x + BAR_W + 3 * W - 36) if right else (EDGE + 3 * W - 36)
        for i, d in enumerate(cap.dice[:2]):
            x = x0 + i * 40
            parts.append(
                f'<rect class="die" x="{x}" y="{mid_y - 16}" width="32" height="32" rx="6"'
                ' fill="#fffdf5" stroke="#333"/>'
                f'<text x="{x + 16}" y="{mid_y + 7}" text-anchor="middle" font-size="20"'
                f' font-weight="bold">{d}</text>'
            )
    names = {Color.WHITE: cap.white, Color.BLACK: cap.black}
    for color in Color:
        text = names[color]
        if cap.pips is not None:
            text += f" · {cap.pips[color]} pips"
        if cap.to_move is color:
            text = "▶ " + text
        y = mid_y + 16 if color is me else mid_y - 8
        x = EDGE + 4 if (cap.dice and cap.to_move is me) or not cap.dice else bar_x + BAR_W + 4
        parts.append(
            f'<text class="name {color.name.lower()}" x="{x}" y="{y}" font-size="12"'
            f' fill="#3b2a14">{escape(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def landing_points(point_index: Callable[[Color, int], int], side: Color, steps) -> set[int]:
    """Absolute indices where a play's steps landed (``steps``: (src, dst) in the mover's
    numbers; 0 is off, 25 the bar): the last play's ring."""
    return {point_index(side, dst) for _, dst in steps if 1 <= dst <= 24}


def state_svg(
    state: pb.GameState,
    *,
    perspective: Color = Color.WHITE,
    last_play: pb.PlayRecord | None = None,
    attrs: dict[str, str] | None = None,
) -> str:
    """The board of an arbiter's ``GameState`` (any variant), the last play ringed."""
    v = variant(state.options.variant)
    position = v.parse(state.position)
    board = v.board(position)
    marks: set[int] = set()
    if last_play is not None and last_play.notation not in ("", "-"):
        side = wire.color_of(last_play.side)
        if side is not None:
            try:
                marks = landing_points(v.point_index, side, v.parse_moves(last_play.notation))
            except ValueError:
                marks = set()
    in_progress = state.status == pb.GAME_STATUS_IN_PROGRESS
    to_move = wire.color_of(state.side_to_move) if in_progress else None
    caption = Caption(
        white=wire.player_name(state.white, "white"),
        black=wire.player_name(state.black, "black"),
        pips=(v.pips(position, Color.WHITE), v.pips(position, Color.BLACK)),
        dice=tuple(state.dice),
        to_move=to_move,
    )
    return board_svg(
        board, v.point_index, perspective=perspective, marks=marks, caption=caption, attrs=attrs
    )


__all__ = ["BoardView", "Caption", "board_svg", "landing_points", "state_svg"]
