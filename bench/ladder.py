"""Ladder throughput: games per second between two instant engines (random) at concurrency
1, 2 and 4, against the rate the raw gRPC round trip allows, measured in the same run:
a game needs one round trip per engine play, so its floor is (plays per game x round trip)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.arbiter import ECHO_SERVER, free_port, process, raw_ping
from clients.ladder_runner import run as run_ladder


def engine_plays_per_game(db: Path) -> float:
    """Plays made by the engines (not the server's forced moves), per finished game."""
    with sqlite3.connect(db) as con:
        games = con.execute("SELECT COUNT(*) FROM ladder_games").fetchone()[0]
        plays = 0
        for (data,) in con.execute("SELECT data FROM events WHERE type = 4"):  # PLAY_MADE
            if not json.loads(data)["play"][4]:  # not automatic
                plays += 1
    return plays / max(1, games)


def main(quick: bool = False) -> None:
    port = free_port()
    with process([sys.executable, "-c", ECHO_SERVER, str(port)], port):
        asyncio.run(raw_ping(f"127.0.0.1:{port}", 200))
        rtt = statistics.median(asyncio.run(raw_ping(f"127.0.0.1:{port}", 2000)))
    print(f"raw gRPC round trip p50 {rtt * 1e3:.3f} ms")
    engines = [f"r{i}={sys.executable} -m clients engine random" for i in (1, 2)]
    for concurrency in (1, 2, 4):
        games = (8 if quick else 24) * concurrency
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.db"
            args = argparse.Namespace(
                engine=engines,
                games=games,
                sprt=None,
                concurrency=concurrency,
                turn_time_ms=5000,
                db=str(db),
                records=None,
            )
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                run_ladder(args)
            elapsed = time.perf_counter() - start
            plays = engine_plays_per_game(db)
        rate = games / elapsed
        bound = concurrency / (plays * rtt)
        print(
            f"concurrency {concurrency}: {games} games in {elapsed:5.1f} s = {rate:5.2f} games/s;"
            f" {plays:.0f} engine plays per game -> round-trip bound {bound:6.2f} games/s; "
            f"{rate / bound:5.1%} of it (target >= 50%)"
        )


if __name__ == "__main__":
    main("--quick" in sys.argv)
