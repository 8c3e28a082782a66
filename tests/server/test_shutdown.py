"""Graceful shutdown of `nardy serve` on SIGTERM: streams end with SERVER_SHUTDOWN."""

from __future__ import annotations

import signal

import pytest
import trio

from nardy.client import Client
from nardy.v1 import game_pb2 as pb
from tests.server.test_recovery import free_port, start_server


@pytest.mark.slow
async def test_sigterm_ends_streams_with_a_final_event_and_exits_cleanly(tmp_path):
    port = free_port()
    proc = start_server(port, str(tmp_path / "s.db"))
    try:
        async with Client(f"127.0.0.1:{port}") as client:
            r = await client.create_match()
            seen = []
            async for ev in client.events(r.game_id, resume=False):
                seen.append(ev.type)
                if ev.type == pb.EVENT_TYPE_SNAPSHOT:
                    proc.send_signal(signal.SIGTERM)
            assert seen[0] == pb.EVENT_TYPE_SNAPSHOT
            assert seen[-1] == pb.EVENT_TYPE_SERVER_SHUTDOWN
        code = await trio.to_thread.run_sync(proc.wait, 20)
        assert code == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
async def test_the_last_event_offers_no_turn_to_a_server_going_away(tmp_path):
    """SERVER_SHUTDOWN carried the waiting seat's legal plays: a bot that reads "legal
    plays: my turn" played to a server going down. The turn is offered again where the
    game goes on; the last event says whose turn it is, and offers none."""
    port = free_port()
    proc = start_server(port, str(tmp_path / "s.db"))
    try:
        async with Client(f"127.0.0.1:{port}") as client:
            r = await client.create_match(first_seat_color=pb.COLOR_WHITE)
            white, black = (client.with_token(t) for t in (r.first_seat_token, r.second_seat_token))
            async with trio.open_nursery() as nursery:

                async def follow() -> None:
                    async for _ in black.events(r.game_id, resume=False):
                        pass

                nursery.start_soon(follow)
                last = None
                async for ev in white.events(r.game_id, resume=False):
                    if ev.type == pb.EVENT_TYPE_TURN_STARTED and ev.state.legal_plays:
                        proc.send_signal(signal.SIGTERM)
                    last = ev
            assert last.type == pb.EVENT_TYPE_SERVER_SHUTDOWN
            assert last.state.side_to_move == pb.COLOR_WHITE and last.state.turn_id
            assert not last.state.legal_plays
        assert await trio.to_thread.run_sync(proc.wait, 20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
