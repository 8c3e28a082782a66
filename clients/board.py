"""The board as the terminal client draws it: a pure function of the game state.

:func:`render` turns a ``GameState`` (as the arbiter sends it) into a ``rich.text.Text``:
the 24 points in the usual two-row layout seen from one side (``perspective``), that
side's home bottom right and its head top right, as on the seed sites' boards. Point
numbers are the perspective side's own (24 = its head, 1 = its last point). Beside the
board: both players with pip counts, borne-off checkers and clocks, the dice and the match
score. :func:`render_plain` gives the same as plain text (what tests and pipes see).

Nothing here touches a terminal or a clock: live clock values are computed by the caller
(:func:`live_clocks`) and passed in.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.text import Text

from nardy import wire
from nardy.game import Color
from nardy.match import DEFAULT_VARIANT
from nardy.v1 import game_pb2 as pb
from nardy.variant import Variant, variant

CELL = 4  # characters per point: the checker in column 2, numbers right-aligned in 1..2
BAR = 1  # width of the bar between the halves
PANEL = 23  # width of the side panel (the whole board stays within 80 columns)
FULL_WIDTH = 80  # columns the board with its side panel needs
COMPACT_WIDTH = 58  # columns of the compact layout (the panel under the board)
STACK = 5  # checkers drawn per point before a count replaces the last one


@dataclass(frozen=True)
class Glyphs:
    white: str
    black: str
    target: str
    h: str  # frame line
    v: str  # frame column
    tl: str
    tr: str
    bl: str
    br: str
    tm: str  # top tee (bar)
    bm: str  # bottom tee (bar)
    last: str  # beside a point number: the last play landed there


UNICODE = Glyphs("O", "X", "*", "─", "│", "┌", "┐", "└", "┘", "┬", "┴", "•")
ASCII = Glyphs("O", "X", "*", "-", "|", "+", "+", "+", "+", "+", "+", "'")

# Styles; without colour (NO_COLOR, not a terminal) only the characters remain.
S_FRAME = "grey50"
S_CELL = ("on color(94)", "on color(130)")  # two shades of wood, alternating points
S_BAR = "on color(58)"
# Checkers carry their own background, so that both read well on either shade of the board.
S_PIECE = {Color.WHITE: "bold black on bright_white", Color.BLACK: "bold bright_white on grey15"}
S_TARGET = "bold bright_green"
S_SELECTED = "bold reverse"
S_HEAD = "bold yellow"
S_NUMBER = "grey70"
S_LAST = "bold bright_cyan"
S_RUNNING = "bold yellow"
S_LOW = "bold red"
S_DIM = "grey50"


def side_name(color: Color) -> str:
    return color.name.lower()


def fmt_clock(ms: int | None) -> str:
    """``m:ss``, rounded up, so that 0:00 shows only when the time is gone."""
    if ms is None:
        return "-:--"
    s = max(0, math.ceil(ms / 1000))
    return f"{s // 60}:{s % 60:02d}"


def clock_running(state: pb.GameState) -> Color | None:
    """The side whose clock runs: a turn in progress waits for its play."""
    if state.status != pb.GAME_STATUS_IN_PROGRESS or not state.dice:
        return None
    return wire.color_of(state.side_to_move)


def rules_of(state: pb.GameState) -> Variant:
    """The game's variant (``options.variant``; empty means long nardy)."""
    return variant(state.options.variant)


def live_clocks(state: pb.GameState, elapsed_s: float) -> tuple[int, int]:
    """(white ms, black ms) ``elapsed_s`` seconds after ``state`` was received."""
    w, b = state.white_clock.remaining_ms, state.black_clock.remaining_ms
    running = clock_running(state)
    spent = int(elapsed_s * 1000)
    if running is Color.WHITE:
        w = max(0, w - spent)
    elif running is Color.BLACK:
        b = max(0, b - spent)
    return w, b


