"""The Node.js example engine (examples/node, @grpc/grpc-js + @grpc/proto-loader, the .proto
files read at run time): it passes `nardy check-engine` over the Play stream (its default,
falling back to SubscribeGame + SubmitPlay where Play is not offered) and with --unary,
plays a whole game against a Python engine over a real arbiter, and rides out a connection
cut while its turn waits. Node is on every machine here, so in CI (CI=true) a missing node
or missing packages (`make node`) fail these tests instead of skipping them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from nardy.client import Client, play_game
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from tests.relay import Proxy

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
    launcher = ("NARDY_SERVER", "NARDY_TOKEN", "NARDY_TLS_CA", "NARDY_TLS")
    env = {k: v for k, v in os.environ.items() if k not in launcher}
    return {**env, "NO_COLOR": "1", **extra}


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--unary"]], ids=["play", "unary"])
def test_the_node_engine_passes_check_engine(node, flags):
    run = subprocess.run(
        [sys.executable, "-m", "clients", "check-engine", "--", node, str(ENGINE), *flags],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OK: all" in run.stdout
    assert "FAIL" not in run.stdout
    assert "PASS no-play-stream" in run.stdout  # (Play answered UNIMPLEMENTED there)


def self_signed(tmp_path: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key (PEM files), made with openssl."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


@pytest.mark.slow
@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
async def test_the_node_engine_plays_a_game_against_a_python_engine(node, tmp_path, tls):
    """Both engines are launched alike; with TLS both find the CA in $NARDY_TLS_CA."""
    options, extra, spectator_tls = {}, {}, {}
    if tls:
        if shutil.which("openssl") is None:
            pytest.skip("openssl is needed to make a test certificate")
        cert, key = self_signed(tmp_path)
        options = {"tls_cert": cert, "tls_key": key}
        extra = {"NARDY_TLS_CA": cert}
        spectator_tls = {"tls": True, "root_certificates": Path(cert).read_bytes()}
    with EmbeddedServer(db=str(tmp_path / "n.db"), **options) as srv:
        async with Client(srv.address, **spectator_tls) as spectator:
            r = await spectator.create_match(options=pb.GameOptions(turn_time_ms=20_000))
            seat = {"NARDY_SERVER": srv.address, **extra}
            procs = [
                subprocess.Popen(
                    [node, str(ENGINE)],
                    env=environment(**seat, NARDY_TOKEN=r.first_seat_token),
                    stdout=subprocess.DEVNULL,
                    stderr=open(tmp_path / "node.log", "wb"),  # noqa: SIM115
                ),
                subprocess.Popen(
                    [sys.executable, "-m", "clients", "engine", "greedy", "--max-games", "1"],
                    env=environment(**seat, NARDY_TOKEN=r.second_seat_token),
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
        assert f"game {r.game_id}: over the Play stream" in log
        assert "does not offer Play" not in log


@pytest.mark.slow
async def test_the_node_engine_resumes_its_play_stream_after_a_lost_connection(node, tmp_path):
    """Through a relay: what the arbiter sends the Node engine is held back from the
    opponent's third play on (its turn is announced into the void), then the connection is
    cut. The engine opens its Play stream again, is told of the waiting turn and plays it,
    and the game goes on to its end."""
    with EmbeddedServer(db=str(tmp_path / "r.db")) as srv:
        proxy = Proxy(srv.port)
        async with Client(srv.address) as c:
            r = await c.create_match(options=pb.GameOptions(turn_time_ms=20_000))
            proc = subprocess.Popen(
                [node, str(ENGINE)],
                env=environment(NARDY_SERVER=proxy.address, NARDY_TOKEN=r.first_seat_token),
                stdout=subprocess.DEVNULL,
                stderr=open(tmp_path / "node.log", "wb"),  # noqa: SIM115
            )
            held: list[int] = []

            def opponent(turn):
                if len(held) < 3:
                    held.append(turn.state.turn_id)
                    if len(held) == 3:
                        proxy.hold()  # before this play: the engine's next turn is held
                return turn.legal[0]

            async def cut_on_the_held_turn() -> None:
                async for ev in c.events(r.game_id, from_start=True):
                    started = ev.type == pb.EVENT_TYPE_TURN_STARTED
                    if started and len(held) == 3 and ev.state.turn_id > held[-1]:
                        proxy.cut()
                        return

            try:
                with trio.fail_after(GAME_TIMEOUT_S):
                    async with trio.open_nursery() as n:
                        n.start_soon(cut_on_the_held_turn)
                        final = await play_game(c.with_token(r.second_seat_token), r.game_id,
                                                opponent)  # fmt: skip
            finally:
                proc.kill()
                proc.wait()
                proxy.close()
            events = [ev async for ev in c.events(r.game_id, from_start=True)]
    log = (tmp_path / "node.log").read_text()
    assert final.status == pb.GAME_STATUS_FINISHED, log[-2000:]
    assert final.result.termination == pb.TERMINATION_NORMAL, log[-2000:]
    assert final.white_refused == final.black_refused == 0
    mine = pb.COLOR_WHITE if final.your_color == pb.COLOR_BLACK else pb.COLOR_BLACK
    after = [
        ev.play.turn_id
        for ev in events
        if ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.side == mine
        and ev.play.turn_id > held[-1]
    ]  # fmt: skip
    assert after and f"turn {after[0]}: played" in log, log[-2000:]
    assert "does not offer Play" not in log  # it stayed on Play
