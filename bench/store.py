"""The journal under load: SQLite against PostgreSQL, in alternating rounds of one run.

A real ``nardy serve`` process per round (fresh database), driven by G concurrent games
of instant raw-stub bots (first legal play at once). Reported per round: turns per second,
journal transactions per second and events per transaction (group commit: one
transaction carries every event that arrived while the previous one was written), read
from the server's own /metrics. Then failover by restart: kill -9 while a turn waits for
its play, start the server again on the same database, and time until the turn is offered
again. Several instances on one database: bench/cluster.py. PostgreSQL is the project's
throwaway server (tools/pg.sh, or NARDY_TEST_PG).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.request

import grpc

from bench.arbiter import free_port, process
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb


def pg_server() -> str:
    url = os.environ.get("NARDY_TEST_PG")
    if url:
        return url
    out = subprocess.run(["tools/pg.sh", "start"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def fresh_pg(server: str) -> str:
    import psycopg

    name = f"nardy_bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return server.rsplit("/", 1)[0] + "/" + name


def count_events(db: str) -> int:
    """Rows in the journal's events table (read after the server stopped)."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return conn.execute("SELECT count(*) FROM events").fetchone()[0]
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0]


def metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


async def play(address: str, games: int, seconds: float) -> tuple[int, int]:
    """Run ``games`` games at once (new ones as they end) for ``seconds``: (turns played,
    games finished)."""
    turns = finished = 0
    stop = time.perf_counter() + seconds
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)

        async def seat(token: str, game_id: str) -> bool:
            nonlocal turns
            md = (("authorization", f"Bearer {token}"),)
            stream = stub.SubscribeGame(api.SubscribeGameRequest(game_id=game_id), metadata=md)
            async for ev in stream:
                st = ev.state
                if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
                    return ev.type == pb.EVENT_TYPE_GAME_FINISHED
                if st.legal_plays and st.side_to_move == st.your_color:
                    await stub.SubmitPlay(
                        api.SubmitPlayRequest(
                            game_id=game_id,
                            turn_id=st.turn_id,
                            end_position=st.legal_plays[0].end_position,
                        ),
                        metadata=md,
                    )
                    turns += 1
            return False

        async def lane(i: int) -> None:
            n = 0
            while time.perf_counter() < stop:
                r = await stub.CreateMatch(api.CreateMatchRequest(seed=1000 * i + n))
                n += 1
                ended = await asyncio.gather(
                    seat(r.first_seat_token, r.game_id), seat(r.second_seat_token, r.game_id)
                )
                if ended[0]:
                    nonlocal finished
                    finished += 1

        await asyncio.gather(*(lane(i) for i in range(games)))
    return turns, finished


def one_round(db: str, games: int, seconds: float) -> tuple[float, ...]:
    port, http = free_port(), free_port()
    args = [
        sys.executable,
        "-m",
        "clients",
        "serve",
        "--port",
        str(port),
        "--http-port",
        str(http),
        "--db",
        db,
        "--log-level",
        "WARNING",
        "--rate",
        "1000000",
    ]
    with process(args, port):
        t0 = time.perf_counter()
        turns, finished = asyncio.run(play(f"127.0.0.1:{port}", games, seconds))
        elapsed = time.perf_counter() - t0
        text = urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=10).read()
    text = text.decode()
    commits = metric(text, "nardy_journal_commit_seconds_count")
    committed = metric(text, "nardy_journal_commit_seconds_sum")
    events = count_events(db)
    return (
        turns / elapsed,
        commits / elapsed,
        committed / max(1.0, commits),
        events / commits,
        finished / elapsed,
    )


def serve_args(port: int, db: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "clients",
        "serve",
        "--port",
        str(port),
        "--db",
        db,
        "--log-level",
        "WARNING",
        "--rate",
        "1000000",
    ]


