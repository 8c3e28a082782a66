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
