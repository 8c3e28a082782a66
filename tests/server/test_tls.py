"""TLS: a TLS client plays a game; a plaintext client is refused on the
TLS port; the command-line clients take ``--tls-ca`` (or ``$NARDY_TLS_CA``).

The certificate is made here, self-signed for 127.0.0.1 and localhost.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nardy.client import Client, play_game
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from tests.server.conftest import random_engine
from tests.server.test_connections import serving

ROOT = Path(__file__).resolve().parents[2]
RACE = "w/0,0,0,0,0,0,-3,-3,-3,-2,-2,-2,0,0,0,0,0,0,3,3,3,2,2,2"


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nardy test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def play_a_race(client: Client) -> tuple[list[Client], str]:
    """Two open seats of one match over ``client`` play its game (from RACE) to the end;
    the seats' clients and the game's id."""
    r = await client.create_match(
        start_position=RACE, options=pb.GameOptions(auto_play_forced=True)
    )
    seats = [client.with_token(t) for t in (r.first_seat_token, r.second_seat_token)]
    finals = []

    async def seat(i: int) -> None:
        finals.append(await play_game(seats[i], r.game_id, random_engine(i)))

    with trio.fail_after(60):
        async with trio.open_nursery() as n:
            n.start_soon(seat, 0)
            n.start_soon(seat, 1)
    assert [s.status for s in finals] == [pb.GAME_STATUS_FINISHED] * 2
    return seats, r.game_id


@pytest.fixture
def tls_server(tmp_path):
    cert, key = self_signed(tmp_path)
    with EmbeddedServer(db=str(tmp_path / "t.db"), tls_cert=str(cert), tls_key=str(key)) as srv:
        yield srv, cert


async def test_a_tls_client_plays_a_game_and_plaintext_is_refused(tls_server):
    srv, cert = tls_server
    roots = cert.read_bytes()
    async with Client(srv.address, tls=True, root_certificates=roots) as client:
        _, game_id = await play_a_race(client)

    plain = grpc.insecure_channel(srv.address)
    try:
        with pytest.raises(grpc.RpcError) as info:
            arbiter_pb2_grpc.ArbiterServiceStub(plain).GetGame(
                api.GetGameRequest(game_id=game_id), timeout=5
            )
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        plain.close()
    # a TLS client that does not trust the certificate is refused too
    async with Client(srv.address, tls=True) as untrusting:
        with pytest.raises(grpc.RpcError) as info:
            await untrusting.call("GetGame", api.GetGameRequest(game_id=game_id), timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_command_line_clients_take_tls_ca(tls_server):
    srv, cert = tls_server

    def run(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "clients", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NO_COLOR": "1", **env},
        )

    flags = ("--server", srv.address, "--admin-token-file")
    token_file = cert.parent / "admin-token"
    token_file.write_text(srv.admin_token + "\n")
    out = run("admin", *flags, str(token_file), "--tls-ca", str(cert), "register", "tls-bot")
    assert out.returncode == 0, out.stderr
    assert "token: " in out.stdout
    out = run("admin", *flags, str(token_file), "players", NARDY_TLS_CA=str(cert))
    assert out.returncode == 0 and "tls-bot" in out.stdout, out.stderr
    out = run("admin", *flags, str(token_file), "players")  # plaintext: refused
    assert out.returncode == 1 and "UNAVAILABLE" in out.stderr
    assert "if the arbiter serves TLS: --tls" in out.stderr, out.stderr  # what to try


def test_plaintext_knocking_on_a_tls_port_is_not_logged_line_by_line(tmp_path):
    """gRPC logged every failed handshake itself (an INFO line, whatever --log-level): a
    port scan filled the log. `nardy serve` keeps gRPC's own logging to its errors."""
    cert, key = self_signed(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "clients", "serve", "--port", "0", "--db", str(tmp_path / "k.db"),
         "--tls", str(cert), str(key)],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port, _ = serving(proc)
        for _ in range(5):  # plaintext HTTP/1 at the TLS port, as a scanner would
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                s.recv(100)
    finally:
        proc.terminate()
        rest = proc.communicate(timeout=60)[1]
    assert "Handshake failed" not in rest, rest
