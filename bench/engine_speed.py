"""Engines: time per move of expectimax (full strength, 2 ply, no clock: equal
depth) and greedy with the compiled accelerators (move generator ``nardy/long/_movegen.c``
and evaluation ``engines/_evaluate.c``) against the pure-Python reference of both
(``NARDY_PURE_PYTHON=1``), on the same seeded self-play positions; and whether both
choose the same plays on every move.

The two run as separate processes (the accelerators are chosen at import), in
alternating rounds; each prints its CPU seconds and the plays it chose. The ratio is
within one run.

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
    from engines.evaluate import COMPILED as EVAL
    from engines.expectimax import ExpectimaxEngine
    from engines.greedy import GreedyEngine
    from nardy import legal_plays
    from nardy.long.movegen import COMPILED as MOVEGEN

    cases = positions(n)
    result: dict = {"compiled": [MOVEGEN, EVAL is not None]}
    for name, engine in (("expectimax", ExpectimaxEngine(seed=1)), ("greedy", GreedyEngine())):
        reps = 1 if name == "expectimax" else 20  # greedy is ~100x cheaper: time it longer
        chosen = []
        start = time.process_time()
        for _ in range(reps):
            chosen = [
                engine.choose(pos, dice, legal_plays(pos, dice)).end.text() for pos, dice in cases
            ]
        result[name] = {"cpu": (time.process_time() - start) / reps, "chosen": chosen}
    print(json.dumps(result))


def main(quick: bool = False) -> None:
    n, rounds = (10, 1) if quick else (40, 2)
    kinds = ("compiled", "pure Python")
    cpu = {(k, e): 0.0 for k in kinds for e in ("expectimax", "greedy")}
    chosen: dict[tuple[str, str], list[str]] = {}
    for r in range(rounds):
        for kind in kinds if r % 2 == 0 else kinds[::-1]:
            env = {**os.environ, "NARDY_PURE_PYTHON": "1" if kind == "pure Python" else ""}
            out = subprocess.run(
                [sys.executable, "-m", "bench.engine_speed", "run", str(n)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            want = [kind == "compiled"] * 2
            assert result["compiled"] == want, f"the wrong code ran: {result['compiled']}"
            for engine in ("expectimax", "greedy"):
                cpu[kind, engine] += result[engine]["cpu"]
                chosen.setdefault((kind, engine), []).extend(result[engine]["chosen"])
    moves = n * rounds
    load = os.getloadavg()[0]
    for engine, what in (("expectimax", "full strength, 2 ply"), ("greedy", "1 ply")):
        c, p = cpu["compiled", engine], cpu["pure Python", engine]
        same = chosen["compiled", engine] == chosen["pure Python", engine]
        print(
            f"  {engine} ({what}), {moves} moves: compiled {c / moves * 1000:.2f} ms per move, "
            f"pure Python {p / moves * 1000:.2f} ms per move (CPU): {p / c:.1f}x faster; "
            f"same plays chosen on all moves: {'yes' if same else 'NO'}"
            + (" (target: >= 2x, same results)" if engine == "expectimax" else "")
        )
    print(f"  load average at the end: {load:.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(int(sys.argv[2]))
    else:
        main("--quick" in sys.argv)
