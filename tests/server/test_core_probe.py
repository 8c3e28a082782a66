"""The edge asks the core every second whether it answers: a core that does not (stopped,
or stuck) is said to be not serving by the health service, and logged, until it answers
again; a core process that stays stuck is killed and started again from the journal."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import grpc
import trio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nardy.client import Client
from nardy.v1 import game_pb2 as pb
from server.app import CoreProcess, EmbeddedServer
from server.config import ServerConfig
from server.edge.main import Edge

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def test_a_core_that_does_not_answer_is_not_serving_until_it_answers_again(caplog):
    with EmbeddedServer(core_stall_s=0.5) as srv:
        release = threading.Event()

        def stuck() -> None:  # the core's trio thread held in a call that does not return
            release.wait(60)

        core = threading.Thread(
            target=trio.from_thread.run_sync, args=(stuck,), kwargs={"trio_token": srv.runner.token}
        )
        with grpc.insecure_channel(srv.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            watch = health.Watch(health_pb2.HealthCheckRequest(), timeout=60)
            assert next(watch).status == SERVING
            core.start()
            assert next(watch).status == NOT_SERVING  # (it was SERVING: a kill -STOP)
            release.set()
            assert next(watch).status == SERVING
            watch.cancel()
        core.join()
    said = [r.getMessage() for r in caplog.records if r.name == "nardy.edge"]
    assert any(m.startswith("the core has not answered for") for m in said), said
    assert "the core answers again" in said


def test_a_core_process_that_stays_stuck_is_killed_and_started_again(tmp_path):
    """kill -STOP of the core: not serving after core_stall_s, killed after core_kill_s, a
    new core resumes the journal's games (the edge's own restart, as after a crash)."""

    async def main() -> None:
        config = ServerConfig(
            port=0, db=str(tmp_path / "stuck.db"), core_stall_s=0.3, core_kill_s=1
        )
        edge = Edge(config, CoreProcess())
        port = await edge.start()
        try:
            address = f"127.0.0.1:{port}"
            game = await trio_call(address, "create")
            stuck = edge.runner.process
            first = edge.core.link
            os.kill(stuck.pid, signal.SIGSTOP)
            await asyncio.wait_for(first.lost.wait(), 30)  # killed: its link is gone
            assert await stuck.wait() == -signal.SIGKILL
            while edge.core.link is first or not edge.core.link.ready.is_set():
                await asyncio.sleep(0.05)  # (the new core starting)
            assert await trio_call(address, game) == pb.GAME_STATUS_WAITING  # resumed
        finally:
            await edge.stop()

    async def trio_call(address: str, what: str):
        async def call():
            async with Client(address) as client:
                if what == "create":
                    return (await client.create_match(seed=3)).game_id
                return (await client.get_game(what)).state.status

        return await asyncio.to_thread(trio.run, call)

    asyncio.run(main())
