"""Legal-play generation speed on positions from self-play, against the naive reference
generator of the tests (step-by-step depth-first search) on the same positions, and the
whole-process `nardy legal` batch filter."""

from __future__ import annotations

import random
import subprocess
import sys
import time

from nardy import Position, legal_plays, result
from tests.reference import reference_plays


def self_play_positions(n: int, seed: int = 2026) -> list[tuple[Position, tuple[int, int]]]:
    """``n`` (position, dice) pairs met in random self-play games."""
    rng = random.Random(seed)
    out: list[tuple[Position, tuple[int, int]]] = []
    while len(out) < n:
        pos = Position.start()
        while result(pos) is None and len(out) < n:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            out.append((pos, dice))
            plays = legal_plays(pos, dice)
            pos = rng.choice(plays).end if plays else pos.passed()
    return out


def rates(fns, cases, rounds: int) -> list[float]:
    """Cases per second of each function, measured in alternating rounds over the same
    cases, so that a noisy machine slows them alike."""
    totals = [0.0] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for pos, dice in cases:
                fn(pos, dice)
            totals[i] += time.perf_counter() - start
    return [rounds * len(cases) / t for t in totals]


def main(quick: bool = False) -> None:
    cases = self_play_positions(500 if quick else 3000)
    doubles = [c for c in cases if c[1][0] == c[1][1]]
    for name, subset in (("all", cases), ("doubles", doubles)):
        fast, naive = rates([legal_plays, reference_plays], subset, 1 if quick else 3)
        print(
            f"legal plays, {name:7s} ({len(subset):4d} positions): nardy {fast:9.0f}/s  "
            f"naive reference {naive:7.0f}/s  ratio {fast / naive:5.1f}x"
        )
    lines = "".join(f"{p.text()} {a}{b}\n" for p, (a, b) in cases).encode()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    startup = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "nardy", "legal"], input=lines, capture_output=True, check=True
    ).stdout
    whole = time.perf_counter() - t0
    assert out.count(b"\n") == len(cases)
    (in_proc,) = rates([lambda p, d: sorted(x.end.text() for x in legal_plays(p, d))], cases, 1)
    print(
        f"`nardy legal` batch, {len(cases)} lines: {whole:.2f} s whole process "
        f"({len(cases) / whole:.0f} lines/s; bare python start {startup:.2f} s); "
        f"in-process with sorting and text {in_proc:.0f}/s"
    )


if __name__ == "__main__":
    main()
