"""The bridge: the only place where the grpc.aio transport (asyncio) meets the trio core.

The trio core runs in the process's main thread. grpc.aio runs on an asyncio loop in one
thread of its own (``Transport``), so an open stream costs a coroutine and a queue, not an
OS thread (measurements: ../shared/notes/grpc-trio.md, and the README's performance
section). Crossing is by callbacks only:

* asyncio -> trio: :meth:`Bridge.call` schedules a core function with
  ``TrioToken.run_sync_soon`` (a coroutine function runs as a task of its own in the
  bridge's nursery, e.g. a play waiting for its commit) and awaits an asyncio future that
  the trio thread resolves (see below);
* trio -> asyncio: a :class:`QueueSink` puts events on its stream's ``asyncio.Queue``,
  encoded for the wire in the trio thread when the stream gave it an encoder (an
  :class:`Encoded` message: the transport's thread only writes it). Replies and events
  cross in batches, one ``loop.call_soon_threadsafe`` per trio batch (:class:`Handover`).

Neither side ever blocks waiting for the other. The transport's thread is where plays are
stamped on arrival (server.clock), so work is kept out of it: whatever it is late with is
charged to somebody's clock, whatever the trio thread is late with is not. For the same
reason plays are accepted several at a time (:class:`AcceptAhead`), the core gives way to
a busy transport (:class:`TransportFirst`), and the transport's lateness is measured for
pacing new turns (:func:`watch_lag`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import selectors
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import trio

from server.errors import ArbiterError, Code

log = logging.getLogger("nardy.server")

# A stream whose reader lags this many messages behind is ended (it can resume by seq).
MAX_BACKLOG = 10_000
CLOSE = object()  # queue sentinel: the stream is over
SHUTTING_DOWN = "the server is shutting down"


class Handover:
    """Callbacks for the transport's loop, queued in the trio thread and handed over in
    one ``call_soon_threadsafe`` per trio batch: the transport's thread is woken once,
    after the core's work on a turn (its reply and the events it tells), instead of once
    per message, and does not take the GIL from the core in between. The hand-over is
    :meth:`run`, a task woken within the trio thread (no wake-up socket, unlike
    ``run_sync_soon``), so it runs in the batch after the one that queued the calls."""

    def __init__(self) -> None:
        self._pending: dict[asyncio.AbstractEventLoop, list] = {}
        self._due = trio.Event()

    def call(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on ``loop`` soon (call in the trio thread only)."""
        batch = self._pending.get(loop)
        if batch is None:
            batch = self._pending[loop] = []
            self._due.set()
        batch.append((fn, args))

    async def run(self) -> None:
        while True:
            await self._due.wait()
            self._due = trio.Event()
            pending, self._pending = self._pending, {}
            for loop, batch in pending.items():
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(_run_batch, batch)


def _run_batch(batch: list) -> None:
    for fn, args in batch:
        try:
            fn(*args)
        except Exception:  # one failed delivery must not lose the others
            log.exception("delivering %s failed", getattr(fn, "__name__", fn))


