"""The edge: the public gRPC port (TLS, health, reflection), the web view and /metrics, and
the core it speaks to on the link.

The edge starts its core (:class:`CoreRunner`: a process of its own for ``nardy serve``, a
thread for an embedded server), waits until it has restored its games, then serves. A
core that stops on its own is started again: calls meanwhile are answered UNAVAILABLE and
streams end with UNAVAILABLE (clients resume by seq), and the new core resumes every game
from the journal. Stopping, the edge first ends every stream with SERVER_SHUTDOWN, then
gives calls in flight ``grace_s``, then closes the link: the core commits what it accepted
and closes the store.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
from typing import Protocol

import grpc
from grpc_health.v1 import health, health_pb2

from nardy.v1 import admin_pb2, arbiter_pb2, ladder_pb2  # noqa: F401 (reflection lists them)
from server import link
from server.config import ServerConfig, host_port
from server.edge.callers import TOO_FAST, Gate, networks, peer_address
from server.edge.calls import Calls, Core
from server.edge.limits import RateLimiter, StreamQuota, connection_quota
from server.edge.link import CoreLink
from server.edge.metrics import EdgeMetrics
from server.edge.peers import Peers
from server.edge.reflection import enable_reflection
from server.edge.services import ADMIN, ARBITER, LADDER, Services
from server.edge.web import WebView
from server.link import link_pb

log = logging.getLogger("nardy.edge")

RESTART_S = (0.2, 5.0)  # a core that keeps stopping is started again at most this often
PROBE_S = 1.0  # the core is asked this often whether it answers (Edge._probe_core)


class CoreRunner(Protocol):
    """Starts cores for an edge: each start returns the edge's end of a new link."""

    async def start(self, config: ServerConfig) -> socket.socket: ...
    async def wait(self) -> str:
        """Until the core last started has stopped; why (e.g. its exit status)."""
        ...

    def kill(self) -> bool:
        """Stop the core last started at once, if it can be (True): it is not answering."""
        ...


class CoreDidNotStart(RuntimeError):
    """The core stopped before it was ready (its log says why)."""


def credentials(config: ServerConfig) -> grpc.ServerCredentials | None:
    if not config.tls_cert and not config.tls_key:
        return None
    if not (config.tls_cert and config.tls_key):
        raise ValueError("TLS needs a certificate chain and its key (--tls CERT KEY)")
    with open(config.tls_key, "rb") as key, open(config.tls_cert, "rb") as cert:
        return grpc.ssl_server_credentials([(key.read(), cert.read())])


def held(gate: Gate):
    """Wraps a handler of another service (health, reflection) so that its calls count
    against their peer address's rate as ours do (each answer a stream sends, a request
    more for each KiB beyond its first), and each of its streams holds a place in the
    address's quota while it is open."""

    def key_of(context) -> str:
        return f"addr:{peer_address(context, gate.trusted)}"

    async def charged(context, key: str) -> None:
        if not gate.limiter.allow(key):
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_FAST)

    def wrap(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        if not handler.response_streaming:
            answer = handler.unary_unary

            async def counted(request, context):
                await charged(context, key_of(context))
                return await answer(request, context)

            return handler._replace(unary_unary=counted)
        kind = "stream_stream" if handler.request_streaming else "unary_stream"
        behaviour = getattr(handler, kind)

        async def place(context) -> str:
            key = key_of(context)
            if not gate.streams.take(key):
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, gate.streams.refusal(key))
            return key

        if inspect.isasyncgenfunction(behaviour):  # (reflection: an answer per request)

            async def holding(request, context):
                key = await place(context)
                try:
                    async for item in behaviour(request, context):
                        await charged(context, key)
                        gate.limiter.charge_answer(key, item.ByteSize())
                        yield item
                finally:
                    gate.streams.give_back(key)
        else:  # it writes with context.write (health's Watch: a change of status now and then)

            async def holding(request, context):
                key = await place(context)
                try:
                    return await behaviour(request, context)
                finally:
                    gate.streams.give_back(key)

        return handler._replace(**{kind: holding})

    return wrap


