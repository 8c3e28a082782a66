"""Run every benchmark, or those named: ``python -m bench [movegen arbiter strength ...]
[--options]``; the options after the names are the benchmarks' own (e.g. ``python -m bench
strength --only network-greedy``)."""

from __future__ import annotations

import importlib
import sys

ALL = [
    "movegen",
    "short_movegen",
    "engine_speed",
    "arbiter",
    "turns",
    "sdk",
    "clock",
    "web",
    "crash",
    "memory",
    "ladder",
    "strength",
    "race",
    "store",
    "retention",
    "cluster",
]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    first_option = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names = argv[:first_option] or ALL  # an option's value is not a benchmark's name
    for name in names:
        print(f"\n=== bench.{name} ===", flush=True)
        importlib.import_module(f"bench.{name}").main(quick=quick)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
