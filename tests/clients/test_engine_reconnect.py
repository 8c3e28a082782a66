"""`nardy engine` and an arbiter it cannot reach (real processes): it says so on stderr with
every retry, waits for an arbiter that comes up late and then plays, and gives up after
--give-up seconds with one clear line and exit status 1."""

from __future__ import annotations

import random
import signal
import subprocess
import sys

import pytest

from nardy.client import SimpleClient
from nardy.v1 import game_pb2 as pb
from tests.server.test_recovery import free_port, start_server

ENV = {"PATH": "/usr/bin:/bin"}


def engine(address: str, token: str, *args: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "clients", "engine", "random", "--server", address]
    return subprocess.Popen(
        [*cmd, f"--token={token}", *args], stderr=subprocess.PIPE, text=True, env=ENV
    )


@pytest.mark.slow
def test_a_dead_address_is_retried_visibly_then_given_up():
    address = f"127.0.0.1:{free_port()}"  # nobody listens there
    proc = engine(address, "some-token", "--give-up", "2")
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    lines = err.strip().splitlines()
    retries = [
        line for line in lines if f"cannot reach {address} (unavailable), retrying in" in line
    ]
    assert len(retries) >= 2, err  # progress while it waits, not silence
    assert lines[-1] == (
        f"nardy engine random: cannot reach the arbiter at {address} (unavailable): "
        "gave up after 2 s"
    )
    assert proc.returncode == 1
    assert "Traceback" not in err


def test_bad_give_up_is_refused():
    out = subprocess.run(
        [sys.executable, "-m", "clients", "engine", "random", "--token", "t", "--give-up", "0"],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    assert out.returncode == 2 and "--give-up is a number of seconds above 0" in out.stderr


@pytest.mark.slow
def test_an_arbiter_that_comes_up_late_is_waited_for_and_the_game_played(tmp_path):
    port, db = free_port(), str(tmp_path / "late.db")
    address = f"127.0.0.1:{port}"
    server = start_server(port, db)
    with SimpleClient(address) as client:
        r = client.create_match(seed=5, options=pb.GameOptions(auto_play_forced=True))
    server.send_signal(signal.SIGTERM)
    assert server.wait(30) == 0  # the arbiter is down: the engine starts without it
    proc = engine(address, r.first_seat_token, "--give-up", "300", "--max-games", "1")
    servers = []
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # wait until it says it is retrying (or it exits)
            seen.append(line)
            if f"cannot reach {address}" in line:
                break
        assert any("retrying in" in line for line in seen), "".join(seen)
        servers.append(start_server(port, db))  # same port, same journal
        rng = random.Random(1)
        with SimpleClient(address, r.second_seat_token) as seat:
            final = seat.play(r.game_id, lambda turn: rng.choice(turn.legal))
        assert final.status == pb.GAME_STATUS_FINISHED
        rest = proc.stderr.read()
        assert proc.wait(120) == 0, rest
        assert f"nardy engine random: connected to {address} again" in "".join(seen) + rest
    finally:
        proc.kill()
        for s in servers:
            s.send_signal(signal.SIGTERM)
            s.wait(30)
