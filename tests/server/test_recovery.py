"""Nothing is lost: kill -9 the real server mid-game, restart it on the same SQLite file,
finish the game, and compare with the same game played without interruption."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import trio

from nardy.client import Client, play_game
from nardy.v1 import game_pb2 as pb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, db: str, admin_token: str | None = None) -> subprocess.Popen:
    env = None if admin_token is None else {**os.environ, "NARDY_ADMIN_TOKEN": admin_token}
    proc = subprocess.Popen(
        [
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
            "--lease-ms",  # PostgreSQL: the killed server's games are taken over after this
            "1500",
        ],
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 90  # its start takes ~1.5 s of CPU: long on a loaded machine
    while True:  # wait until it accepts connections
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()  # not left running when the test fails
                proc.wait()
                raise AssertionError(f"nardy serve did not start on port {port}") from None
            time.sleep(0.02)


def first_legal(turn):
    return turn.legal[0]


async def play_match(address: str, *, kill_at: int | None = None, restart=None):
    """Play a seeded game with deterministic engines; optionally kill the server after
    ``kill_at`` plays (before answering), restart it, and go on. Returns the plays."""
    async with Client(address) as client:
        r = await client.create_match(seed=4242, options=pb.GameOptions(turn_time_ms=30_000))
        seats = [client.with_token(r.first_seat_token), client.with_token(r.second_seat_token)]
        plays = 0
        killed = trio.Event()

        def engine(turn):
            nonlocal plays
            plays += 1
            if kill_at is not None and plays == kill_at:
                restart()  # kill -9 and start again, before this play reaches the server
                killed.set()
            return first_legal(turn)

        async with trio.open_nursery() as n:
            for seat in seats:
                n.start_soon(play_game, seat, r.game_id, engine)
        events = []
        async for ev in client.events(r.game_id, from_start=True):
            events.append(ev)
        return [e.play.notation for e in events if e.type == pb.EVENT_TYPE_PLAY_MADE], events


@pytest.mark.slow
async def test_kill_9_mid_game_and_resume(tmp_path, db):
    port = free_port()
    address = f"127.0.0.1:{port}"
    reference_proc = start_server(port, str(tmp_path / "ref.db"))
    try:
        reference, _ = await play_match(address)
    finally:
        reference_proc.terminate()
        reference_proc.wait()

    procs = [start_server(port, db)]

    def restart():
        os.kill(procs[-1].pid, signal.SIGKILL)
        procs[-1].wait()
        procs.append(start_server(port, db))

    try:
        plays, events = await play_match(address, kill_at=9, restart=restart)
    finally:
        procs[-1].terminate()
        procs[-1].wait()
    assert len(procs) == 2
    assert plays == reference  # the same dice and the same plays, turn by turn
    final = events[-1].state
    assert final.status == pb.GAME_STATUS_FINISHED
    # the turn in progress at the kill was announced again with the same turn id
    started = [e.state.turn_id for e in events if e.type == pb.EVENT_TYPE_TURN_STARTED]
    assert len(started) == len(set(started)) + 1
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1))


async def a_turn_then_a_stop(db: str) -> tuple[str, str, int]:
    """A game of 5 s turns on a server on ``db``, stopped once its first turn has been
    announced: (game id, the mover's seat token, the announcement's seq)."""
    from server.app import EmbeddedServer

    with EmbeddedServer(db=db) as first:
        async with Client(first.address) as client:
            r = await client.create_match(seed=5, options=pb.GameOptions(turn_time_ms=5_000))
            tokens = (r.first_seat_token, r.second_seat_token)
            seats = [client.with_token(t) for t in tokens]
            async with trio.open_nursery() as nursery:
                for seat in seats[1:]:
                    nursery.start_soon(lambda s=seat: anext(aiter(s.events(r.game_id))))
                async for ev in seats[0].events(r.game_id):
                    if ev.type == pb.EVENT_TYPE_TURN_STARTED:
                        mover = 0 if ev.state.side_to_move == ev.state.your_color else 1
                        nursery.cancel_scope.cancel()
                        return r.game_id, tokens[mover], ev.seq
    raise AssertionError("no turn was announced")


async def offered_again(
    client: Client, token: str, game_id: str, **follow
) -> tuple[Client, pb.GameEvent]:
    """The mover's seat back 2 s after the restart (``follow``: how it subscribes): the
    seat, and the event that offers it its turn."""
    await trio.sleep(2.0)  # (the outage's end, and the seats' back-off)
    seat = client.with_token(token)
    async for ev in seat.events(game_id, **follow):
        if ev.state.legal_plays:
            return seat, ev
    raise AssertionError("the turn was not offered again")


async def test_a_seat_back_after_a_restart_is_charged_from_when_it_was_sent_its_turn(tmp_path):
    """After a restart the mover's turn waits for its seat (at most 30 s): once the seat's
    new stream is sent the turn, its time runs, and a play is charged from then, neither
    for the outage nor the wait (it was charged nothing, the turn running from 30 s after
    the restart whenever the seat came)."""
    from server.app import EmbeddedServer

    db = str(tmp_path / "restart.db")
    game_id, token, _ = await a_turn_then_a_stop(db)
    # the server is stopped; started again on its journal, the seats reconnect 2 s later
    with EmbeddedServer(db=db) as second:
        async with Client(second.address) as client:
            seat, ev = await offered_again(client, token, game_id)
            await trio.sleep(0.5)  # thinking
            # its clock is read as running (it said the whole turn was left: a bot that
            # trusted it lost on time)
            state = (await seat.get_game(game_id)).state
            clock = (state.white_clock, state.black_clock)[state.side_to_move - 1]
            assert clock.remaining_ms <= 4_600, clock
            answer = await seat.submit(
                game_id, ev.state.turn_id, end_position=ev.state.legal_plays[0].end_position
            )
    assert 400 <= answer.used_ms <= 1500, answer.used_ms


async def test_a_turn_announced_again_after_a_restart_reads_its_deadline_as_sent(tmp_path):
    """After a restart the waiting turn is announced again (a new TURN_STARTED, the same
    turn_id) and its clock starts when the seat's new stream sends it: a seat resuming
    after the old announcement gets the new one in its backlog, and its `time +
    remaining_ms` is the deadline (docs/PROTOCOL.md, Clocks), not the restart's."""
    from server.app import EmbeddedServer

    db = str(tmp_path / "restart.db")
    game_id, token, seen = await a_turn_then_a_stop(db)
    with EmbeddedServer(db=db) as second:
        async with Client(second.address) as client:
            seat, ev = await offered_again(client, token, game_id, after_seq=seen, resume=False)
            received = time.time()
            assert ev.type == pb.EVENT_TYPE_TURN_STARTED and ev.seq > seen
            clock = (ev.state.white_clock, ev.state.black_clock)[ev.state.side_to_move - 1]
            deadline = ev.time.ToMicroseconds() / 1e6 + clock.remaining_ms / 1000
            assert 4.5 <= deadline - received <= 5.0, deadline - received
            answer = await seat.submit(
                game_id, ev.state.turn_id, end_position=ev.state.legal_plays[0].end_position
            )
    assert answer.used_ms <= 500, answer.used_ms
