"""Run every benchmark, or those named: ``python -m bench [movegen arbiter strength ...]``."""

from __future__ import annotations

import importlib
import sys

ALL = [
    "movegen",
    "short_movegen",
    "engine_speed",
    "arbiter",
    "turns",
    "clock",
    "memory",
    "ladder",
    "strength",
    "store",
]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("-")] or ALL
    for name in names:
        print(f"\n=== bench.{name} ===", flush=True)
        importlib.import_module(f"bench.{name}").main(quick=quick)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
