"""Exploring the rules for the person: where a checker can go, why it cannot, and hints.

Pure functions of the turn being built (``TurnBuilder``) and the engines: no screen, no
arbiter. ``hint`` ranks the plays with the network engine's ``best_plays`` (its equity:
expected points, -2..2, for the side to move); ``hint all`` lists every legal play.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nardy.game import IllegalPlay
from nardy.variant import OFF, Variant

HINTS = 5  # plays shown by `hint`


@dataclass
class Turn:
    """The person's turn being built."""

    turn_id: int
    rules: Variant
    position: Any  # the variant's position before the turn
    dice: tuple[int, int]
    builder: Any  # the variant's TurnBuilder
    selected: int | None = None
    sent: bool = False


def targets(builder, src: int | None) -> dict[int, list[int]]:
    """Where the checker on ``src`` can go this turn: target -> dice used (fewest first)."""
    if src is None:
        return {}
    out: dict[int, list[int]] = {}

    def walk(at: int, used: list[int]) -> None:
        for dst in sorted({s.dst for s in builder.legal_steps() if s.src == at}):
            mark = len(builder.steps)
            try:
                steps = builder.step(at, dst)
            except IllegalPlay:
                continue
            dice = used + [s.die for s in steps]
            if dst not in out or len(dice) < len(out[dst]):
                out[dst] = dice
            if dst != OFF:
                walk(dst, dice)
            builder.rewind(mark)

    walk(src, [])
    return out


def why_not(builder, src: int) -> str:
    """Why nothing can move from ``src`` now (the rule, in words)."""
    for die in sorted(set(builder.remaining), reverse=True):
        mark = len(builder.steps)
        try:
            builder.step(src, max(0, src - die))
        except IllegalPlay as e:
            return str(e)
        builder.rewind(mark)
    return "no legal play starts there."


def ranked(rules: Variant, position, dice: tuple[int, int]) -> list[tuple[Any, float]] | None:
    """The legal plays best first with the network engine's equity, or None where it does
    not play the variant (engines/registry.py)."""
    from engines.registry import names

    if "network" not in names(rules.name):
        return None
    try:
        from engines.network import best_plays

        return [(r.play, r.equity) for r in best_plays(position, dice, variant=rules.name)]
    except (ImportError, OSError, ValueError, TypeError):  # no network for this variant
        return None


def hint_lines(turn: Turn, *, every: bool = False) -> list[str]:
    """``hint``: the engine's best plays with their values; ``hint all``: every play."""
    plays = turn.builder.plays
    count = f"{len(plays)} legal play{'s' if len(plays) != 1 else ''}"
    if every:
        return [f"{count}:"] + [f"  {i:>3}. {p.notation()}" for i, p in enumerate(plays, 1)]
    best = ranked(turn.rules, turn.position, turn.dice)
    if best is None:
        return [f"{count} (no engine to rank them):"] + [f"  {p.notation()}" for p in plays[:HINTS]]
    lines = [f"The network engine's best of {count} (equity: expected points for you):"]
    for i, (play, value) in enumerate(best[:HINTS], 1):
        lines.append(f"  {i}. {play.notation():<24} {value:+.3f}")
    if len(best) > HINTS:
        lines.append("  ('hint all' lists every legal play)")
    from engines.registry import JUDGES

    judge = JUDGES.get(turn.rules.name, ("network",))[0]
    if judge != "network":  # (analyse asks the variant's judge: it may rank them otherwise)
        lines.append(f"  (analyse judges the game's plays with {judge}, which may differ)")
    return lines


__all__ = ["Turn", "hint_lines", "ranked", "targets", "why_not"]