async def offered_turn(address: str, token: str, game_id: str, deadline: float) -> float:
    """Follow the game (retrying while the server is down) until the seat is offered a
    turn; when it was."""
    md = (("authorization", f"Bearer {token}"),)
    while time.perf_counter() < deadline:
        try:
            async with grpc.aio.insecure_channel(address) as ch:
                stub = api_grpc.ArbiterServiceStub(ch)
                req = api.SubscribeGameRequest(game_id=game_id)
                async for ev in stub.SubscribeGame(req, metadata=md):
                    st = ev.state
                    if st.legal_plays and st.side_to_move == st.your_color:
                        return time.perf_counter()
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.01)
    raise RuntimeError("no turn offered")


def first_mover(address: str, tokens: tuple[str, str], game_id: str) -> str:
    """Both seats arrive; the token of the one offered the first turn."""

    async def race() -> str:
        waits = [
            asyncio.ensure_future(offered_turn(address, t, game_id, time.perf_counter() + 30))
            for t in tokens
        ]
        done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for f in pending:
            f.cancel()
        return tokens[waits.index(done.pop())]

    return asyncio.run(race())


def restart_round(db: str) -> tuple[float, float]:
    """kill -9 a server while a turn waits for its play, start it again on the same
    database: (seconds until it accepts connections, seconds until the turn is offered)."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    with process(serve_args(port, db), port) as proc:
        with grpc.insecure_channel(address) as ch:
            stub = api_grpc.ArbiterServiceStub(ch)
            r = stub.CreateMatch(api.CreateMatchRequest(seed=7))
        tokens = (r.first_seat_token, r.second_seat_token)

        mover = first_mover(address, tokens, r.game_id)
        proc.kill()
        t0 = time.perf_counter()
        proc.wait()
    with process(serve_args(port, db), port):
        up = time.perf_counter() - t0
        offered = asyncio.run(offered_turn(address, mover, r.game_id, time.perf_counter() + 60))
    return up, offered - t0


def restarts(server: str, quick: bool) -> None:
    """Failover by restart: kill -9 to the next turn offered, SQLite and PostgreSQL."""
    rounds = 2 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for kind in ("sqlite", "postgresql") if r % 2 == 0 else ("postgresql", "sqlite"):
                db = os.path.join(tmp, f"k{r}.db") if kind == "sqlite" else fresh_pg(server)
                up, offered = restart_round(db)
                print(
                    f"round {r + 1} {kind:10s}: kill -9 -> serving {up:5.2f} s, "
                    f"-> turn offered again {offered:5.2f} s"
                )


def main(quick: bool = False) -> None:
    games, seconds, rounds = (8, 6.0, 2) if quick else (8, 15.0, 3)
    server = pg_server()
    results: dict[str, list[tuple]] = {"sqlite": [], "postgresql": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = ("sqlite", "postgresql") if r % 2 == 0 else ("postgresql", "sqlite")
            for kind in order:
                db = os.path.join(tmp, f"b{r}.db") if kind == "sqlite" else fresh_pg(server)
                tps, cps, mean, per, gps = one_round(db, games, seconds)
                results[kind].append((tps, cps, mean, per, gps))
                print(
                    f"round {r + 1} {kind:10s}: {tps:6.0f} turns/s  {gps:5.2f} games/s  "
                    f"{cps:6.0f} commits/s  "
                    f"{per:4.2f} events/commit  commit {mean * 1e3:.2f} ms (mean)",
                    flush=True,
                )
    sqlite = sorted(row[0] for row in results["sqlite"])
    pg = sorted(row[0] for row in results["postgresql"])
    restarts(server, quick)
    print(
        f"median turns/s at {games} games: SQLite {sqlite[len(sqlite) // 2]:.0f}, "
        f"PostgreSQL {pg[len(pg) // 2]:.0f} "
        f"(ratio PostgreSQL/SQLite {pg[len(pg) // 2] / sqlite[len(sqlite) // 2]:.2f})"
    )
