"""Legal plays on a corpus rich in doubles, bear-offs and blocks.

Every generator runs over the same (position, dice) corpus, in alternating rounds, and
each is reported as a ratio to the naive reference measured in the same round:

* ``naive reference``: ``tests/long/reference.py`` (step-by-step depth-first search over every
  step sequence, whole-board rule checks after each step), in this process;
* ``nardy legal`` batch: the command as a whole process (interpreter start, imports,
  parsing, end-position text, sorting, output), wall time;
* the library call alone: :func:`nardy.legal_plays` (the compiled generator when it is
  built) and the pure-Python reference generator ``legal_plays_py``, in this process.

Each is timed twice: wall time, and CPU time (``process_time``, or the child's user+system
time from ``getrusage``). On a machine shared with other work the CPU-time ratio is the
steadier one; both are printed.

The corpus (``corpus``) is seeded: a quarter each of self-play positions, bear-off and
nearly-home positions (§4), six-point-window positions (§3.5) and head positions (§3.4),
with doubles for half of the throws.
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
import tempfile
import time

from nardy.long.movegen import COMPILED, legal_plays, legal_plays_py
from nardy.long.position import Position
from tests.long.reference import random_position, reference_plays


def corpus(n: int, seed: int = 2026) -> list[tuple[Position, tuple[int, int]]]:
    """``n`` seeded (position, dice) pairs rich in doubles, bear-offs and blocks."""
    rng = random.Random(seed)

    def dice() -> tuple[int, int]:
        a = rng.randint(1, 6)
        return (a, a) if rng.random() < 0.5 else (a, rng.randint(1, 6))

    out: list[tuple[Position, tuple[int, int]]] = []
    while len(out) < n // 4:  # self-play
        pos = Position.start()
        while pos.winner is None and len(out) < n // 4:
            d = dice()
            out.append((pos, d))
            plays = legal_plays_py(pos, d)
            pos = rng.choice(plays).end if plays else pos.passed()
    kinds = ["bearoff", "nearhome", "block", "block", "head", "any"]
    while len(out) < n:
        kind = kinds[len(out) % len(kinds)]
        out.append((random_position(rng, kind), dice()))
    return out


def _lines(cases) -> bytes:
    return "".join(f"{p.text()} {a}{b}\n" for p, (a, b) in cases).encode()


def _timed(fn, cases) -> tuple[float, float]:
    """(wall, CPU) seconds for ``fn`` over ``cases``."""
    wall, cpu = time.perf_counter(), time.process_time()
    for pos, dice in cases:
        fn(pos, dice)
    return time.perf_counter() - wall, time.process_time() - cpu


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _process(path: str, n: int) -> tuple[float, float]:
    """(wall, CPU) seconds of ``nardy legal`` reading the corpus file."""
    wall, cpu = time.perf_counter(), _children_cpu()
    with open(path, "rb") as stdin:
        out = subprocess.run(
            [sys.executable, "-m", "clients", "legal"], stdin=stdin, capture_output=True, check=True
        ).stdout
    took = time.perf_counter() - wall, _children_cpu() - cpu
    assert out.count(b"\n") == n, "nardy legal gave a wrong number of lines"
    return took


def main(quick: bool = False) -> None:
    n = 300 if quick else 1500
    rounds = 1 if quick else 3
    cases = corpus(n)
    doubles = sum(d[0] == d[1] for _, d in cases)
    plays = sum(len(legal_plays(p, d)) for p, d in cases)
    print(
        f"corpus: {n} positions, {doubles} with doubles, {plays / n:.1f} legal plays each; "
        f"compiled generator: {'yes' if COMPILED else 'NO (pure Python)'}; {rounds} rounds"
    )
    fns = {
        "naive reference": lambda p, d: reference_plays(p, d),
        "nardy.legal_plays": legal_plays,
        "legal_plays_py (pure Python)": legal_plays_py,
    }
    whole = "nardy legal (whole process)"
    totals = {name: [0.0, 0.0] for name in [*fns, whole]}

    def add(name: str, took: tuple[float, float]) -> None:
        totals[name][0] += took[0]
        totals[name][1] += took[1]

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(_lines(cases))
        for r in range(rounds):
            order = list(fns) if r % 2 == 0 else list(reversed(fns))
            for name in order:
                add(name, _timed(fns[name], cases))
            add(whole, _process(path, n))
    naive_wall, naive_cpu = totals["naive reference"]
    print(f"  {'':30s} {'positions/s (wall)':>18s} {'x naive (wall)':>15s} {'x naive (CPU)':>14s}")
    for name, (wall, cpu) in totals.items():
        print(
            f"  {name:30s} {rounds * n / wall:18.0f} {naive_wall / wall:14.1f}x "
            f"{naive_cpu / cpu:13.1f}x"
        )
    ratio = min(naive_wall / totals[whole][0], naive_cpu / totals[whole][1])
    print(
        f"  target: `nardy legal` whole process >= 25x the naive reference: "
        f"{'met' if ratio >= 25 else 'NOT met'} (lower of the two ratios {ratio:.1f}x)"
    )


if __name__ == "__main__":
    main()