def state_for(
    position,
    *,
    rules: Variant | None = None,
    dice: Sequence[int] = (),
    white: str = "white",
    black: str = "black",
    to_move: bool = True,
) -> pb.GameState:
    """A GameState for a position of ``rules`` (the default variant's) outside any
    arbiter (replays of record files)."""
    return pb.GameState(
        status=pb.GAME_STATUS_IN_PROGRESS if to_move else pb.GAME_STATUS_FINISHED,
        options=pb.GameOptions(variant=rules.name if rules else DEFAULT_VARIANT),
        position=position.text(),
        side_to_move=wire.color_pb(position.turn) if to_move else pb.COLOR_UNSPECIFIED,
        dice=list(dice),
        white=pb.Player(name=white),
        black=pb.Player(name=black),
    )


def render(
    state: pb.GameState,
    perspective: Color = Color.WHITE,
    *,
    you: Color | None = None,
    position=None,
    dice_left: Sequence[int] | None = None,
    targets: Iterable[int] = (),
    selected: int | None = None,
    clocks: tuple[int, int] | None = None,
    marks: Iterable[int] = (),
    title: str | None = None,
    unicode: bool = True,
    show_clocks: bool = True,
    turn_label: str = "to move",
    compact: bool = False,
) -> Text:
    """The board of ``state`` seen from ``perspective``.

    ``position`` (of the game's variant) overrides the state's board (a turn being built
    step by step);
    ``dice_left`` the dice still to play (the others are shown as used); ``targets`` and
    ``selected`` are the perspective side's points (0 = off) to mark as legal targets and
    as the chosen checker; ``marks`` absolute indices where the last play landed (the top
    checker underlined, the point number followed by a dot, also without colour);
    ``clocks`` (white ms, black ms) the live clock values; ``you`` the person's side,
    labelled "you". ``show_clocks=False`` leaves the clocks out (replays);
    ``compact`` puts the side panel under the board (``COMPACT_WIDTH`` columns in all).
    Each side's checkers run along its own numbering, so the two variants' directions
    (the same way round in long nardy, opposite ways in short) come from the variant.
    """
    g = UNICODE if unicode else ASCII
    rules = rules_of(state)
    pos = position or (rules.parse(state.position) if state.position else rules.start())
    board = rules.board(pos)
    where = {color: (-1, *(rules.point_index(color, p) for p in range(1, 25))) for color in Color}
    me = perspective
    opp = me.opponent
    targets = set(targets)
    marks = set(marks)
    running = clock_running(state)
    if clocks is None:
        clocks = (state.white_clock.remaining_ms, state.black_clock.remaining_ms)
    clock_of = {Color.WHITE: clocks[0], Color.BLACK: clocks[1]}
    names = wire.names_of(state, guests=you is None)
    glyph = {Color.WHITE: g.white, Color.BLACK: g.black}
    in_progress = state.status == pb.GAME_STATUS_IN_PROGRESS
    to_move = wire.color_of(state.side_to_move) if in_progress else None

    def count_at(p: int) -> tuple[int, Color | None]:
        c = board.points[where[me][p]]
        if c > 0:
            return c, Color.WHITE
        if c < 0:
            return -c, Color.BLACK
        return 0, None

    top = list(range(13, 25))  # left to right: 13..24 (the head, 24, top right)
    bottom = list(range(12, 0, -1))  # 12..1 (home, 6..1, bottom right)
    heads = {}
    if rules.head is not None:  # each side's head (long nardy), as the perspective's points
        heads[rules.head] = "top"
        heads[where[me].index(where[opp][rules.head])] = "bottom"

    def cell(p: int, row: int, shade: str) -> Text:
        n, owner = count_at(p)
        t = Text(style=shade)
        if owner is not None and row < min(n, STACK):
            if n > STACK and row == STACK - 1:
                t.append(" ")
                t.append(f"{n:>2}", style=S_PIECE[owner])
                t.append(" ")
            else:
                style = S_PIECE[owner]
                if p == selected and row == min(n, STACK) - 1:
                    style += " reverse"
                if where[me][p] in marks and row == min(n, STACK) - 1:
                    style += " underline"
                t.append("  ")
                t.append(glyph[owner], style=style)
                t.append(" ")
        elif p in targets and row == n:
            t.append("  ")
            t.append(g.target, style=S_TARGET)
            t.append(" ")
        else:
            t.append(" " * CELL)
        return t

    def half_row(points: list[int], row: int) -> Text:
        t = Text()
        for p in points:
            t.append_text(cell(p, row, S_CELL[p % 2]))
        return t

    def number_row(points: list[int]) -> Text:
        t = Text()
        for p in points:
            if p == selected:
                t.append(f"[{p:>2}]", style=S_SELECTED)
            elif p in targets:
                t.append(f"{p:>3}", style=S_TARGET)
                t.append(g.target, style=S_TARGET)
            elif where[me][p] in marks:  # the last play landed here: visible without colour too
                t.append(f"{p:>3}", style=S_LAST)
                t.append(g.last, style=S_LAST)
            else:
                t.append(f" {p:>2} ", style=S_NUMBER)
        return t

    def frame(left: str, mid: str, right: str, points: list[int], where: str) -> Text:
        t = Text(" ")
        t.append(left, style=S_FRAME)
        for i, p in enumerate(points):
            if i == 6:
                t.append(mid + g.h * BAR + mid, style=S_FRAME)
            if heads.get(p) == where:
                t.append(g.h * 2, style=S_FRAME)
                t.append("H", style=S_HEAD)
                t.append(g.h, style=S_FRAME)
            else:
                t.append(g.h * CELL, style=S_FRAME)
        t.append(right, style=S_FRAME)
        return t

    def stack_line(points: list[int], row: int) -> Text:
        t = Text(" ")
        t.append(g.v, style=S_FRAME)
        t.append_text(half_row(points[:6], row))
        t.append(g.v, style=S_FRAME)
        t.append(" " * BAR, style=S_BAR)
        t.append(g.v, style=S_FRAME)
        t.append_text(half_row(points[6:], row))
        t.append(g.v, style=S_FRAME)
        return t

    def numbers_line(points: list[int]) -> Text:
        t = Text("  ")
        t.append_text(number_row(points[:6]))
        t.append(" " * (BAR + 2))
        t.append_text(number_row(points[6:]))
        return t

    def dice_text() -> Text:
        t = Text()
        dice = list(state.dice)
        if not dice:
            return t
        a, b = dice[0], dice[1]
        full = [a] * 4 if a == b else [a, b]
        left = list(dice_left) if dice_left is not None else list(full)
        for d in full:
            if d in left:
                left.remove(d)
                t.append(f"[{d}]", style="bold")
            else:
                t.append(f"({d})", style=S_DIM)
        return t

    def middle_line() -> Text:
        """The bar row: the dice of the turn, in the half of the side to move."""
        dice = dice_text()
        half = CELL * 6
        left = Text(" " * half, style=S_CELL[0])
        right = Text(" " * half, style=S_CELL[0])
        if dice.plain:
            pad = max(0, (half - len(dice.plain)) // 2)
            filled = Text(" " * pad, style=S_CELL[0])
            filled.append_text(dice)
            filled.append(" " * (half - pad - len(dice.plain)), style=S_CELL[0])
            if to_move is me:
                right = filled
            else:
                left = filled
        t = Text(" ")
        t.append(g.v, style=S_FRAME)
        t.append_text(left)
        t.append(g.v, style=S_FRAME)
        t.append(" " * BAR, style=S_BAR)
        t.append(g.v, style=S_FRAME)
        t.append_text(right)
        t.append(g.v, style=S_FRAME)
        return t

    points = {Color.WHITE: state.match.white_points, Color.BLACK: state.match.black_points}

    def player_lines(color: Color) -> list[Text]:
        label = Text()
        label.append(glyph[color], style=S_PIECE[color])
        name = names[color]
        extra = f" ({side_name(color)})"
        if color is you:
            extra = f" (you, {side_name(color)})"
        room = PANEL - 2 - len(extra)
        if len(name) > room:
            name = name[: max(1, room - 1)] + "~"
        label.append(f" {name}")
        label.append(extra, style="bold" if color is you else S_DIM)
        stats = Text(f"pips {rules.pips(pos, color):>3}  off")
        if color is me and 0 in targets:
            stats.append(g.target, style=S_TARGET)
        else:
            stats.append(" ")
        stats.append(f"{board.off[color]:>2}")
        if board.bar[color]:
            stats.append(f"  bar {board.bar[color]}", style="bold")
        if state.match.target:
            stats.append(f"  pts {points[color]}")
        clock = Text("clock " if show_clocks else "")
        ms = clock_of[color]
        style = ""
        if running is color:
            style = S_LOW if ms is not None and ms < 10_000 else S_RUNNING
        if show_clocks:
            clock.append(fmt_clock(ms), style=style)
        if to_move is color:
            clock.append(("  < " if show_clocks else "< ") + turn_label, style="bold")
        return [label, stats, clock]

    # -- the side panel, one entry per board line ---------------------------------------
    panel: list[Text] = [Text() for _ in range(15)]
    for i, t in enumerate(player_lines(opp)):
        panel[1 + i] = t
    for i, t in enumerate(player_lines(me)):
        panel[11 + i] = t
    if state.match.target:
        over = ", over" if state.match.over else ""
        panel[6] = Text(f"match to {state.match.target}{over}", style="bold")
    if state.game_number:
        panel[5] = Text(f"game {state.game_number}", style=S_DIM)
    if state.status == pb.GAME_STATUS_FINISHED and state.result.winner:
        winner = wire.color_of(state.result.winner)
        kind = wire.kind_name(state.result.kind)
        who = "you win" if winner is you else f"{side_name(winner)} wins"
        panel[7] = Text(f"{who}: {kind} (+{state.result.points})", style="bold")
    elif state.status == pb.GAME_STATUS_WAITING:
        waiting = (
            "a challenge: not yet accepted" if state.challenge_pending else "waiting for players"
        )
        panel[7] = Text(waiting, style=S_DIM)
    elif state.status == pb.GAME_STATUS_ABORTED:
        panel[7] = Text("game aborted", style="bold")
    if state.seeded:
        panel[8] = Text("dice scripted/seeded", style=S_DIM)

    lines: list[Text] = []
    if title:
        lines.append(Text(title, style="bold"))
    board_lines = [numbers_line(top), frame(g.tl, g.tm, g.tr, top, "top")]
    board_lines += [stack_line(top, r) for r in range(STACK)]
    board_lines.append(middle_line())
    board_lines += [stack_line(bottom, r) for r in reversed(range(STACK))]
    board_lines += [frame(g.bl, g.bm, g.br, bottom, "bottom"), numbers_line(bottom)]
    if compact:  # narrow terminals: the panel's entries under the board, a line a player
        for line in board_lines:
            lines.append(line.copy())
            lines[-1].rstrip()
        for t in (panel[1:4], panel[11:14], panel[5:9]):
            row: Text | None = None
            for x in (x for x in t if x.plain):
                if row is not None and len(row) + 2 + len(x) < COMPACT_WIDTH:
                    row += Text("  ") + x
                    continue
                if row is not None:  # the entries that fit; the rest indented under them
                    lines.append(row)
                row = Text("   " if row is not None else " ") + x
            if row is not None:
                lines.append(row)
        return Text("\n").join(lines)
    width = max(len(t.plain) for t in board_lines)
    for line, side in zip(board_lines, panel, strict=True):
        line = line.copy()
        if side.plain:
            line.append(" " * (width - len(line.plain) + 2))
            line.append_text(side)
        line.rstrip()
        lines.append(line)
    return Text("\n").join(lines)


def render_plain(state: pb.GameState, perspective: Color = Color.WHITE, **kw) -> str:
    """The board as plain text, without colour (what ``NO_COLOR`` and pipes show)."""
    return render(state, perspective, **kw).plain


def play_marks(rules: Variant, color: Color, notation: str) -> set[int]:
    """Absolute indices where a play's checkers ended (for marking the last play): the
    points stepped to, less those stepped on from again (a checker moving on)."""
    landed: Counter[int] = Counter()
    for token in notation.split():
        parts = [p.rstrip("*") for p in token.split("(")[0].split("/")]
        repeat = int(token.split("(")[1].rstrip(")")) if "(" in token else 1
        for _ in range(repeat):
            for a, b in zip(parts, parts[1:], strict=False):
                landed[b] += 1  # "bar" and "off" are counted but are no point
                landed[a] -= 1
    return {
        rules.point_index(color, int(p))
        for p, n in landed.items()
        if n > 0 and p.isdigit() and 1 <= int(p) <= 24
    }


__all__ = [
    "clock_running",
    "fmt_clock",
    "live_clocks",
    "play_marks",
    "render",
    "render_plain",
    "rules_of",
    "state_for",
]
