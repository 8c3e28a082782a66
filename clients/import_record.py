"""`nardy import FILE`: check a game record (text or JSON) against the rules."""

from __future__ import annotations

import argparse
import sys

from nardy.match import GameOptions
from nardy.record import load, replay


def main(args: argparse.Namespace) -> int:
    house_rules = frozenset({"koks"} if args.koks else ())
    try:
        games = load(args.file)
        for game in games:  # a house rule the game's variant does not have is refused
            rules = house_rules | game.house_rules
            game.rules.check(GameOptions(variant=game.rules.name, rules=rules))
            replay(game, house_rules=house_rules)
    except (OSError, ValueError) as e:  # RecordError is a ValueError
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