def _settle(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        if isinstance(error, StopIteration):  # a Future refuses it and would never settle
            error = RuntimeError(f"StopIteration in the core: {error!r}")
        fut.set_exception(error)
    else:
        fut.set_result(result)


class Bridge:
    """Runs core functions in the trio thread on behalf of asyncio coroutines."""

    def __init__(self, token: trio.lowlevel.TrioToken, nursery: trio.Nursery) -> None:
        self.token = token
        self.nursery = nursery  # where coroutine calls run, and the hand-over
        self.handover = Handover()
        nursery.start_soon(self.handover.run)

    def sink(self, queue: asyncio.Queue) -> QueueSink:
        """A subscription's sink onto ``queue`` (of the running loop: the transport's)."""
        return QueueSink(self.handover, asyncio.get_running_loop(), queue)

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` in the trio thread and return (or raise) its outcome; a
        coroutine function runs as a trio task (it goes on if the caller goes away)."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        async def task() -> None:
            try:
                result = await fn(*args)
            except trio.Cancelled:
                self._resolve(loop, fut, None, ArbiterError(Code.UNAVAILABLE, SHUTTING_DOWN))
                raise
            except BaseException as e:  # handed to the caller, never lost
                self._resolve(loop, fut, None, e)
            else:
                self._resolve(loop, fut, result, None)

        def run() -> None:
            try:
                result = fn(*args)
            except BaseException as e:  # handed to the caller, never lost
                self._resolve(loop, fut, None, e)
            else:
                self._resolve(loop, fut, result, None)

        def spawn() -> None:
            try:
                self.nursery.start_soon(task)
            except RuntimeError:  # the nursery is closing
                self._resolve(loop, fut, None, ArbiterError(Code.UNAVAILABLE, SHUTTING_DOWN))

        if inspect.iscoroutinefunction(fn):
            self._schedule(spawn)
        else:
            self._schedule(run)
        return await fut

    def _resolve(
        self, loop: asyncio.AbstractEventLoop, fut: asyncio.Future, result: Any, error: Any
    ) -> None:
        self.handover.call(loop, _settle, fut, result, error)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` in the trio thread without waiting (cleanup after a stream)."""
        with contextlib.suppress(ArbiterError):  # the core is gone: nothing to clean up
            self._schedule(lambda: fn(*args))

    def _schedule(self, fn: Callable[[], None]) -> None:
        try:
            self.token.run_sync_soon(fn)
        except trio.RunFinishedError:
            raise ArbiterError(Code.UNAVAILABLE, SHUTTING_DOWN) from None


class Encoded:
    """A response message already serialized (in the trio thread), for a method whose
    serializer :func:`pass_encoded` wraps. ``sent`` (if set) is called as its bytes are
    handed to the transport: in the serializer, just before grpc starts the write."""

    __slots__ = ("data", "seq", "turn", "sent")

    def __init__(self, data: bytes, seq: int = 0, turn: int | None = None) -> None:
        self.data = data
        self.seq = seq
        self.turn = turn  # the turn this message offers its reader, if any
        self.sent: Callable[[], None] | None = None


def _passing(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    def serializer(message: Any) -> bytes:
        if type(message) is Encoded:
            if message.sent is not None:
                message.sent()
            return message.data
        return serialize(message)

    return serializer


def pass_encoded(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """``handler`` answering with :class:`Encoded` messages as well as protobufs."""
    if handler.response_serializer is None:
        return handler
    return handler._replace(response_serializer=_passing(handler.response_serializer))


class QueueSink:
    """A subscription seen from the core: events go to an asyncio queue across threads,
    through ``encode`` (called in the trio thread) once the stream has set one."""

    def __init__(
        self, handover: Handover, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue
    ) -> None:
        self.handover = handover
        self.loop = loop
        self.queue = queue
        self.closed = False
        self.encode: Callable[[Any], Any] | None = None

    def send(self, item: Any) -> None:
        if not self.closed:
            self._put(item if self.encode is None else self.encode(item))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._put(CLOSE)

    def _put(self, item: Any) -> None:
        self.handover.call(self.loop, _deliver, self.queue, item)


def _deliver(queue: asyncio.Queue, item: Any) -> None:
    if queue.qsize() >= MAX_BACKLOG and item is not CLOSE:
        log.warning("a subscriber fell %d messages behind; ending its stream", MAX_BACKLOG)
        item = CLOSE
    queue.put_nowait(item)


async def watch_lag(pace, bridge: Bridge, every: float = 0.005) -> None:
    """On the transport's loop: how late a short timer fires, for :class:`server.clock.Pace`
    (told in the trio thread while it holds turns back)."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(every)
        pace.lag = lag = loop.time() - start - every
        if pace.holding:
            bridge.call_soon(pace.tick, lag)


class TransportFirst(trio.abc.Instrument):
    """The trio thread gives way to a busy transport (``nardy serve --transport-first-ms``).

    Both threads share one GIL, and under saturation each gets about half of it: the
    transport's loop falls behind, and a play waits in it, unstamped, behind the messages
    of other games, charged to its side. With this instrument the core waits (GIL released)
    before each task step while the transport's loop has work ready, until the loop waits
    for I/O again (:class:`IdleSelector` tells): the backlog forms in the core, where a play
    is already stamped, instead of in the transport. It waits at most ``most`` seconds at a
    time; after a wait that ran out, the core runs ``most`` seconds without waiting, so a
    transport that never idles (a flood of calls) still leaves the core its share.
    """

    def __init__(self, most: float) -> None:
        self.most = most
        self.idle = threading.Event()  # set by the transport's thread while it waits for I/O
        self.idle.set()  # (no loop yet: nothing to give way to)
        self._free_until = 0.0

    def before_task_step(self, task) -> None:
        if self.idle.is_set() or time.perf_counter() < self._free_until:
            return
        if not self.idle.wait(self.most):
            self._free_until = time.perf_counter() + self.most


class IdleSelector(selectors.DefaultSelector):
    """The transport loop's selector: ``idle`` is set while the loop blocks waiting for I/O
    (nothing ready to run), clear while it runs callbacks."""

    def __init__(self, idle: threading.Event) -> None:
        super().__init__()
        self._idle = idle

    def select(self, timeout: float | None = None):
        if timeout is not None and timeout <= 0:  # callbacks are ready: the loop is busy
            return super().select(timeout)
        self._idle.set()
        try:
            return super().select(timeout)
        finally:
            self._idle.clear()


class Transport:
    """The grpc.aio server on an asyncio loop in its own thread (with ``idle``: the loop
    reports it while it waits for I/O, see :class:`TransportFirst`)."""

    def __init__(
        self,
        setup: Callable[[asyncio.AbstractEventLoop], Awaitable[int]],
        shutdown: Callable[[float], Awaitable[None]],
        idle: threading.Event | None = None,
    ) -> None:
        self._setup = setup
        self._shutdown = shutdown
        self._idle = idle
        self._ready = threading.Event()
        self._port = 0
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._grace = 1.0
        self._thread = threading.Thread(target=self._main, name="grpc-asyncio", daemon=True)

    def start(self) -> int:
        """Start the thread and wait until the server is bound; return its port."""
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self._port

    def stop(self, grace: float = 1.0) -> None:
        """Stop serving (in-flight calls get ``grace`` seconds) and join the thread."""
        if self._loop is not None and self._stop is not None:
            self._grace = grace
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()

    def _main(self) -> None:
        idle = self._idle
        factory = None if idle is None else lambda: asyncio.SelectorEventLoop(IdleSelector(idle))
        try:
            with asyncio.Runner(loop_factory=factory) as runner:
                runner.run(self._serve())
        finally:
            if idle is not None:
                idle.set()  # no loop any more: nothing to give way to

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            self._port = await self._setup(self._loop)
        except BaseException as e:
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await self._shutdown(self._grace)


class Registry:
    """Stands in for the grpc.aio server while services are added: their method handlers
    are wrapped (``wrap``) once, as they are registered, and kept (for
    :class:`AcceptAhead`). A service's generic handler (which grpc's generated code adds
    first, from the same unwrapped handlers) is replaced by one of the wrapped handlers;
    :meth:`close` passes on those of services that registered none."""

    def __init__(
        self,
        server: grpc.aio.Server,
        wrap: Callable[[grpc.RpcMethodHandler], grpc.RpcMethodHandler],
    ) -> None:
        self.server = server
        self.wrap = wrap
        self.handlers: dict[str, grpc.RpcMethodHandler] = {}
        self._generic: list = []

    def add_generic_rpc_handlers(self, handlers) -> None:
        self._generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict) -> None:
        wrapped = {name: self.wrap(handler) for name, handler in handlers.items()}
        self._generic = [
            h
            for h in self._generic
            if not (isinstance(h, grpc.ServiceRpcHandler) and h.service_name() == service)
        ]
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, wrapped),)
        )
        self.server.add_registered_method_handlers(service, wrapped)
        for name, handler in wrapped.items():
            self.handlers[f"/{service}/{name}"] = handler

    def close(self) -> None:
        self.server.add_generic_rpc_handlers(tuple(self._generic))
        self._generic = []


