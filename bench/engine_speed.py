"""Issue 13, engines: expectimax per move with the compiled move generator against the
pure-Python one (``NARDY_PURE_PYTHON=1``), at equal depth (full strength, no clock), on
the same seeded self-play positions; and whether both choose the same plays.

The two run as separate processes (the generator is chosen when ``nardy`` is imported),
in alternating rounds; each prints its CPU seconds and the plays it chose.

``python -m bench engine_speed [--quick]``; ``python -m bench.engine_speed run N`` is one
measuring process.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time


def positions(n: int, seed: int = 99):
    from nardy import Position, legal_plays

    rng = random.Random(seed)
    out = []
    while len(out) < n:
        pos = Position.start()
        while pos.winner is None and len(out) < n:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            plays = legal_plays(pos, dice)
            if len(plays) > 1 and rng.random() < 0.3:
                out.append((pos, dice))
            pos = rng.choice(plays).end if plays else pos.passed()
    return out


def run(n: int) -> None:
    from engines.expectimax import ExpectimaxEngine
    from nardy import legal_plays
    from nardy.long.movegen import COMPILED

    cases = positions(n)
    engine = ExpectimaxEngine(seed=1)
    chosen = []
    start = time.process_time()
    for pos, dice in cases:
        chosen.append(engine.choose(pos, dice, legal_plays(pos, dice)).end.text())
    took = time.process_time() - start
    print(json.dumps({"compiled": COMPILED, "cpu": took, "chosen": chosen}))


def main(quick: bool = False) -> None:
    n, rounds = (10, 1) if quick else (40, 2)
    totals = {"compiled": 0.0, "pure Python": 0.0}
    chosen: dict[str, list[str]] = {}
    for r in range(rounds):
        order = ["compiled", "pure Python"] if r % 2 == 0 else ["pure Python", "compiled"]
        for name in order:
            env = {**os.environ, "NARDY_PURE_PYTHON": "1" if name == "pure Python" else ""}
            out = subprocess.run(
                [sys.executable, "-m", "bench.engine_speed", "run", str(n)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            assert result["compiled"] == (name == "compiled"), "the wrong generator ran"
            totals[name] += result["cpu"]
            chosen[name] = result["chosen"]
    moves = n * rounds
    c, p = totals["compiled"], totals["pure Python"]
    same = chosen["compiled"] == chosen["pure Python"]
    print(
        f"  expectimax (full strength, 2 ply), {moves} moves: compiled {c / moves * 1000:.0f} ms "
        f"per move, pure Python {p / moves * 1000:.0f} ms per move (CPU): {p / c:.2f}x faster; "
        f"same plays chosen: {'yes' if same else 'NO'} (target: >= 2x, same results)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(int(sys.argv[2]))
    else:
        main("--quick" in sys.argv)
