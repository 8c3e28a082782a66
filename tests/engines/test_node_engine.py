"""The Node.js example engine (examples/node, @grpc/grpc-js + @grpc/proto-loader, the .proto
files read at run time): it passes `nardy check-engine` and plays a whole game against a
Python engine over a real arbiter. Node is on every machine here, so in CI (CI=true) a
missing node or missing packages (`make node`) fail these tests instead of skipping them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from nardy.client import Client
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "examples" / "node" / "engine.js"
GAME_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    missing = None
    if path is None:
        missing = "node is not installed"
    elif not (ENGINE.parent / "node_modules" / "@grpc" / "grpc-js").is_dir():
        missing = "the Node example's packages are not installed: run `make node` (npm ci)"
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    return path


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NARDY_SERVER", "NARDY_TOKEN")}
    return {**env, "NO_COLOR": "1", **extra}


def test_the_node_engine_passes_check_engine(node):
    run = subprocess.run(
        [sys.executable, "-m", "nardy", "check-engine", "--", node, str(ENGINE)],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OK: all" in run.stdout
    assert "FAIL" not in run.stdout


async def test_the_node_engine_plays_a_game_against_a_python_engine(node, tmp_path):
    with EmbeddedServer(db=str(tmp_path / "n.db")) as srv:
        async with Client(srv.address) as spectator:
            r = await spectator.create_match(options=pb.GameOptions(turn_time_ms=20_000))
            procs = [
                subprocess.Popen(
                    [node, str(ENGINE)],
                    env=environment(NARDY_SERVER=srv.address, NARDY_TOKEN=r.first_seat_token),
                    stdout=subprocess.DEVNULL,
                    stderr=open(tmp_path / "node.log", "wb"),  # noqa: SIM115
                ),
                subprocess.Popen(
                    [sys.executable, "-m", "nardy", "engine", "greedy", "--max-games", "1"],
                    env=environment(NARDY_SERVER=srv.address, NARDY_TOKEN=r.second_seat_token),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                ),
            ]
            try:
                final = None
                with trio.fail_after(GAME_TIMEOUT_S):
                    async for ev in spectator.events(r.game_id, from_start=True):
                        final = ev
                assert final is not None and final.type == pb.EVENT_TYPE_GAME_FINISHED
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
        state = final.state
        log = (tmp_path / "node.log").read_text()
        assert state.result.termination == pb.TERMINATION_NORMAL, log[-2000:]
        assert state.white_refused == state.black_refused == 0
        assert "played" in log  # the Node engine made its own plays
