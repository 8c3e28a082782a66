"""The person's commands applied to the turn being built: a point typed (choose a checker,
or move the chosen one there), moves in notation, done; and what the status line says of
the turn. Pure: no screen, no arbiter. What the person is told goes to ``say(text,
style)``; a command that completes a play to send returns it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from itertools import permutations
from typing import Any

from rich.text import Text

from clients.play.explore import Turn, targets, why_not
from nardy.game import IllegalPlay, NotationError
from nardy.variant import BAR, OFF

Say = Callable[[str, str], None]


def point_name(point: int) -> str:
    """A point as notation writes it: ``off``, ``bar`` or its number."""
    return {OFF: "off", BAR: "bar"}.get(point, str(point))


def done(turn: Turn, say: Say) -> Any | None:
    """``done``: the play built, if it is whole."""
    b = turn.builder
    if not b.steps:
        say("Nothing played yet: enter a move first (hint lists the plays).", "")
        return None
    try:
        return b.play()
    except IllegalPlay as e:
        say(f"Not yet: {e}", "bold red")
        return None


def point(turn: Turn, n: int, say: Say) -> Any | None:
    """A point typed: the chosen checker moves there if it can, else the checker on ``n``
    is chosen."""
    if turn.selected is not None and n in targets(turn.builder, turn.selected):
        src = turn.selected
        turn.selected = None
        return moves(turn, f"{point_name(src)}/{point_name(n)}", say, whole=False)
    if n == OFF:
        say("Choose a checker first (type its point), then 'off'.", "")
        return None
    if not 1 <= n <= 24 and n != BAR:
        say(f"There is no point {n}: points are 1 to 24 (and the bar in short nardy).", "")
        return None
    b = turn.builder
    if b.complete:
        say("The play is complete: done submits it, undo takes a step back.", "")
        return None
    if any(s.src == n for s in b.legal_steps()):
        turn.selected = n
        return None
    turn.selected = None
    say(f"Nothing can move from {n}: {why_not(b, n)}", "bold red")
    return None


def moves(turn: Turn, text: str, say: Say, *, whole: bool = True) -> Any | None:
    """Apply the moves of ``text``; a whole play typed at once is returned to be sent at
    once (``whole``), anything else waits for done."""
    b = turn.builder
    turn.selected = None
    try:
        steps = turn.rules.parse_moves(text)
    except NotationError as e:
        say(f"Not understood: {e}. Type help for the commands.", "bold red")
        return None
    if not steps:
        say("You have a legal play, so you must move (hint lists them).", "")
        return None
    reordered = ""
    if whole and not b.steps:
        try:
            play = turn.rules.match_play(turn.position, turn.dice, text)
        except (IllegalPlay, ValueError):
            reordered = in_another_order(turn, text)
        else:  # a whole play at once
            for step in play.steps:
                b.step(step.src, step.dst)
            return play
    mark = len(b.steps)
    try:
        for src, dst in steps:
            b.step(src, dst)
    except IllegalPlay as e:
        b.rewind(mark)
        legal = f". In another order it is legal: {reordered}" if reordered else ""
        say(f"Not allowed: {e}{legal}", "bold red")
        return None
    made = " ".join(map(str, b.steps[mark:]))
    if b.complete:
        say(f"Moved {made}. The play is complete: done (or Enter) submits it.", "")
    else:
        say(f"Moved {made}; dice left {'-'.join(map(str, b.remaining))}.", "")
    return None


def in_another_order(turn: Turn, text: str) -> str:
    """The moves of ``text`` (at most four, as a play has) in the first other order that
    is a legal play, or "": the rules judge each step as it is made (RULES §3.5: ``24/19
    14/13`` can make a block of six on its way where ``14/13 24/19`` does not)."""
    written = text.replace(",", " ").split()
    if len(written) > 4:
        return ""
    for order in list(dict.fromkeys(permutations(written)))[1:]:
        with contextlib.suppress(IllegalPlay, ValueError):
            turn.rules.match_play(turn.position, turn.dice, " ".join(order))
            return " ".join(order)
    return ""


def status(turn: Turn) -> Text:
    """The status line while the person builds the turn."""
    b = turn.builder
    if turn.sent:
        return Text(f"Play sent: {b.play().notation() if b.complete else ''}", "grey50")
    if b.complete and b.steps:
        return Text(
            f"Play complete: {' '.join(map(str, b.steps))}. "
            "Type done (or press Enter) to submit, undo to take back.",
            style="bold",
        )
    if turn.selected is not None:
        where = targets(turn.builder, turn.selected)
        parts = [
            f"{'off' if d == OFF else d} ({'+'.join(map(str, dice))})"
            for d, dice in sorted(where.items(), key=lambda kv: -kv[0] or 99)
        ]
        src = point_name(turn.selected)
        return Text(f"From {src}: " + ", ".join(parts) + ". Type a target.")
    sources = [point_name(p) for p in sorted({s.src for s in b.legal_steps()}, reverse=True)]
    left = "-".join(map(str, b.remaining))
    played = f"played {' '.join(map(str, b.steps))}; " if b.steps else ""
    return Text(
        f"Your move, {played}dice left {left}. Move from: {' '.join(sources)}. "
        "(24/18, a point, hint, undo, help)"
    )
