"""A flood of connections that are never used: the edge takes at most three quarters of its
file descriptors in gRPC connections, so the rest stay for the web view (and the link to
the core), and callers already connected go on. The web view caps connections too, per
address (but a trusted proxy's) and in all. A real `nardy serve` with few descriptors."""

from __future__ import annotations

import contextlib
import http.client
import os
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

DESCRIPTORS = 512  # the server's limit; it takes at most 384 gRPC connections
FLOOD = 600


def few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


def serving(proc: subprocess.Popen) -> tuple[int, int]:
    """The gRPC and web ports ``nardy serve`` says it serves on (its log, read as it comes)."""
    grpc_port = http_port = 0
    for line in proc.stderr:
        if " web view on http://" in line:
            http_port = int(line.rsplit(":", 1)[1].strip(" /\n"))
        if " serving nardy.v1 on " in line:
            grpc_port = int(line.split(" on ", 1)[1].split()[0].rsplit(":", 1)[1])
            return grpc_port, http_port
    raise AssertionError("nardy serve stopped before serving")


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def check(port: int, timeout: float = 30) -> int:
    """A health check on a new connection of its own."""
    options = [("grpc.use_local_subchannel_pool", 1)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout).status


@contextlib.contextmanager
def serve(tmp_path, *options: str, log: list[str] | None = None) -> Iterator[tuple[int, int, int]]:
    """A real `nardy serve` with few descriptors: (its pid, gRPC port, web port); its log
    lines are added to ``log`` as they come."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "clients", "serve", "--port", "0", "--http-port", "0"]
        + ["--db", str(tmp_path / "c.db"), "--log-level", "INFO", *options],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        preexec_fn=few_descriptors,
    )
    try:
        port, http_port = serving(proc)
        keep = (log if log is not None else []).append
        reading = threading.Thread(target=lambda: [keep(line) for line in proc.stderr])
        reading.start()  # (never a full pipe)
        yield proc.pid, port, http_port
    finally:
        proc.kill()
        proc.wait()
        reading.join()


def test_a_flood_of_unused_connections_leaves_the_web_view_and_callers_served(tmp_path):
    flood: list[socket.socket] = []
    with contextlib.ExitStack() as stack:
        pid, port, http_port = stack.enter_context(serve(tmp_path))
        stack.callback(lambda: [s.close() for s in flood])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as connected:
            health = health_pb2_grpc.HealthStub(connected)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=30).status == 1

            for _ in range(FLOOD):  # connections that never send a byte
                flood.append(socket.create_connection(("127.0.0.1", port)))
            deadline = time.monotonic() + 60
            while descriptors(pid) < DESCRIPTORS * 3 // 4:  # the edge has taken them
                assert time.monotonic() < deadline, descriptors(pid)
                time.sleep(0.05)

            # the web view still accepts (without the quota: "Too many open files")
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/", timeout=20) as page:
                assert page.status == 200
            # a caller connected before the flood goes on
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=30).status == 1
            # and a new connection is refused, not left hanging, while the quota is full
            with pytest.raises(grpc.RpcError) as refused:
                check(port, timeout=20)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert descriptors(pid) < DESCRIPTORS - 16

        for s in flood:
            s.close()
        flood.clear()
        assert check(port) == 1  # room again once the flood is gone


def slow_request(address: str, port: int) -> socket.socket:
    """A connection from ``address`` to the web view that starts a request and never ends
    its headers (slowloris)."""
    s = socket.socket()
    s.bind((address, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: nardy\r\n")
    return s


def closed_by_server(socks: list[socket.socket], count: int, timeout: float = 30) -> int:
    """Wait until ``count`` of ``socks`` have been closed by the server; how many were."""
    closed = 0
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as waiting:
        for s in socks:
            waiting.register(s, selectors.EVENT_READ)
        while closed < count and time.monotonic() < deadline:
            for key, _ in waiting.select(0.5):
                try:
                    gone = not key.fileobj.recv(1024)
                except ConnectionError:
                    gone = True
                if gone:
                    waiting.unregister(key.fileobj)
                    closed += 1
    return closed


def test_slow_requests_to_the_web_view_are_capped_per_address_and_in_all(tmp_path):
    """Connections to the web view that never finish their request: one address holds at
    most 32, and all together an eighth of the descriptors (64 here), so the gRPC port
    still takes new connections."""
    slow: list[socket.socket] = []
    with contextlib.ExitStack() as stack:
        pid, port, http_port = stack.enter_context(serve(tmp_path))
        stack.callback(lambda: [s.close() for s in slow])

        one = [slow_request("127.0.0.2", http_port) for _ in range(40)]
        slow += one
        assert closed_by_server(one, 8) == 8  # 32 kept for that address
        assert closed_by_server(one, 9, timeout=1) == 8

        for n in range(3, 43):  # 40 more addresses, 20 each: 800 in all
            slow += [slow_request(f"127.0.0.{n}", http_port) for _ in range(20)]
        assert closed_by_server(slow[40:], 800 - 32) == 800 - 32  # 64 in all
        assert descriptors(pid) < DESCRIPTORS // 2
        assert check(port) == 1  # the gRPC port takes a new connection


def test_a_trusted_proxy_is_not_capped_per_address_and_its_clients_are_counted_apart(
    tmp_path,
):
    """Behind a reverse proxy (``--trusted-proxy``) every web connection comes from the
    proxy: its connections count in the web view's total only, and the page rate counts the
    client it names in X-Real-IP. From any other address X-Real-IP is ignored."""
    slow: list[socket.socket] = []
    with contextlib.ExitStack() as stack:
        _, _, http_port = stack.enter_context(serve(tmp_path, "--trusted-proxy", "127.0.0.2"))
        stack.callback(lambda: [s.close() for s in slow])
        proxy = [slow_request("127.0.0.2", http_port) for _ in range(40)]
        other = [slow_request("127.0.0.3", http_port) for _ in range(40)]
        slow += proxy + other
        assert closed_by_server(other, 16) == 16  # 64 in all (accepted after the proxy's)
        assert closed_by_server(proxy, 1, timeout=0) == 0  # all 40 of the proxy's kept
        for s in slow:
            s.close()

        def pages(source: str, claims: Callable[[int], str], then: str) -> tuple[int, int]:
            """GETs from ``source``, the n-th claiming the client ``claims(n)``, until one is
            refused (429): how many were served, and the answer to one claiming ``then``."""
            web = http.client.HTTPConnection(
                "127.0.0.1", http_port, timeout=30, source_address=(source, 0)
            )

            def get(claim: str) -> int:
                # (a page not found is limited like any page; a page's script and style not)
                web.request("GET", "/no-such-page", headers={"X-Real-IP": claim})
                answer = web.getresponse()
                answer.read()
                return answer.status

            try:
                for n in range(10_000):
                    status = get(claims(n))
                    if status == 429:
                        return n, get(then)
                    assert status == 404
                raise AssertionError("never refused")
            finally:
                web.close()

        # through the proxy: one client refused, the next one it names served
        served, then = pages("127.0.0.2", lambda _: "203.0.113.9", "203.0.113.10")
        assert served >= 100 and then == 404  # (a burst of 400)
        # elsewhere a claim counts for nothing: every request claims another client, and the
        # address is refused all the same after its own burst (had the claims counted, 250
        # clients' bursts would have served all 10,000). (The answer to the request after
        # the refusal is not asserted: on a loaded machine the bucket may refill in between.)
        served, _ = pages("127.0.0.3", lambda n: f"203.0.113.{n % 250}", "203.0.113.10")
        assert served >= 100


def test_a_request_not_sent_within_ten_seconds_is_closed(tmp_path):
    """The web view's deadline for a request (server.edge.web.connections.REQUEST_WITHIN):
    a connection that sends nothing, one that sends its headers a line every half second,
    and a call whose body never ends are each closed about ten seconds on (the call
    answered 408), not held for as long as their client likes."""
    with serve(tmp_path) as (_, _, http_port):
        silent = socket.create_connection(("127.0.0.1", http_port))
        dripping = slow_request("127.0.0.1", http_port)
        unfinished = socket.create_connection(("127.0.0.1", http_port))
        unfinished.sendall(
            b"POST /api/nardy.v1.ArbiterService/GetGame HTTP/1.1\r\nHost: nardy\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        socks = {"silent": silent, "dripping": dripping, "unfinished": unfinished}
        answers = {name: b"" for name in socks}
        closed: dict[str, float] = {}
        start = time.monotonic()
        drips = 0
        with selectors.DefaultSelector() as waiting:
            for name, s in socks.items():
                waiting.register(s, selectors.EVENT_READ, name)
            while len(closed) < len(socks) and time.monotonic() - start < 60:
                for key, _ in waiting.select(0.5):
                    try:
                        data = key.fileobj.recv(4096)
                    except ConnectionError:
                        data = b""
                    answers[key.data] += data
                    if not data:
                        waiting.unregister(key.fileobj)
                        closed[key.data] = time.monotonic() - start
                if "dripping" not in closed:
                    dripping.sendall(b"X-Drip: 1\r\n")
                    drips += 1
        for s in socks.values():
            s.close()
        assert set(closed) == set(socks), f"still open after 60 s: {set(socks) - set(closed)}"
        assert drips >= 10  # it went on sending, and was closed all the same
        assert max(closed.values()) < 40, closed
        assert answers["silent"] == answers["dripping"] == b""
        assert answers["unfinished"].startswith(b"HTTP/1.1 408 "), answers["unfinished"][:200]
        assert b'"REQUEST_TIMEOUT"' in answers["unfinished"]


def test_requests_that_are_not_http_are_not_logged_as_errors(tmp_path):
    """A request line or header too long, or not HTTP at all, was logged as an error with
    aiohttp's traceback: anyone could write 4 MB of log in 3 s, with no rate limit (the
    request fails before any handler runs). They are now one debug line each: nothing at
    the default level, and the web view answers the next request as before."""
    log: list[str] = []
    bad = (
        b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost nardy\r\n\r\n",
    )
    with serve(tmp_path, log=log) as (_, _, http_port):
        for request in bad * 20:
            with socket.create_connection(("127.0.0.1", http_port)) as s:
                s.sendall(request)
                answer = s.recv(200)
            assert answer.split(b" ", 2)[1] == b"400", answer
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/", timeout=20) as page:
            assert page.status == 200
    noted = [line for line in log if "Traceback" in line or " ERROR " in line]
    assert not noted, "".join(log[-40:])


@pytest.mark.parametrize("port_option", ["--port", "--http-port"])
def test_a_port_in_use_is_said_in_one_line(tmp_path, port_option):
    """`nardy serve` on a port another program holds: the gRPC port gave grpc's traceback
    ("Failed to bind ..."), the web view's a line followed by asyncio's complaints about a
    server never stopped. Both are one line now, exit status 2, and what started stops."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        options = (
            ["--port", port] if port_option == "--port" else ["--port", "0", "--http-port", port]
        )
        done = subprocess.run(
            [sys.executable, "-m", "clients", "serve", "--db", str(tmp_path / "p.db"), *options],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("nardy serve: ")]
    assert said and port in said[-1], done.stderr
    for noise in ("Traceback", "Exception ignored", "never awaited"):
        assert noise not in done.stderr, done.stderr