class Edge:
    """One arbiter's edge, on the running asyncio loop."""

    def __init__(self, config: ServerConfig, runner: CoreRunner) -> None:
        self.config = config
        self.runner = runner
        self.core = Core()
        self.metrics = EdgeMetrics()
        self.gate = Gate(
            RateLimiter(config.rate_per_s, config.rate_burst),
            StreamQuota(config.streams_per_caller, config.max_concurrent_rpcs * 3 // 4),
            networks(config.trusted_proxies),
        )
        self.calls = Calls(self.core, self.gate, self.metrics, config.heartbeat_s)
        self.peers = Peers(tls=bool(config.tls_cert)) if config.forward else None
        self.services = Services(self.calls, self.metrics, config.play_stream, self.peers)
        self.health = health.aio.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.web: WebView | None = None
        self.port = 0
        self.http_port: int | None = None
        self._stopping = False
        self._watch: asyncio.Task | None = None
        self._probe: asyncio.Task | None = None
        self.died: BaseException | None = None  # the core could not be started again

    async def start(self) -> int:
        """Bind, start the core, serve once it is ready; the bound port."""
        config = self.config
        server = self.server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.keepalive_time_ms", 20_000),
                ("grpc.keepalive_timeout_ms", 10_000),
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
                ("grpc.so_reuseport", 0),
                # No window growth past HTTP/2's 64 KiB per stream: with it, grpc took a
                # Play stream's requests into memory (hundreds of MiB) while the edge read
                # none (a reader that reads no answers, server.edge.services)
                ("grpc.http2.bdp_probe", 0),
                # Connections beyond it are closed at once (limits.connection_quota)
                ("grpc.max_allowed_incoming_connections", connection_quota()),
            ],
            maximum_concurrent_rpcs=config.max_concurrent_rpcs,
        )
        quiet_unsent_answers()
        for service, handlers in self.services.handlers().items():
            server.add_generic_rpc_handlers(
                (grpc.method_handlers_generic_handler(service, handlers),)
            )
            server.add_registered_method_handlers(service, handlers)
        hold = held(self.gate)
        health_handlers = {
            "Check": hold(
                grpc.unary_unary_rpc_method_handler(
                    self.health.Check,
                    request_deserializer=health_pb2.HealthCheckRequest.FromString,
                    response_serializer=health_pb2.HealthCheckResponse.SerializeToString,
                )
            ),
            "Watch": hold(
                grpc.unary_stream_rpc_method_handler(
                    self.health.Watch,
                    request_deserializer=health_pb2.HealthCheckRequest.FromString,
                    response_serializer=health_pb2.HealthCheckResponse.SerializeToString,
                )
            ),
        }
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(health.SERVICE_NAME, health_handlers),)
        )
        enable_reflection([ARBITER, LADDER, ADMIN, health.SERVICE_NAME], server, hold)
        address = host_port(config.host, config.port)
        creds = credentials(config)
        try:
            if creds is None:
                self.port = server.add_insecure_port(address)
            else:
                self.port = server.add_secure_port(address, creds)
        except RuntimeError:  # (grpc's "Failed to bind", with no reason)
            raise OSError(
                f"cannot listen on {address}: the port is in use, or the host is not an "
                "address of this machine"
            ) from None
        if not config.advertise:
            config.advertise = host_port(config.host, self.port)
        await self._start_core()
        await server.start()
        for name in ("", ARBITER, LADDER):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        if config.http_port is not None:
            self.web = WebView(
                self.core,
                self.metrics,
                calls=self.calls,
                trusted=self.gate.trusted,
                peers=self.peers,
            )
            self.http_port = await self.web.start(config.http_host or config.host, config.http_port)
            log.info(
                "web view on http://%s/", host_port(config.http_host or config.host, self.http_port)
            )
        self._watch = asyncio.create_task(self._keep_core())
        self._probe = asyncio.create_task(self._probe_core())
        instance = self.core.link.instance
        log.info(
            "serving nardy.v1 on %s tls=%s%s",
            host_port(config.host, self.port),
            "on" if creds else "off",
            f" instance={instance}" if instance else "",
        )
        return self.port

    async def _start_core(self) -> None:
        """A new core, connected and ready (CoreDidNotStart if it stops first)."""
        sock = await self.runner.start(self.config)
        link_ = CoreLink(tokens=self.gate)
        loop = asyncio.get_running_loop()
        await loop.connect_accepted_socket(lambda: link_, sock)
        self.core.link = link_
        ready = asyncio.create_task(link_.ready.wait())
        lost = asyncio.create_task(link_.lost.wait())
        await asyncio.wait((ready, lost), return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        lost.cancel()
        if not link_.ready.is_set():
            why = await self.runner.wait()
            raise CoreDidNotStart(f"the core stopped before it was ready ({why})")

    async def _keep_core(self) -> None:
        """Start the core again whenever it stops on its own."""
        pause = RESTART_S[0]
        while not self._stopping:
            await self.core.link.lost.wait()
            if self._stopping:
                return
            why = await self.runner.wait()
            log.error("the core stopped (%s); starting it again", why)
            self.metrics.core_restarts.inc()
            await self._serving(False)
            while not self._stopping:
                try:
                    await self._start_core()
                    break
                except (CoreDidNotStart, OSError) as e:
                    log.error("%s; trying again in %.1f s", e, pause)
                    await asyncio.sleep(pause)
                    pause = min(2 * pause, RESTART_S[1])
            else:
                return
            pause = RESTART_S[0]
            await self._serving(True)
            log.info("the core serves again")

    async def _probe_core(self) -> None:
        """Ask the core every PROBE_S whether it answers. One that has not answered for
        ``core_stall_s`` (stopped, or stuck) is said to be not serving, and logged; after
        ``core_kill_s`` it is killed, and started again from the journal (_keep_core)."""
        config, loop = self.config, asyncio.get_running_loop()
        while not self._stopping:
            link_ = self.core.link
            asked = loop.time()
            answer = link_.ping()
            stalled = killed = False
            while not answer.done() and not link_.lost.is_set() and not self._stopping:
                await asyncio.wait((answer,), timeout=PROBE_S)
                waited = loop.time() - asked
                if answer.done():
                    break
                if not stalled and waited >= config.core_stall_s:
                    stalled = True
                    log.error("the core has not answered for %.0f s", waited)
                    await self._serving(False)
                if not killed and waited >= config.core_kill_s and self.runner.kill():
                    killed = True
                    log.error("the core has not answered for %.0f s: killed", waited)
            if stalled and not link_.lost.is_set() and not self._stopping:
                log.warning("the core answers again")
                await self._serving(True)
            await asyncio.sleep(PROBE_S)

    async def _serving(self, serving: bool) -> None:
        """What the health service says of the arbiter's services."""
        answer = health_pb2.HealthCheckResponse
        status = answer.SERVING if serving else answer.NOT_SERVING
        for name in ("", ARBITER, LADDER):
            await self.health.set(name, status)

    async def stop(self) -> None:
        """Stop gracefully: streams end with SERVER_SHUTDOWN, calls in flight get
        ``grace_s``, then the core commits what it accepted and stops."""
        self._stopping = True
        await self.health.enter_graceful_shutdown()  # NOT_SERVING first
        link_ = self.core.link
        if link_.ready.is_set() and not link_.lost.is_set():
            try:  # (a core that does not answer is not waited for: killed)
                await asyncio.wait_for(
                    link_.call(link.SHUTDOWN, b"", link_pb.Caller()), self.config.core_kill_s
                )
            except TimeoutError:
                log.error("the core did not stop within %.0f s: killed", self.config.core_kill_s)
                self.runner.kill()
        if self.web is not None:
            await self.web.stop()
        if self.server is not None:
            await self.server.stop(self.config.grace_s)
        link_.close()
        await self.runner.wait()
        if self.peers is not None:
            await self.peers.close()
        for task in (self._watch, self._probe):
            if task is not None:
                task.cancel()


UNSENT = "ExecuteBatchError raised in core by servicer method"


def quiet_unsent_answers() -> None:
    """gRPC logs an answer it could not send (its client went away, or reads nothing) as
    an error with its traceback: a client's doing, anyone's, as often as they like. It is
    one line at debug level here."""
    logger = logging.getLogger("grpc._cython.cygrpc")
    if _unsent not in logger.filters:
        logger.addFilter(_unsent)


def _unsent(record: logging.LogRecord) -> bool:
    text = record.getMessage()
    if text.startswith(UNSENT):
        record.msg, record.args = (
            "an answer not sent: its client went away %s",
            (text[len(UNSENT) :],),
        )
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.exc_info = record.exc_text = None
    return True
