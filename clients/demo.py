"""`nardy demo` (and `make demo`): the main job on embedded defaults.

A local ladder between the bundled long-nardy engines (random, greedy, expectimax and the
value network, which fits its search to the clock) on an embedded
arbiter with a fast time control, for about a minute; it ends with the standings.
"""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from clients.ladder_runner import run as run_ladder
    from engines.registry import names
    from nardy.match import DEFAULT_VARIANT

    engines = [
        f"{name}={sys.executable} -P -m clients engine {name}"  # (-P: not cwd's clients)
        for name in names(DEFAULT_VARIANT)
    ]
    ladder = argparse.Namespace(
        engine=engines,
        games=args.games,
        sprt=None,
        concurrency=4,
        turn_time_ms=args.turn_time_ms,
        db=args.db,
        logs=None,
        records=args.records,
        progress=5.0,
    )
    return run_ladder(ladder)
