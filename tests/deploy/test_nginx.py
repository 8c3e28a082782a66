"""deploy/nginx-nardy.conf for real: nginx (Debian's package) in front of three ``nardy
serve --forward`` processes on the test PostgreSQL, TLS at nginx, the file as shipped but
for its addresses and certificate. Clients that know nginx's address only, and nothing of
instances or redirects (they follow no ``nardy-instance`` and retry nothing), play games
that different instances run, over SubscribeGame + SubmitPlay and over the Play stream,
all on one connection.

``make test`` installs nginx (``make nginx``). Without it the test skips, except under CI.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from tests.conftest import missing
from tests.server.test_forward import naive_seat, play_stream_seat
from tests.server.test_tls import self_signed

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "deploy" / "nginx-nardy.conf"
TOKEN = "operator-token-for-the-nginx-test"
GAMES = 6  # two per instance, if nginx spreads them evenly


@pytest.fixture
def nginx() -> str:
    found = shutil.which("nginx") or shutil.which("/usr/sbin/nginx")
    if not found:
        missing("no nginx: `make nginx` installs it")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def site(port: int, upstreams: list[str], cert: Path, key: Path) -> str:
    """The shipped site with this test's addresses and certificate (each substitution is
    checked: a changed file fails here, not silently)."""
    text = SITE.read_text()
    servers = re.findall(r"(?m)^( *)server 10\.0\.0\.\d+:50051( [^;]*)?;\n", text)
    assert len(servers) == 3, "three example instances in the upstream block"
    indent, params = servers[0]
    ours = "".join(f"{indent}server {u}{params};\n" for u in upstreams)
    text, n = re.subn(r"(?m)^ *server 10\.0\.0\.\d+:50051[^;]*;\n", "", text)
    text = text.replace("keepalive 64;", f"{ours.strip()}\n    keepalive 64;", 1)
    text, listen = re.subn(r"listen 443 ssl http2;", f"listen 127.0.0.1:{port} ssl http2;", text)
    text, c = re.subn(r"ssl_certificate [^;]+;", f"ssl_certificate {cert};", text)
    text, k = re.subn(r"ssl_certificate_key [^;]+;", f"ssl_certificate_key {key};", text)
    assert (n, listen, c, k) == (3, 1, 1, 1)
    return text


def main_conf(tmp: Path, site_file: Path) -> str:
    """nginx's main file around the site: a foreground process, everything under ``tmp``."""
    temps = "".join(
        f"    {name}_temp_path {tmp / name};\n"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        "daemon off;\nmaster_process off;\n"
        f"pid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'} warn;\n"
        "events { worker_connections 1024; }\n"
        f"http {{\n    access_log off;\n{temps}    include {site_file};\n}}\n"
    )


def wait_serving(address: str, proc: subprocess.Popen, log: Path, credentials=None) -> None:
    channel = (
        grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
    )
    deadline = time.monotonic() + 60
    with channel:
        health = health_pb2_grpc.HealthStub(channel)
        while True:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                answer = health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.05)


def owners(db: str, match_ids: list[str]) -> dict[str, str]:
    """match -> the address of the instance whose lease it is under."""
    with psycopg.connect(db, autocommit=True) as conn:
        found = conn.execute(
            "SELECT l.match_id, i.address FROM leases l JOIN instances i ON i.id = l.owner "
            "WHERE l.match_id = ANY(%s)",
            (match_ids,),
        ).fetchall()
    return dict(found)


def test_clients_of_one_nginx_address_play_games_every_instance_runs(nginx, pg_db, tmp_path):
    cert, key = self_signed(tmp_path)
    ports = [free_port() for _ in range(3)]
    processes: list[subprocess.Popen] = []
    try:
        for port in ports:
            log = tmp_path / f"instance-{port}.log"
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "clients", "serve", "--port", str(port)]
                    + ["--db", pg_db, "--lease-ms", "3000", "--log-level", "WARNING"]
                    + ["--forward", "--trusted-proxy", "127.0.0.1"],
                    stderr=log.open("w"),
                    env={**os.environ, "NARDY_ADMIN_TOKEN": TOKEN},
                )
            )
        front = free_port()
        site_file = tmp_path / "nardy.conf"
        site_file.write_text(site(front, [f"127.0.0.1:{p}" for p in ports], cert, key))
        (tmp_path / "nginx.conf").write_text(main_conf(tmp_path, site_file))
        error_log = tmp_path / "error.log"
        nginx_proc = subprocess.Popen(
            [nginx, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-e", str(error_log)],
            stderr=subprocess.STDOUT,
            stdout=(tmp_path / "nginx.out").open("w"),
        )
        processes.append(nginx_proc)
        for port, proc in zip(ports, processes, strict=False):
            wait_serving(f"127.0.0.1:{port}", proc, tmp_path / f"instance-{port}.log")
        roots = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        address = f"127.0.0.1:{front}"
        wait_serving(address, nginx_proc, tmp_path / "nginx.out", roots)

        with grpc.secure_channel(address, roots) as channel:
            stub = api_grpc.ArbiterServiceStub(channel)
            operator = (("authorization", f"Bearer {TOKEN}"),)
            created = [
                stub.CreateMatch(
                    api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=30_000)),
                    metadata=operator,
                )
                for _ in range(GAMES)
            ]
            running = owners(pg_db, [r.match_id for r in created])
            assert len(running) == GAMES
            assert len(set(running.values())) >= 2, running  # nginx spread them

            results: dict[tuple[str, int], object] = {}

            def seat(r: api.CreateMatchResponse, i: int, token: str) -> None:
                play = naive_seat if created.index(r) % 2 else play_stream_seat
                try:
                    results[(r.game_id, i)] = play(stub, r.game_id, token)
                except BaseException as e:  # (reported below)
                    results[(r.game_id, i)] = e

            threads = [
                threading.Thread(target=seat, args=(r, i, token), daemon=True)
                for r in created
                for i, token in enumerate((r.first_seat_token, r.second_seat_token))
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            for outcome in results.values():
                if isinstance(outcome, BaseException):
                    raise outcome
            assert len(results) == 2 * GAMES
            for r in created:
                final = stub.GetGame(api.GetGameRequest(game_id=r.game_id)).state
                assert final.status == pb.GAME_STATUS_FINISHED
                assert results[(r.game_id, 0)].result == final.result
                assert results[(r.game_id, 1)].result == final.result
        errors = error_log.read_text() if error_log.exists() else ""
        assert "[error]" not in errors and "[crit]" not in errors, errors
    finally:
        for proc in processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in processes:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
