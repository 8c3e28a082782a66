"""`nardy legal`: the rules as a command, for one turn or as a streaming batch filter."""

from __future__ import annotations

from typing import TextIO

from nardy.dice import parse_dice
from nardy.match import DEFAULT_VARIANT
from nardy.variant import Variant, variant


def end_positions(rules: Variant, position_text: str, dice_text: str) -> list[str]:
    """Sorted legal end positions; the unchanged board, opponent to move, if none."""
    position = rules.parse(position_text)
    dice = parse_dice(dice_text)
    return rules.end_texts(position, dice) or [rules.passed(position).text()]


def single(
    position_text: str, dice_text: str, out: TextIO, variant_name: str = DEFAULT_VARIANT
) -> int:
    try:
        ends = end_positions(variant(variant_name), position_text, dice_text)
    except ValueError as e:
        print(f"nardy legal: {e}", file=_stderr())
        return 2
    out.write("\n".join(ends) + "\n")
    return 0


def batch(lines: TextIO, out: TextIO, variant_name: str = DEFAULT_VARIANT) -> int:
    """One output line per input line, in order, flushed as it is written."""
    try:
        rules = variant(variant_name)
    except ValueError as e:
        print(f"nardy legal: {e}", file=_stderr())
        return 2
    for n, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            print(f"nardy legal: line {n}: empty line (expected 'POSITION DICE')", file=_stderr())
            return 2
        try:
            if len(fields) != 2:
                raise ValueError(f"expected 'POSITION DICE', got {len(fields)} fields")
            ends = end_positions(rules, *fields)
        except ValueError as e:
            print(f"nardy legal: line {n}: {e}", file=_stderr())
            return 2
        out.write(" ".join(ends) + "\n")
        out.flush()
    return 0


def _stderr() -> TextIO:
    import sys

    return sys.stderr
