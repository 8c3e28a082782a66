"""The journal: every play and resignation is durable before it is answered; the writer
group-commits off the trio thread, so a store that hangs delays acknowledgements only,
never the clocks or the answers of the core. Run on SQLite and on PostgreSQL."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
import urllib.request
from contextlib import contextmanager

import trio

from nardy.client import Client, my_turn
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer, open_store
from server.core import journal
from server.core.journal import EventType
from tests.server.conftest import create


def journal_rows(db: str, game_id: str) -> list[tuple[int, int, dict]]:
    """(seq, type, entry) of a game's events, read over a connection of our own."""
    sql = "SELECT seq, type, data FROM events WHERE game_id=%s ORDER BY seq"
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            rows = conn.execute(sql, (game_id,)).fetchall()
    else:
        with sqlite3.connect(db) as conn:
            rows = conn.execute(sql.replace("%s", "?"), (game_id,)).fetchall()
    return [(seq, kind, journal.entry_of(data)) for seq, kind, data in rows]


async def next_turn(seats, game_id: str, after_turn: int = 0):
    """Wait until a seat is asked to play a turn after ``after_turn``: (seat, state)."""
    found = {}
    async with trio.open_nursery() as nursery:

        async def follow(seat):
            async for ev in seat.events(game_id):
                if my_turn(ev) and ev.state.turn_id > after_turn:
                    found["turn"] = (seat, ev.state)
                    nursery.cancel_scope.cancel()

        for seat in seats:
            nursery.start_soon(follow, seat)
    return found["turn"]


async def test_plays_and_a_resignation_are_journaled_before_they_are_answered(db):
    """RULES.md §5 (resigning loses): the answer to Resign means the result is on disk."""
    with EmbeddedServer(db=db) as srv:
        async with Client(srv.address) as client:
            r, seats = await create(client, seed=77)
            turn = 0
            for _ in range(4):
                mover, st = await next_turn(seats, r.game_id, turn)
                turn = st.turn_id
                resp = await mover.submit(
                    r.game_id, turn, end_position=st.legal_plays[0].end_position
                )
                made = [
                    e
                    for _, kind, e in journal_rows(db, r.game_id)
                    if kind == EventType.PLAY_MADE and e["play"][3] == turn
                ]
                assert len(made) == 1 and made[0]["position"] == resp.end_position
            res = await seats[0].resign(r.game_id)
            assert res.result.termination == pb.TERMINATION_RESIGNATION
            _, kind, entry = journal_rows(db, r.game_id)[-1]
            assert kind == EventType.GAME_FINISHED
            assert entry["result"][2] == "resignation"


class Gate:
    """A real store whose writes can be held up (a stalled disk, a far-away database)."""

    def __init__(self, db: str) -> None:
        self.inner = open_store(db)
        self.open = threading.Event()
        self.open.set()
        self.held = threading.Event()  # a write is waiting at the closed gate
        self.passes = 0  # writes let through the closed gate
        self.lock = threading.Lock()
        self.batches: list[list[tuple]] = []  # (statement, params) of each transaction

    def let_one_through(self) -> None:
        with self.lock:
            self.passes += 1
            self.held.clear()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def write(self, batch) -> None:
        def wait() -> None:
            while not self.open.is_set():
                with self.lock:
                    if self.passes:
                        self.passes -= 1
                        return
                    self.held.set()
                self.open.wait(0.01)

        await trio.to_thread.run_sync(wait)
        await self.inner.write(batch)
        self.batches.append(list(batch))

    async def query(self, sql, params=()):
        return await self.inner.query(sql, params)

    async def close(self) -> None:
        await self.inner.close()


@contextmanager
def gated(db: str, **options):
    """A real server on ``db`` whose store is a :class:`Gate`: yields (server, gate)."""
    gates: list[Gate] = []

    def factory(path: str) -> Gate:
        gates.append(Gate(path))
        return gates[-1]

    with EmbeddedServer(db=db, store_factory=factory, http_port=0, **options) as srv:
        yield srv, gates[0]


def timeouts_decided(srv: EmbeddedServer) -> int:
    """How many clocks the core has acted on at their deadline (its /metrics)."""
    with urllib.request.urlopen(srv.http_url + "/metrics", timeout=30) as page:
        text = page.read().decode()
    found = re.search(r"^nardy_clock_lateness_seconds_count ([0-9.e+]+)$", text, re.M)
    assert found, text[:400]
    return int(float(found.group(1)))


