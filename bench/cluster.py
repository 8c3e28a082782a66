"""Several instances on one PostgreSQL: games per second, and failover.

1. Games per second of one ``nardy serve`` instance with 16 concurrent games against two
   instances sharing ONE database with 8 games each (each game created on, and run by, the
   instance its bots talk to), in alternating rounds of one run. Instant raw-stub bots
   (first legal play at once, bench.store's driver) in this process, on the same cores.
2. Failover: two instances on one database; a game created on A until a turn waits for
   its play; kill -9 A; time until B, having taken the game over from the journal once A's
   lease expired, offers the turn again. For a short lease and for the default one.

PostgreSQL is the project's throwaway server (tools/pg.sh, or NARDY_TEST_PG).
"""

from __future__ import annotations

import asyncio
import os
import time
from contextlib import ExitStack

import grpc

from bench.arbiter import free_port, process
from bench.store import first_mover, fresh_pg, offered_turn, pg_server, play, serve_args
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc

GAMES = 16


def instance_args(port: int, db: str, lease_ms: int) -> list[str]:
    return serve_args(port, db) + ["--lease-ms", str(lease_ms)]


def shared_round(server: str, n: int, seconds: float) -> float:
    """``n`` instances on one fresh database, GAMES // n games on each: games/s in all."""
    db = fresh_pg(server)
    ports = [free_port() for _ in range(n)]
    with ExitStack() as stack:
        for port in ports:
            stack.enter_context(process(instance_args(port, db, 10_000), port))

        async def run() -> list[tuple[int, int]]:
            return await asyncio.gather(
                *(play(f"127.0.0.1:{port}", GAMES // n, seconds) for port in ports)
            )

        t0 = time.perf_counter()
        done = asyncio.run(run())
        elapsed = time.perf_counter() - t0
    return sum(f for _, f in done) / elapsed


def throughput(server: str, quick: bool) -> None:
    seconds, rounds = (6.0, 2) if quick else (20.0, 3)
    results: dict[int, list[float]] = {1: [], 2: []}
    for r in range(rounds):
        for n in (1, 2) if r % 2 == 0 else (2, 1):
            gps = shared_round(server, n, seconds)
            results[n].append(gps)
            print(
                f"round {r + 1}: {n} instance(s) on one database x {GAMES // n} games: "
                f"{gps:5.2f} games/s ({gps / n:5.2f} per instance)",
                flush=True,
            )
    one, two = (sorted(results[n])[len(results[n]) // 2] for n in (1, 2))
    print(
        f"median games/s, {GAMES} games in all: 1 instance {one:.2f}, 2 instances on one "
        f"database {two:.2f} (ratio {two / one:.2f}; bots and servers share this machine)"
    )


def failover_round(server: str, lease_ms: int) -> float:
    """kill -9 the instance running a game whose turn waits: seconds until the other
    instance offers that turn again."""
    db = fresh_pg(server)
    a, b = free_port(), free_port()
    with process(instance_args(b, db, lease_ms), b):
        with process(instance_args(a, db, lease_ms), a) as proc:
            with grpc.insecure_channel(f"127.0.0.1:{a}") as ch:
                r = api_grpc.ArbiterServiceStub(ch).CreateMatch(api.CreateMatchRequest(seed=7))
            tokens = (r.first_seat_token, r.second_seat_token)

            token = first_mover(f"127.0.0.1:{a}", tokens, r.game_id)
            proc.kill()
            t0 = time.perf_counter()
            proc.wait()
        # B answers UNAVAILABLE ("being taken over") until it holds the lease, then offers
        offered = asyncio.run(
            offered_turn(f"127.0.0.1:{b}", token, r.game_id, time.perf_counter() + 120)
        )
    return offered - t0


def failover(server: str, quick: bool) -> None:
    for lease_ms, rounds in ((2000, 2 if quick else 3), (10_000, 1 if quick else 2)):
        times = [failover_round(server, lease_ms) for _ in range(rounds)]
        print(
            f"failover, lease {lease_ms} ms: kill -9 -> turn offered by the other instance "
            + ", ".join(f"{t:.2f}" for t in times)
            + " s",
            flush=True,
        )


def main(quick: bool = False) -> None:
    server = pg_server()
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    throughput(server, quick)
    failover(server, quick)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
