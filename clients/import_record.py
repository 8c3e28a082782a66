"""`nardy import FILE`: check a game record (text or JSON) against the rules."""

from __future__ import annotations

import argparse
import sys

from nardy.record import RecordError, load, replay


def main(args: argparse.Namespace) -> int:
    try:
        games = load(args.file)
        for game in games:
            replay(game, house_rules={"koks"} if args.koks else ())
    except (OSError, RecordError) as e:
        print(f"nardy import: {args.file}: {e}", file=sys.stderr)
        return 1
    for game in games:
        h = game.headers
        result = f"{game.result}" if game.result else "unfinished"
        print(
            f"game {game.number}: {h.get('White', '?')} - {h.get('Black', '?')}, "
            f"{len(game.turns)} turns, {result}: legal"
        )
    return 0
