"""Short nardy (backgammon) legal-play generation speed on positions from self-play,
against the naive reference generator of the tests on the same positions (alternating
rounds), and the whole-process `nardy legal --variant short` batch filter."""

from __future__ import annotations

import random
import subprocess
import sys
import time

from bench.movegen import rates
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


def main(quick: bool = False) -> None:
    cases = self_play_positions(500 if quick else 3000)
    doubles = [c for c in cases if c[1][0] == c[1][1]]
    plays = sum(len(legal_plays(p, d)) for p, d in cases) / len(cases)
    print(f"{len(cases)} self-play positions, {plays:.1f} legal plays each on average")
    for name, subset in (("all", cases), ("doubles", doubles)):
        fast, naive = rates([legal_plays, naive_plays], subset, 1 if quick else 3)
        print(
            f"short legal plays, {name:7s} ({len(subset):4d} positions): nardy {fast:7.0f}/s  "
            f"naive reference {naive:6.0f}/s  ratio {fast / naive:5.1f}x"
        )
    lines = "".join(f"{p.text()} {a}{b}\n" for p, (a, b) in cases).encode()
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "nardy", "legal", "--variant", "short"],
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
