"""Short nardy (backgammon) legal-play generation speed on positions from self-play,
against the naive reference generator of the tests on the same positions, and the
whole-process `nardy legal --variant short` batch filter.

The generators run in alternating rounds over the same cases; each is timed in wall and
CPU time (``process_time``), and the CPU ratio is the steadier one on a shared machine.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time

from nardy.short.movegen import legal_plays
from nardy.short.position import Position
from tests.short.naive import naive_plays


def self_play_positions(n: int, seed: int = 2026) -> list[tuple[Position, tuple[int, int]]]:
    """``n`` (position, dice) pairs met in random self-play games."""
    rng = random.Random(seed)
    out: list[tuple[Position, tuple[int, int]]] = []
    while len(out) < n:
        pos = Position.start()
        while pos.winner is None and len(out) < n:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            out.append((pos, dice))
            plays = legal_plays(pos, dice)
            pos = rng.choice(plays).end if plays else pos.passed()
    return out


def rates(fns, cases, rounds: int) -> list[tuple[float, float]]:
    """(wall, CPU) cases per second of each function, over alternating rounds."""
    wall = [0.0] * len(fns)
    cpu = [0.0] * len(fns)
    for r in range(rounds):
        for i in range(len(fns)) if r % 2 == 0 else reversed(range(len(fns))):
            w, c = time.perf_counter(), time.process_time()
            for pos, dice in cases:
                fns[i](pos, dice)
            wall[i] += time.perf_counter() - w
            cpu[i] += time.process_time() - c
    n = rounds * len(cases)
    return [(n / w, n / c) for w, c in zip(wall, cpu, strict=True)]


def main(quick: bool = False) -> None:
    cases = self_play_positions(500 if quick else 3000)
    doubles = [c for c in cases if c[1][0] == c[1][1]]
    plays = sum(len(legal_plays(p, d)) for p, d in cases) / len(cases)
    print(f"{len(cases)} self-play positions, {plays:.1f} legal plays each on average")
    for name, subset in (("all", cases), ("doubles", doubles)):
        fast, naive = rates([legal_plays, naive_plays], subset, 1 if quick else 3)
        print(
            f"short legal plays, {name:7s} ({len(subset):4d} positions), wall/CPU: "
            f"nardy {fast[0]:5.0f}/{fast[1]:5.0f} per s, naive {naive[0]:4.0f}/{naive[1]:4.0f} "
            f"per s, ratio {fast[0] / naive[0]:4.1f}x/{fast[1] / naive[1]:4.1f}x"
        )
    lines = "".join(f"{p.text()} {a}{b}\n" for p, (a, b) in cases).encode()
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "clients", "legal", "--variant", "short"],
        input=lines,
        capture_output=True,
        check=True,
    ).stdout
    whole = time.perf_counter() - t0
    assert out.count(b"\n") == len(cases)
    print(
        f"`nardy legal --variant short` batch, {len(cases)} lines: {whole:.2f} s whole "
        f"process ({len(cases) / whole:.0f} lines/s)"
    )


if __name__ == "__main__":
    main()
