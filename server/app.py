"""Running an arbiter: ``nardy serve`` (the edge in this process, the core in a process of
its own) and :class:`EmbeddedServer` (both in threads of this process, for tests, the
terminal client, the ladder runner and the compliance checker). Both run the same code:
an edge (server.edge) and a core (server.core) on the two ends of a link.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from functools import partial

import trio

from server.collector import FrozenGenerations
from server.config import ServerConfig, host_port
from server.core.main import open_store, run
from server.core.principals import new_token
from server.core.store import SQLStore
from server.edge.main import CoreDidNotStart, Edge

log = logging.getLogger("nardy.server")

__all__ = ["CoreDidNotStart", "EmbeddedServer", "ServerConfig", "run_forever", "unwrap"]


class CoreProcess:
    """Each core a process of its own (``python -m server.core``), on a socket pair."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, config: ServerConfig) -> socket.socket:
        mine, theirs = socket.socketpair()
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",  # the installed server, never a `server` of the working directory
                "-m",
                "server.core",
                str(theirs.fileno()),
                stdin=subprocess.PIPE,
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        assert self.process.stdin is not None
        self.process.stdin.write(config.to_json().encode() + b"\n")  # (it may hold a token)
        await self.process.stdin.drain()
        self.process.stdin.close()
        return mine

    async def wait(self) -> str:
        if self.process is None:
            return "not started"
        code = await self.process.wait()
        return f"exit status {code}"

    def kill(self) -> bool:
        if self.process is None or self.process.returncode is not None:
            return False
        self.process.kill()
        return True


class CoreThread:
    """Each core on trio in a thread of this process, on a socket pair."""

    def __init__(self, store_factory: Callable[[str], SQLStore] = open_store) -> None:
        self.store_factory = store_factory
        self.arbiter = None
        # set once ``arbiter`` is the serving core's (or the core has stopped): the link says
        # it is ready a step before the core's thread gets to publish it
        self.published = threading.Event()
        self.token: trio.lowlevel.TrioToken | None = None
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    async def start(self, config: ServerConfig) -> socket.socket:
        mine, theirs = socket.socketpair()
        self.published.clear()
        self._thread = threading.Thread(
            target=self._main, args=(config, theirs), name="arbiter-core", daemon=True
        )
        self._thread.start()
        return mine

    def _main(self, config: ServerConfig, sock: socket.socket) -> None:
        async def main() -> None:
            self.token = trio.lowlevel.current_trio_token()
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
            async with trio.open_nursery() as nursery:
                self.arbiter = await nursery.start(
                    partial(run, config, stream, store_factory=self.store_factory)
                )
                self.published.set()

        try:
            trio.run(main)
        except BaseException as e:
            self.error = unwrap(e)
            log.error("the core stopped: %r", self.error, exc_info=self.error)
        finally:
            self.published.set()
            sock.close()  # the edge sees the link end

    async def wait(self) -> str:
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        return "it failed" if self.error is not None else "it stopped"

    def kill(self) -> bool:
        return False  # (a thread cannot be killed: only said to be not serving)


def unwrap(error: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, for a readable report."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def run_forever(config: ServerConfig) -> None:
    """``nardy serve``: serve until SIGINT or SIGTERM, then shut down gracefully."""

    FrozenGenerations().install()

    async def main() -> None:
        edge = Edge(config, CoreProcess())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await edge.start()
        except BaseException:  # (the web view's port taken, ...): what started stops
            await edge.stop()
            raise
        await stop.wait()
        log.info("shutting down")
        await edge.stop()

    asyncio.run(main())


class EmbeddedServer:
    """An arbiter in background threads of this process, on an ephemeral loopback port.

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
        self.admin_token: str = options["admin_token"]
        self.runner = CoreThread(store_factory)
        self.port = 0
        self.http_port: int | None = None  # with http_port=0 in the options: the bound port
        self.edge: Edge | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="arbiter-edge", daemon=True)

    @property
    def address(self) -> str:
        return host_port(self.config.host, self.port)

    @property
    def http_url(self) -> str:
        """The web view's base URL (when started with ``http_port``)."""
        return f"http://{host_port(self.config.http_host or self.config.host, self.http_port)}"

    @property
    def arbiter(self):
        """The core's arbiter (read it in the core's thread only: :meth:`call`)."""
        return self.runner.arbiter

    def start(self) -> EmbeddedServer:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        self.runner.published.wait()  # (``arbiter`` is readable from here on)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # (the loop is closed already)
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()

    def call(self, fn, *args):
        """Run ``fn(*args)`` in the core's trio thread (operator tasks, e.g. reissue_token)."""
        token = self.runner.token
        if inspect.iscoroutinefunction(fn):
            return trio.from_thread.run(fn, *args, trio_token=token)
        return trio.from_thread.run_sync(fn, *args, trio_token=token)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self.edge = Edge(self.config, self.runner)
            try:
                self.port = await self.edge.start()
            except BaseException:
                await self.edge.stop()
                raise
            self.http_port = self.edge.http_port
            self._ready.set()
            await self._stop.wait()
            await self.edge.stop()

        try:
            asyncio.run(main())
        except BaseException as e:
            self._error = self.runner.error or unwrap(e)
            if self._ready.is_set():  # it was serving: say why it stopped
                log.error("embedded arbiter stopped: %r", self._error, exc_info=self._error)
        finally:
            self._ready.set()