def test_the_core_started_is_the_installed_one_whatever_the_working_directory(tmp_path):
    """The edge started its core as ``python -m server.core``: from a working directory
    holding a ``server`` package (anyone's, or a project's own), that one ran as the core.
    The children are started with ``-P``: the installed code only."""
    planted = tmp_path / "project"
    core = planted / "server" / "core"
    core.mkdir(parents=True)
    marker = tmp_path / "planted-code-ran"
    (planted / "server" / "__init__.py").write_text("")
    (core / "__init__.py").write_text("")
    (core / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("nardy")), "serve", "--port", "0", "--http-port", "0"]
        + ["--db", str(tmp_path / "p.db"), "--log-level", "INFO"],
        cwd=planted,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        port, _ = serving(proc)
        assert check(port) == health_pb2.HealthCheckResponse.SERVING
        assert not marker.exists()
    finally:
        proc.kill()
        proc.wait()


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_an_ipv6_host_is_served_and_named_in_brackets():
    # `--host ::1` was read by gRPC as [::0.1.0.0]:443 and refused; the web view came up
    from server.app import EmbeddedServer

    with EmbeddedServer(host="::1", http_port=0) as srv:
        assert srv.address.startswith("[::1]:") and srv.http_url.startswith("http://[::1]:")
        with grpc.insecure_channel(srv.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            answer = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        with urllib.request.urlopen(f"{srv.http_url}/api/games", timeout=10) as page:
            assert page.status == 200