async def test_a_stalled_store_delays_answers_but_never_clocks_or_the_core(db):
    with gated(db) as (srv, gate):
        async with Client(srv.address) as client:
            # games A and B: their movers are about to play
            ra, seats_a = await create(client, seed=6)
            mover, st = await next_turn(seats_a, ra.game_id)
            play = st.legal_plays[0].end_position
            rb, seats_b = await create(client, seed=7)
            mover_b, st_b = await next_turn(seats_b, rb.game_id)
            # game C: its mover never plays, and its turn clock is short
            rc, seats_c = await create(client, seed=5, options={"turn_time_ms": 1500})
            await next_turn(seats_c, rc.game_id)  # C's clock is running
            decided = await trio.to_thread.run_sync(timeouts_decided, srv)
            gate.open.clear()  # the store stalls from here on
            t0 = trio.current_time()
            async with trio.open_nursery() as nursery:
                answer = {}
                answered, b_answered, c_told = trio.Event(), trio.Event(), trio.Event()

                async def submit():
                    answer["resp"] = await mover.submit(ra.game_id, st.turn_id, end_position=play)
                    answered.set()

                async def watch_c():
                    async for ev in seats_c[0].events(rc.game_id):
                        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                            answer["c"] = ev
                            c_told.set()

                async def submit_b():
                    end = st_b.legal_plays[0].end_position
                    answer["b"] = await mover_b.submit(rb.game_id, st_b.turn_id, end_position=end)
                    b_answered.set()

                try:
                    nursery.start_soon(submit)
                    nursery.start_soon(watch_c)
                    await trio.to_thread.run_sync(gate.held.wait)  # A's play waits at the gate
                    nursery.start_soon(submit_b)  # B's play queues behind it
                    # the core answers at once, and C's clock runs out on time: its loss is
                    # decided while nothing can be written
                    while await trio.to_thread.run_sync(timeouts_decided, srv) == decided:
                        await trio.sleep(0.02)
                    # nothing shows before it is durable: C is still on, A's play not made
                    state = (await client.get_game(rc.game_id)).state
                    assert state.status == pb.GAME_STATUS_IN_PROGRESS
                    assert not state.HasField("result")
                    assert (await client.get_game(ra.game_id)).state.turn_id == st.turn_id
                    assert not answered.is_set() and not c_told.is_set()  # nothing told yet
                    stalled = trio.current_time() - t0
                    opened = time.time()
                finally:  # (a failed check must not leave the writes held)
                    gate.open.set()
                await answered.wait()
                await b_answered.wait()
                await c_told.wait()
                nursery.cancel_scope.cancel()
            assert answer["b"].end_position == st_b.legal_plays[0].end_position
            # the player is not charged for the store's stall
            assert answer["resp"].used_ms < stalled * 1000
            finished = answer["c"]  # decided before the store came back
            assert finished.state.result.termination in (
                pb.TERMINATION_TIMEOUT,
                pb.TERMINATION_ABANDONMENT,
            )
            assert finished.time.ToNanoseconds() / 1e9 < opened
        # group commit: what queued during the stall (B's play, C's end) went to the store
        # in one transaction
        together = [
            b
            for b in gate.batches
            if {p[0] for s, p in b if s.startswith("INSERT INTO events")}
            >= {rb.game_id, rc.game_id}
        ]
        assert together, [[(s[:20], p[0]) for s, p in b] for b in gate.batches[-4:]]


async def test_a_turn_on_its_way_to_the_journal_is_offered_to_nobody(db):
    """Until its TURN_STARTED is durable, no snapshot shows the turn, its dice or its legal
    plays (a play sent for it would be refused): the turn is offered once, by its
    TURN_STARTED. ListGames shows the game started (its colours) once GAME_STARTED is."""
    with gated(db) as (srv, gate):
        try:
            await offered_once(srv, gate)
        finally:
            gate.open.set()  # a failed check must not leave the server's writes held


async def listed(client: Client, game_id: str) -> tuple[int, str, str]:
    """How ListGames shows a game: its status and the names of its white and black."""
    (summary,) = [s for s in await client.all_games() if s.game_id == game_id]
    return summary.status, summary.white.name, summary.black.name


