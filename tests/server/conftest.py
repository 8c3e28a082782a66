"""The server's tests: each one's arbiter (``arbiter`` in tests/conftest.py) on a real
SQLite file and on a real PostgreSQL database, and clients of it."""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from nardy.client import Client
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.link import PING
from tests.conftest import STORES


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test here that uses the arbiter runs on each store."""
    if "arbiter" in metafunc.fixturenames:
        metafunc.parametrize("arbiter", STORES, indirect=True)


@pytest.fixture
async def client(arbiter):
    async with Client(arbiter.address) as c:
        yield c


@pytest.fixture
async def operator(arbiter):
    """A client holding the server's admin token (may seat registered players)."""
    async with Client(arbiter.address, arbiter.admin_token) as c:
        yield c


def random_engine(seed: int = 0):
    rng = random.Random(seed)
    return lambda turn: rng.choice(turn.legal)


async def create(client: Client, **fields):
    """A match with two open seats; returns (response, seat clients)."""
    opts = fields.pop("options", {})
    r = await client.create_match(options=pb.GameOptions(**opts), **fields)
    anonymous = Client(client.address, shared=client.channel)
    return r, (anonymous.with_token(r.first_seat_token), anonymous.with_token(r.second_seat_token))


async def resigned(seats, game_id: str) -> str:
    """Start a game (both seats subscribe) and resign it for the first seat at once; the id
    of its match's next game ("" when the match is over)."""
    streams = [seat.events(game_id) for seat in seats]
    for stream in streams:
        assert (await anext(stream)).type == pb.EVENT_TYPE_SNAPSHOT
    async for ev in streams[0]:
        if ev.type == pb.EVENT_TYPE_GAME_STARTED:
            await seats[0].resign(game_id)
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            break
    for stream in streams:
        await stream.aclose()
    return ev.state.next_game_id


def counting(store: type, table: str) -> tuple[type, list[int]]:
    """A subclass of the ``store`` class noting how many rows each read of ``table``
    returns (for ``EmbeddedServer(store_factory=...)``), and that list of counts."""
    read: list[int] = []

    class Counting(store):
        async def query(self, sql, params=()):
            rows = await super().query(sql, params)
            if f"FROM {table}" in sql:
                read.append(len(rows))
            return rows

    return Counting, read


def execute(db: str, sql: str):
    """Run one statement on ``db`` over a connection of our own; the rows it returns."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            cur = conn.execute(sql)
            return cur.fetchall() if cur.description else []
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@contextmanager
def held_core(srv: EmbeddedServer) -> Iterator[None]:
    """The arbiter's trio thread blocked while the block runs (a core running far behind):
    what still answers, and what the clocks charge, without the core."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # runs in the trio thread and blocks it
        held.set()
        release.wait(120)

    holder = threading.Thread(target=srv.call, args=(hold,))
    holder.start()
    assert held.wait(60)
    try:
        yield
    finally:
        release.set()
        holder.join()


def the_play_is_made(streams) -> None:
    """Read each of a game's event streams to its PLAY_MADE (the game not lost on the way:
    no GAME_FINISHED first), then end it."""
    for stream in streams:
        ev = next(stream)
        while ev.type != pb.EVENT_TYPE_PLAY_MADE:
            assert ev.type != pb.EVENT_TYPE_GAME_FINISHED
            ev = next(stream)
        stream.cancel()


@contextmanager
def news_cut(pg_db: str, instances: int = 1) -> Iterator[None]:
    """Every instance's news connection (LISTEN) terminated: the block runs once
    ``instances`` of them have noticed, while they do not listen (each listens again
    within a second or so)."""
    import psycopg

    lost = threading.Semaphore(0)

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "news connection lost" in record.getMessage():
                lost.release()

    watch = Watch(logging.WARNING)
    logging.getLogger().addHandler(watch)
    try:
        listening = (
            " FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()"
            " AND datname = current_database()"
        )
        with psycopg.connect(pg_db, autocommit=True) as db:
            deadline = time.monotonic() + 30  # (an instance just started may not listen yet)
            while db.execute("SELECT count(*)" + listening).fetchone()[0] < instances:
                assert time.monotonic() < deadline, "the instances do not listen"
                time.sleep(0.05)
            db.execute("SELECT pg_terminate_backend(pid)" + listening)
        for _ in range(instances):
            assert lost.acquire(timeout=30)
        yield
    finally:
        logging.getLogger().removeHandler(watch)


def count_link_calls(server: EmbeddedServer) -> list[str]:
    """The methods the edge calls on its core's link from now on (but its probe's pings,
    once a second whatever callers do)."""
    calls: list[str] = []
    core_link = server.edge.core.link
    real = core_link.call

    def call(method, request, caller, **options):
        if method != PING:
            calls.append(method)
        return real(method, request, caller, **options)

    core_link.call = call
    return calls
