"""Running the arbiter: the trio main, the gRPC server it bridges to, and an embedded mode.

``nardy serve`` runs :func:`serve` under ``trio.run`` with SIGINT/SIGTERM handling;
:class:`EmbeddedServer` runs it in a background thread for tests, the CLI and the ladder.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import grpc
import trio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from nardy.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    arbiter_pb2,
    arbiter_pb2_grpc,
    ladder_pb2,
    ladder_pb2_grpc,
)
from server.bridge import (
    AcceptAhead,
    Bridge,
    Registry,
    Transport,
    TransportFirst,
    pass_encoded,
    watch_lag,
)
from server.collector import FrozenGenerations
from server.core.arbiter import Arbiter, Policy, new_token, token_hash
from server.core.cluster import DEFAULT_LEASE_S, Cluster
from server.core.pgstore import PostgresStore
from server.core.store import Reader, SQLiteStore, SQLStore, set_setting
from server.cpu import AUTO, pin
from server.fronted import Front
from server.intercept import refuse_unparsable
from server.limits import RateLimiter, StreamQuota
from server.reflection import enable_reflection
from server.service import (
    HEARTBEAT_S,
    AdminService,
    ArbiterService,
    LadderService,
    held_streams,
)
from server.web import WebView

log = logging.getLogger("nardy.server")

SERVICE = arbiter_pb2.DESCRIPTOR.services_by_name["ArbiterService"].full_name
LADDER_SERVICE = ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name
ADMIN_SERVICE = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    db: str = "nardy.db"
    heartbeat_s: float = HEARTBEAT_S
    grace_s: float = 1.0
    max_message_bytes: int = 64 * 1024  # requests are small; refuse anything bigger
    max_concurrent_rpcs: int = 20_000
    rate_per_s: float = 1000.0  # requests per second per token (or connection), on average
    rate_burst: float = 2000.0
    streams_per_caller: int = 100  # streams one caller (token, or address) may hold open
    switch_interval_s: float = 0.0005
    freeze_gc: bool = True  # full collections skip long-lived objects (server/collector.py)
    http_port: int | None = None  # the read-only web view and /metrics (None: off; 0: any)
    http_host: str | None = None  # default: the gRPC host
    admin_token: str | None = None  # None: the one stored (hashed), else a new one printed once
    registration_open: bool = True
    players_per_hour: int = Policy.players_per_hour
    open_matches: int = Policy.open_matches
    tls_cert: str | None = None  # PEM files: serve TLS only (no plaintext port)
    tls_key: str | None = None
    commit_window_s: float = 0.0  # extra wait to gather a journal batch (0: natural batches)
    pace_s: float = 0.0  # hold new turns while the transport's loop is this late (0: off)
    accept_ahead: int = 128  # SubmitPlay calls asked of grpc's core at once, beyond grpc.aio's
    transport_first_s: float = 0.002  # the core waits this long at most for a busy transport
    calls_per_batch: int = 2  # transport calls per trio batch near a deadline (bridge.Admission)
    # several instances on one PostgreSQL (server/cluster.py)
    lease_s: float = DEFAULT_LEASE_S  # a dead instance's games are taken over after this
    advertise: str | None = None  # host:port clients are sent to (default: host and port)
    front: bool = False  # the public port in a front process of its own (server.front)
    front_nice: int = 0  # behind a front, the core runs this much nicer (Front.give_way)
    cpu: str = AUTO  # `nardy serve` runs on one CPU (server/cpu.py): auto, a number, or all
    pinned_cpu: int | None = None  # the CPU it was pinned to (set by run_forever)

    @property
    def policy(self) -> Policy:
        return Policy(
            registration_open=self.registration_open,
            players_per_hour=self.players_per_hour,
            open_matches=self.open_matches,
        )


ADMIN_HASH = "admin_token_hash"


def open_store(db: str) -> SQLStore:
    """The store for ``--db``: a ``postgresql://`` URL, or an SQLite file path."""
    if db.startswith(("postgresql://", "postgres://")):
        return PostgresStore(db)
    return SQLiteStore(db)


async def admin_hash(config: ServerConfig, store: SQLStore) -> str:
    """The operator token's hash: from the given token, else the stored one, else a new
    token printed once (to stderr, never to the log)."""
    if config.admin_token:
        digest = token_hash(config.admin_token)
        await store.write([set_setting(ADMIN_HASH, digest)])
        return digest
    stored = await Reader(store).setting(ADMIN_HASH)
    if stored:
        return stored
    token = new_token()
    await store.write([set_setting(ADMIN_HASH, token_hash(token))])
    print(
        f"nardy serve: operator (admin) token, shown only this once: {token}\n"
        "  keep it, e.g. export NARDY_ADMIN_TOKEN=<token>, for `nardy admin ...`",
        file=sys.stderr,
        flush=True,
    )
    return token_hash(token)


def credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    if not config.tls_cert and not config.tls_key:
        return None
    if not (config.tls_cert and config.tls_key):
        raise ValueError("TLS needs both --tls-cert and --tls-key")
    with open(config.tls_key, "rb") as key, open(config.tls_cert, "rb") as cert:
        return grpc.ssl_server_credentials([(key.read(), cert.read())])


async def serve(
    config: ServerConfig,
    stop: trio.Event,
    *,
    store_factory: Callable[[str], SQLStore] = open_store,
    task_status=trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until ``stop`` is set; ``task_status.started`` receives (port, arbiter).

    The store is ``store_factory(config.db)``, opened off the trio thread. On PostgreSQL
    this is one instance of possibly several (server/cluster.py)."""
    store = await trio.to_thread.run_sync(store_factory, config.db)
    cluster = None
    try:
        if isinstance(store, PostgresStore):
            cluster = Cluster(store.url, config.lease_s)
            await trio.to_thread.run_sync(cluster.open)
        arbiter = Arbiter(
            store,
            admin_hash=await admin_hash(config, store),
            policy=config.policy,
            commit_window_s=config.commit_window_s,
            cluster=cluster,
        )
        creds = credentials(config)
        front = Front() if config.front else None
        if front is not None:
            arbiter.arrivals.upstream = front.in_flight
    except BaseException:
        with trio.CancelScope(shield=True):
            if cluster is not None:
                await cluster.close()
            await store.close()
        raise
    async with trio.open_nursery() as nursery:
        await nursery.start(arbiter.run)
        bridge = Bridge(trio.lowlevel.current_trio_token(), nursery, config.calls_per_batch)
        parts: dict = {}

        async def setup(loop) -> int:
            server = grpc.aio.server(
                options=[
                    ("grpc.max_receive_message_length", config.max_message_bytes),
                    ("grpc.keepalive_time_ms", 20_000),
                    ("grpc.keepalive_timeout_ms", 10_000),
                    ("grpc.keepalive_permit_without_calls", 1),
                    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                    ("grpc.so_reuseport", 0),
                ],
                maximum_concurrent_rpcs=config.max_concurrent_rpcs,
            )
            limiter = RateLimiter(config.rate_per_s, config.rate_burst)
            streams = StreamQuota(config.streams_per_caller)
            # the nardy services' handlers, wrapped once (not interceptors: those run per call)
            registry = Registry(server, lambda handler: pass_encoded(refuse_unparsable(handler)))
            arbiter_pb2_grpc.add_ArbiterServiceServicer_to_server(
                ArbiterService(
                    arbiter,
                    bridge,
                    limiter,
                    streams,
                    config.heartbeat_s,
                    front,
                ),
                registry,
            )
            ladder_pb2_grpc.add_LadderServiceServicer_to_server(
                LadderService(arbiter, bridge, limiter, front), registry
            )
            admin_pb2_grpc.add_AdminServiceServicer_to_server(
                AdminService(arbiter, bridge, limiter, front), registry
            )
            registry.close()
            checker = health.aio.HealthServicer()
            # their streams (Watch, reflection) count in their peer's quota too
            hold = held_streams(streams, front)
            others = Registry(server, hold)
            health_pb2_grpc.add_HealthServicer_to_server(checker, others)
            others.close()
            names = [SERVICE, LADDER_SERVICE, ADMIN_SERVICE, health.SERVICE_NAME]
            enable_reflection(names, server, hold)
            address = f"{config.host}:{config.port}"
            if front is not None:  # TLS, if asked for, is the front's
                port = server.add_insecure_port(f"unix:{front.core_socket}")
            elif creds is None:
                port = server.add_insecure_port(address)
            else:
                port = server.add_secure_port(address, creds)
            await server.start()
            play = f"/{SERVICE}/SubmitPlay"
            handler, most = registry.handlers[play], config.max_concurrent_rpcs
            ahead = AcceptAhead(server, play, handler, most, arbiter.arrivals.now)
            ahead.start(config.accept_ahead)
            parts["accept"] = ahead
            if config.pace_s:
                arbiter.pace.limit = config.pace_s
                parts["pace"] = loop.create_task(watch_lag(arbiter.pace, bridge))
            if config.http_port is not None:
                web_view = WebView(arbiter, bridge, arbiter.metrics)
                parts["http_port"] = await web_view.start(
                    config.http_host or config.host, config.http_port
                )
                parts["web"] = web_view
            for name in ("", SERVICE, LADDER_SERVICE):
                await checker.set(name, health_pb2.HealthCheckResponse.SERVING)
            parts.update(server=server, health=checker)
            return port

        async def shutdown(grace: float) -> None:
            await parts["health"].enter_graceful_shutdown()  # NOT_SERVING first
            await bridge.call(arbiter.shutdown)  # streams end with SERVER_SHUTDOWN
            if "web" in parts:
                await parts["web"].stop()
            await parts["server"].stop(grace)
            parts["accept"].stop()

        first = TransportFirst(config.transport_first_s) if config.transport_first_s else None
        transport = Transport(setup, shutdown, first.idle if first else None)
        port = await trio.to_thread.run_sync(transport.start)
        if first is not None:
            trio.lowlevel.add_instrument(first)
        if front is not None:
            try:
                port = await front.start(
                    dict(
                        host=config.host,
                        port=config.port,
                        tls_cert=config.tls_cert,
                        tls_key=config.tls_key,
                        max_message_bytes=config.max_message_bytes,
                        max_concurrent_rpcs=config.max_concurrent_rpcs,
                        accept_ahead=config.accept_ahead,
                        freeze_gc=config.freeze_gc,
                        avoid_cpu=config.pinned_cpu,
                    )
                )
            except BaseException:
                with trio.CancelScope(shield=True):
                    await front.stop()
                    await trio.to_thread.run_sync(transport.stop, 0)
                raise
            nursery.start_soon(front.watch, stop)
            if config.front_nice:
                front.give_way(config.front_nice)
        if cluster is not None:
            cluster.address = config.advertise or f"{config.host}:{port}"
            await nursery.start(arbiter.run_cluster)
        log.info(
            "serving nardy.v1 on %s:%d db=%s tls=%s registration=%s%s%s",
            config.host,
            port,
            store.name,
            "on" if creds else "off",
            "open" if config.registration_open else "closed",
            f" instance={cluster.id} lease={cluster.lease_s:g}s" if cluster else "",
            " front=process" if front else "",
        )
        http_port = parts.get("http_port")
        if http_port is not None:
            log.info("web view on http://%s:%d/", config.http_host or config.host, http_port)
        task_status.started((port, arbiter, http_port))
        try:
            await stop.wait()
        finally:
            with trio.CancelScope(shield=True):
                log.info("shutting down")
                await trio.to_thread.run_sync(transport.stop, config.grace_s)
                if front is not None:
                    await front.stop()
                if first is not None:
                    trio.lowlevel.remove_instrument(first)
                await arbiter.writer.close()  # what was accepted is committed first
                if cluster is not None:
                    await cluster.close()  # the others take our games over at once
                await store.close()
            nursery.cancel_scope.cancel()
    if front is not None and front.died is not None:
        raise front.died


def run_forever(config: ServerConfig) -> None:
    """``nardy serve``: serve until SIGINT or SIGTERM, then shut down gracefully (on one
    CPU: ``config.cpu``; CpuError if it may not be used)."""
    config = replace(config, pinned_cpu=pin(config.cpu))
    if config.switch_interval_s:
        # Two busy threads share the GIL: hand it over sooner than the default 5 ms, so
        # that clocks and replies are not held up behind the other thread's work.
        sys.setswitchinterval(config.switch_interval_s)
    if config.freeze_gc:
        FrozenGenerations().install()

    async def main() -> None:
        stop = trio.Event()
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve, config, stop)
                async for sig in signals:
                    log.info("received %s", signal.Signals(sig).name)
                    stop.set()
                    break

    trio.run(main)


def unwrap(error: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, for a readable report."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class EmbeddedServer:
    """An arbiter in a background thread of this process, on an ephemeral loopback port.

    It holds its own operator token (``admin_token``, a fresh one unless given), so that
    tests, the ladder runner and the terminal client can seat registered players.
    """

    def __init__(
        self,
        db: str = ":memory:",
        *,
        store_factory: Callable[[str], SQLStore] = open_store,
        **options,
    ) -> None:
        options.setdefault("admin_token", new_token())
        self.config = ServerConfig(port=0, db=db, **options)
        self.store_factory = store_factory
        self.admin_token: str = options["admin_token"]
        self.port = 0
        self.http_port: int | None = None  # with http_port=0 in the options: the bound port
        self._token: trio.lowlevel.TrioToken | None = None
        self._arbiter = None
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="arbiter-trio", daemon=True)

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    @property
    def http_url(self) -> str:
        """The web view's base URL (when started with ``http_port``)."""
        return f"http://{self.config.http_host or self.config.host}:{self.http_port}"

    def start(self) -> EmbeddedServer:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._stop.set)
        self._thread.join()

    def call(self, fn, *args):
        """Run ``fn(*args)`` in the arbiter's trio thread (operator tasks, e.g. reissue_token)."""
        if inspect.iscoroutinefunction(fn):
            return trio.from_thread.run(fn, *args, trio_token=self._token)
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    @property
    def arbiter(self):
        return self._arbiter

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _main(self) -> None:
        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            async with trio.open_nursery() as nursery:
                self.port, self._arbiter, self.http_port = await nursery.start(
                    partial(serve, store_factory=self.store_factory), self.config, self._stop
                )
                self._ready.set()

        try:
            trio.run(main)
        except BaseException as e:
            self._error = unwrap(e)
            if self._ready.is_set():  # it was serving: say why it stopped
                log.error("embedded arbiter stopped: %r", self._error, exc_info=self._error)
        finally:
            self._ready.set()