class _Resolver:
    def __init__(self, handler: grpc.RpcMethodHandler) -> None:
        self.handler = handler

    def resolve_handler(self, details) -> grpc.RpcMethodHandler:
        return self.handler


# grpc.aio's internals that AcceptAhead drives: the arguments as in grpcio 1.85
_INTERNALS = {
    "_handle_rpc": (
        "method_name",
        "method_resolver",
        "interceptors",
        "rpc_state",
        "loop",
        "concurrency_exceeded",
    ),
    "_schedule_rpc_coro": ("rpc_coro", "rpc_state", "loop", "method_name"),
}


def _internals_as_known(core, cygrpc) -> bool:
    if not hasattr(core, "_request_registered_call"):
        return False
    for name, args in _INTERNALS.items():
        code = getattr(getattr(cygrpc, name, None), "__code__", None)
        if code is None or code.co_varnames[: code.co_argcount] != args:
            return False
    return True


class AcceptAhead:
    """Keeps ``count`` more calls of one method requested from grpc's core, besides the
    one grpc.aio's own accept loop keeps: that many calls are accepted at once.

    grpc.aio asks its core for the next call of a registered method only once the
    previous one has been accepted, a few loop iterations later; under load, plays queue
    in the core before Python sees them, and their arrival is stamped late. At most
    ``most`` calls accepted here run at a time (grpc.aio's ``maximum_concurrent_rpcs``
    does not see them). This uses grpc.aio's internals (``grpc._cython.cygrpc``, as in
    grpcio 1.85); if they are not there it does nothing and says so in the log.
    """

    def __init__(self, server: grpc.aio.Server, method: str, handler, most: int) -> None:
        self.server = server
        self.method = method
        self.handler = handler
        self.room = asyncio.Semaphore(most)
        self.tasks: list[asyncio.Task] = []
        self.calls: set[asyncio.Task] = set()  # asyncio holds tasks only weakly

    def start(self, count: int) -> None:
        from grpc._cython import cygrpc

        core = getattr(self.server, "_server", None)
        if count and not _internals_as_known(core, cygrpc):
            log.warning("grpc.aio internals not as known: plays are accepted one at a time")
            return
        loop = asyncio.get_running_loop()
        for _ in range(count):
            self.tasks.append(loop.create_task(self._accept(core, cygrpc, loop)))

    async def _accept(self, core, cygrpc, loop) -> None:
        resolver = _Resolver(self.handler)
        name = self.method.encode()
        while core.is_running():
            await self.room.acquire()
            try:
                state = await core._request_registered_call(name)
            except Exception:  # the server is shutting down
                self.room.release()
                return
            rpc = cygrpc._handle_rpc(self.method, resolver, (), state, loop, False)
            call = loop.create_task(cygrpc._schedule_rpc_coro(rpc, state, loop, self.method))
            self.calls.add(call)
            call.add_done_callback(self._done)

    def _done(self, call: asyncio.Task) -> None:
        self.calls.discard(call)
        self.room.release()

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
