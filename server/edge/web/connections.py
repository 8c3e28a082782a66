"""The web view's connections: at most ``most`` at once, at most ``per_address`` from one
address (an IPv6 one by its /64; a trusted reverse proxy's are counted in ``most`` only);
a connection beyond either is closed as it opens.

A connection must send a whole request's headers within :data:`REQUEST_WITHIN` seconds of
opening or of its last answer (aiohttp's keep-alive timeout, which also closes a connection
whose request has begun but not ended), and a request its body within as long
(server.edge.web.api): a client that sends them a line at a time, or never finishes them,
is closed. Until then it holds its connection and descriptor; these caps bound what such
clients hold: one address cannot take the web view from the others, and all of them
together cannot take the descriptors the gRPC port, the link to the core and a new core need
(server.edge.limits.connection_quota)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable

from aiohttp.http_exceptions import HttpProcessingError

from server.edge.callers import Networks, address_of, within

PER_ADDRESS = 32  # a browser opens six at most, and a few streams (a game, your games)
REQUEST_WITHIN = 10.0  # seconds: a browser sends a request's headers and body at once


class Connections:
    """The connections open now, in all and per address."""

    def __init__(self, most: int, per_address: int = PER_ADDRESS, trusted: Networks = ()) -> None:
        self.most = most
        self.per_address = per_address
        self.trusted = trusted  # reverse proxies: all their clients come from their address
        self.open: Counter[str] = Counter()
        self.total = 0

    def admit(self, host: str) -> str | None:
        """Count a connection from ``host``: the address it is counted under, or None if
        it is over a cap."""
        address = address_of(host)
        if self.total >= self.most:
            return None
        if self.open[address] >= self.per_address and not within(host, self.trusted):
            return None
        self.open[address] += 1
        self.total += 1
        return address

    def release(self, address: str) -> None:
        self.total -= 1
        self.open[address] -= 1
        if not self.open[address]:
            del self.open[address]

    def factory(self, protocol: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """``protocol`` (aiohttp's server, a protocol factory) behind these caps."""
        return lambda: _Counted(protocol(), self)


class _Counted(asyncio.Protocol):
    """A connection's protocol, counted while it is open; one over the caps is closed."""

    def __init__(self, inner: asyncio.Protocol, connections: Connections) -> None:
        self.inner = inner
        self.connections = connections
        self.address: str | None = None  # (None: not admitted)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        address = self.connections.admit(peer[0] if peer else "?")
        if address is None:
            transport.abort()
            return
        self.address = address
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.address is not None:
            self.connections.release(self.address)
            self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def protocol_log() -> logging.Logger:
    """The logger of the web view's HTTP protocol (aiohttp's ``logger``). A request that is
    not HTTP (a line too long, a header malformed) is a client's fault, and anyone may send
    one as fast as they can connect: it is logged in one line at debug level, not as an
    error with its traceback (megabytes a second). Everything else is logged as it comes."""
    logger = logging.getLogger("nardy.web.http")
    if not logger.filters:
        logger.addFilter(_not_http)
    return logger


def _not_http(record: logging.LogRecord) -> bool:
    exc = record.exc_info[1] if record.exc_info else None
    if not isinstance(exc, HttpProcessingError):
        return True
    record.msg = "not an HTTP request from a client: %s (%s)"
    record.args = (type(exc).__name__, " ".join(str(exc.message).split())[:200])
    record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    record.exc_info = record.exc_text = None
    return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
