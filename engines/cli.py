"""``nardy engine NAME``: run a bundled engine as a process against an arbiter."""

from __future__ import annotations

import argparse
import logging
import sys

from engines.registry import ENGINES, make_engine, sdk_adapter

log = logging.getLogger("nardy.engines")


def main(args: argparse.Namespace) -> int:
    """Build the engine named ``args.name`` and play games with it until ``max_games``."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"%(asctime)s %(levelname)s [{args.name}] %(name)s %(message)s",
    )
    if args.name not in ENGINES:
        print(
            f"nardy engine: unknown engine {args.name!r}; choose one of "
            f"{', '.join(sorted(ENGINES))}",
            file=sys.stderr,
        )
        return 2
    try:
        engine = make_engine(args.name, level=args.level, seed=args.seed)
    except ValueError as e:
        print(f"nardy engine {args.name}: {e}", file=sys.stderr)
        return 2
    from nardy.client import run_engine

    log.info(
        "engine %s starting (level %s, seed %s, max games %s)",
        args.name,
        args.level,
        args.seed,
        args.max_games,
    )
    try:
        run_engine(
            sdk_adapter(engine), address=args.server, token=args.token, max_games=args.max_games
        )
    except KeyboardInterrupt:
        return 130
    log.info("engine %s done", args.name)
    return 0
