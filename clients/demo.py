"""`nardy demo`: a quick in-process random game, printed turn by turn."""

from __future__ import annotations

import argparse
import random

from nardy import Position, legal_plays, result


def run(args: argparse.Namespace) -> int:
    rng = random.Random()
    position = Position.start()
    turn = 0
    while (res := result(position)) is None:
        turn += 1
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        plays = legal_plays(position, dice)
        play = rng.choice(plays) if plays else None
        side = position.turn.name.lower()
        print(f"{turn:3d} {side:5s} {dice[0]}-{dice[1]}: {play.notation() if play else '-'}")
        position = play.end if play else position.passed()
    print(f"{res}  final {position.text()}")
    return 0
