"""deploy/nardy.service with deploy/nardy.env: systemd accepts the unit (``systemd-analyze
verify``, offline), its hardening rates OK (``systemd-analyze security --offline``), and
the command line it runs, expanded with the example settings and the credential, starts a
real ``nardy serve`` that serves with the operator token of the credential file and stops
cleanly on SIGTERM.

systemd cannot run as PID 1 in every container, but ``systemd-analyze`` reads unit files
offline; ``make test`` installs it (``make systemd``). Without it these tests skip, except
under CI.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nardy.v1 import admin_pb2, admin_pb2_grpc
from tests.conftest import missing

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "nardy.service"
SETTINGS = ROOT / "deploy" / "nardy.env"
INSTALLED = "/opt/nardy/.venv/bin/nardy"  # where the unit expects the installation
NARDY = str(Path(sys.executable).with_name("nardy"))


@pytest.fixture
def analyze() -> str:
    found = shutil.which("systemd-analyze")
    if not found:
        missing("no systemd-analyze: `make systemd` installs it")
    return found


def unit_here(tmp_path: Path) -> Path:
    """The unit as shipped, but for where this checkout's ``nardy`` is installed."""
    text = UNIT.read_text()
    assert INSTALLED in text
    path = tmp_path / "nardy.service"
    path.write_text(text.replace(INSTALLED, NARDY))
    return path


def test_systemd_accepts_the_unit(analyze, tmp_path):
    r = subprocess.run(
        [analyze, "verify", str(unit_here(tmp_path))], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert "nardy.service" not in r.stderr, r.stderr  # (no warning about it either)


def test_the_unit_is_hardened(analyze, tmp_path):
    r = subprocess.run(
        [analyze, "security", "--offline=yes", str(unit_here(tmp_path))],
        capture_output=True,
        text=True,
    )
    found = re.search(r"Overall exposure level for nardy\.service: ([0-9.]+)", r.stdout)
    assert found, r.stdout + r.stderr
    assert float(found[1]) <= 2.0, r.stdout  # systemd rates up to 2.0 "OK"


def settings(path: Path) -> dict[str, str]:
    """An EnvironmentFile's KEY=VALUE lines."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def command_line(env: dict[str, str], credentials: Path) -> list[str]:
    """ExecStart= as systemd runs it: ``${X}`` one word, ``$X`` split on white space,
    ``%d`` the credentials directory."""
    line = next(
        ln for ln in UNIT.read_text().splitlines() if ln.startswith("ExecStart=")
    ).removeprefix("ExecStart=")
    argv: list[str] = []
    for word in shlex.split(line):
        if re.fullmatch(r"\$[A-Z_]+", word):
            argv += env.get(word[1:], "").split()
            continue
        word = re.sub(r"\$\{([A-Z_]+)\}", lambda m: env[m[1]], word)
        argv.append(word.replace("%d", str(credentials)))
    assert argv[0] == INSTALLED
    return [NARDY, *argv[1:]]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_command_line_it_runs_serves_with_the_credential(tmp_path):
    env = settings(SETTINGS)
    assert {"NARDY_HOST", "NARDY_PORT", "NARDY_DB", "NARDY_OPTIONS"} <= env.keys()
    port, http_port = free_port(), free_port()
    env |= {  # loopback and a scratch database here; the rest as shipped
        "NARDY_HOST": "127.0.0.1",
        "NARDY_PORT": str(port),
        "NARDY_DB": str(tmp_path / "nardy.db"),
        "NARDY_OPTIONS": env["NARDY_OPTIONS"].replace("8080", str(http_port)),
    }
    credentials = tmp_path / "credentials"
    credentials.mkdir(mode=0o700)
    token = "operator-token-from-the-credential"
    (credentials / "admin-token").write_text(token + "\n")
    (credentials / "admin-token").chmod(0o400)
    argv = command_line(env, credentials)
    clean = {k: v for k, v in os.environ.items() if k != "NARDY_ADMIN_TOKEN"}
    log = tmp_path / "serve.log"
    proc = subprocess.Popen(argv, stderr=log.open("w"), env=clean, cwd=tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            health = health_pb2_grpc.HealthStub(ch)
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                try:
                    status = health.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    if status == health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.RpcError:
                    pass
                time.sleep(0.05)
            admin = admin_pb2_grpc.AdminServiceStub(ch)
            md = (("authorization", f"Bearer {token}"),)
            admin.ListPlayers(admin_pb2.ListPlayersRequest(), metadata=md, timeout=10)
            with pytest.raises(grpc.RpcError) as refused:
                admin.ListPlayers(
                    admin_pb2.ListPlayersRequest(),
                    metadata=(("authorization", "Bearer not-the-operator"),),
                    timeout=10,
                )
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert (tmp_path / "nardy.db").exists()
        assert "operator (admin) token" not in log.read_text()  # none made: the file's
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()