async def offered_once(srv: EmbeddedServer, gate: Gate) -> None:
    async with Client(srv.address) as client:
        r, seats = await create(client, seed=11)
        gate.open.clear()
        offered = trio.Event()
        async with trio.open_nursery() as nursery:

            async def follow(seat):
                async for ev in seat.events(r.game_id):
                    if my_turn(ev):
                        assert ev.type == pb.EVENT_TYPE_TURN_STARTED
                        offered.set()

            for seat in seats:
                nursery.start_soon(follow, seat)
            await trio.to_thread.run_sync(gate.held.wait)  # GAME_STARTED at the gate
            assert await listed(client, r.game_id) == (pb.GAME_STATUS_WAITING, "", "")
            gate.let_one_through()
            await trio.to_thread.run_sync(gate.held.wait)  # TURN_STARTED at the gate
            status, *colours = await listed(client, r.game_id)  # GAME_STARTED told
            assert status == pb.GAME_STATUS_IN_PROGRESS and all(colours)
            for seat in seats:
                state = (await seat.get_game(r.game_id)).state  # as GAME_STARTED left it
                assert state.turn_id == 0 and not state.dice and not state.legal_plays
                async for ev in seat.events(r.game_id):  # a fresh subscription
                    assert ev.type == pb.EVENT_TYPE_SNAPSHOT and not ev.state.legal_plays
                    break
            assert not offered.is_set()
            gate.open.set()
            await offered.wait()
            nursery.cancel_scope.cancel()


async def test_a_game_ending_on_its_way_to_the_journal_shows_nowhere_before_its_event(db):
    """A game whose end is on its way to the journal (no seat came; the store stalls) is
    still waiting in every HEARTBEAT, SNAPSHOT and GetGame until its GAME_ABORTED is told:
    a stream that ends on a game over never ends before the event that ends it."""
    with gated(db, heartbeat_s=0.05) as (srv, gate):
        try:
            await ended_once(srv, gate)
        finally:
            gate.open.set()


async def ended_once(srv: EmbeddedServer, gate: Gate) -> None:
    async with Client(srv.address) as client:
        r, _ = await create(client, start_timeout_ms=1000)
        spectator = Client(srv.address, shared=client.channel)  # no token
        held, beaten = trio.Event(), trio.Event()
        beats_while_held: list[pb.GameEvent] = []
        seen: list[pb.GameEvent] = []
        async with trio.open_nursery() as nursery:

            async def follow():
                async for ev in spectator.events(r.game_id, from_start=True):
                    seen.append(ev)
                    if held.is_set() and ev.type == pb.EVENT_TYPE_HEARTBEAT:
                        beats_while_held.append(ev)
                        if len(beats_while_held) == 3:
                            beaten.set()

            nursery.start_soon(follow)
            gate.open.clear()
            await trio.to_thread.run_sync(gate.held.wait)  # the game's end at the gate
            held.set()
            state = (await client.get_game(r.game_id)).state
            assert state.status == pb.GAME_STATUS_WAITING
            async for ev in spectator.events(r.game_id):  # a fresh subscription
                assert ev.type == pb.EVENT_TYPE_SNAPSHOT
                assert ev.state.status == pb.GAME_STATUS_WAITING and ev.seq == 0
                break
            await beaten.wait()
            assert all(b.state.status == pb.GAME_STATUS_WAITING for b in beats_while_held)
            gate.open.set()
        assert seen[-1].type == pb.EVENT_TYPE_GAME_ABORTED  # (the stream ended on it)
        assert (await client.get_game(r.game_id)).state.status == pb.GAME_STATUS_ABORTED


async def test_a_play_and_the_turn_after_it_are_one_commit(db):
    """One journal commit per turn: a play's PLAY_MADE and the next turn's TURN_STARTED
    (thrown while the play is judged) go to the store in one transaction, and the turn
    is offered once that transaction is durable."""
    with gated(db) as (srv, gate):
        async with Client(srv.address) as client:
            r, seats = await create(client, seed=77)
            turn = 0
            for _ in range(8):
                mover, st = await next_turn(seats, r.game_id, turn)
                turn = st.turn_id
                await mover.submit(r.game_id, turn, end_position=st.legal_plays[0].end_position)
            await next_turn(seats, r.game_id, turn)
    rows = {seq: kind for seq, kind, _ in journal_rows(db, r.game_id)}
    batch_of = {}
    for i, batch in enumerate(gate.batches):
        for sql, params in batch:
            if sql.startswith("INSERT INTO events") and params[0] == r.game_id:
                batch_of[params[1]] = i
    pairs = [
        seq
        for seq, kind in rows.items()
        if kind == EventType.PLAY_MADE and rows.get(seq + 1) == EventType.TURN_STARTED
    ]
    assert len(pairs) >= 6
    assert all(batch_of[seq] == batch_of[seq + 1] for seq in pairs), (rows, batch_of)
