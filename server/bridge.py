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
stamped on arrival (server.core.clock), so work is kept out of it: whatever it is late with is
charged to somebody's clock, whatever the trio thread is late with is not. For the same
reason plays are accepted several at a time (:class:`AcceptAhead`), the core gives way to
a busy transport (:class:`TransportFirst`), and the transport's lateness is measured for
pacing new turns (:func:`watch_lag`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
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


class Handover(trio.abc.Instrument):
    """Callbacks for the transport's loop, queued in the trio thread and handed over in
    one ``call_soon_threadsafe`` per trio batch: the transport's thread is woken once,
    after the core's work on a turn (its reply and the events it tells), instead of once
    per message, and does not take the GIL from the core in between. The hand-over is at
    the end of the batch that queued them (``before_io_wait``: an instrument while
    :meth:`run` runs)."""

    def __init__(self) -> None:
        self._pending: dict[asyncio.AbstractEventLoop, list] = {}

    def call(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on ``loop`` soon (call in the trio thread only)."""
        batch = self._pending.get(loop)
        if batch is None:
            batch = self._pending[loop] = []
        batch.append((fn, args))

    def before_io_wait(self, timeout: float) -> None:
        if self._pending:
            pending, self._pending = self._pending, {}
            for loop, batch in pending.items():
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(_run_batch, batch)

    async def run(self) -> None:
        trio.lowlevel.add_instrument(self)
        try:
            await trio.sleep_forever()
        finally:
            with contextlib.suppress(KeyError):  # (trio drops an instrument that failed)
                trio.lowlevel.remove_instrument(self)
            self.before_io_wait(0)  # what the last batch queued


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


class Admission(trio.abc.Instrument):
    """Starts the transport's coroutine calls (plays, new games, subscriptions) as trio
    tasks, at most ``per_batch`` of them in one trio batch while a deadline is due within
    ``horizon`` seconds (``per_batch`` 0: all at once, always).

    trio checks deadlines between batches only, and runs every task woken by then in the
    next: under saturation (a hundred games playing flat out) a batch holds every play
    that came in since the last, tens to hundreds of ms of work, and a clock that runs out
    meanwhile is acted on that much late. While a deadline is near, calls beyond
    ``per_batch`` wait here, first come first served, and start in the batches after
    (:meth:`run`): a batch stays short, and the deadline is acted on within about two of
    them. With no deadline near nothing waits, so a server whose clocks are far from
    running out pays nothing for this. Plays are stamped on arrival (server.core.clock), so the
    wait costs their sides nothing. (An instrument while :meth:`run` runs: it learns of each
    new batch from ``after_io_wait``.)"""

    def __init__(self, nursery: trio.Nursery, per_batch: int, horizon: float = 0.1) -> None:
        self.nursery = nursery
        self.per_batch = per_batch
        self.horizon = horizon
        self.started = 0  # in the current batch
        self._near: bool | None = None  # a deadline within the horizon (None: not looked)
        self.waiting: collections.deque[Callable[[], None]] = collections.deque()
        self._due = trio.Event()

    def after_io_wait(self, timeout: float) -> None:
        self.started, self._near = 0, None  # a new batch

    def _room(self) -> bool:
        """Whether one more call may start in this batch."""
        if self.started < self.per_batch:
            return True
        if self._near is None:
            stats = trio.lowlevel.current_statistics()
            self._near = stats.seconds_to_next_deadline <= self.horizon
        return not self._near

    def start(self, spawn: Callable[[], None]) -> None:
        """Run ``spawn`` (it starts a task in :attr:`nursery`) now or in a later batch."""
        if not self.per_batch or (not self.waiting and self._room()):
            self.started += 1
            spawn()
            return
        self.waiting.append(spawn)
        self._due.set()

    async def run(self) -> None:
        if self.per_batch:
            trio.lowlevel.add_instrument(self)
        try:
            while True:
                await self._due.wait()
                self._due = trio.Event()
                while self.waiting:
                    while self.waiting and self._room():
                        self.started += 1
                        self.waiting.popleft()()
                    await trio.lowlevel.cancel_shielded_checkpoint()  # the next batch
        finally:  # (the core is stopping: each is started or refused, none is lost)
            if self.per_batch:
                with contextlib.suppress(KeyError):  # (trio drops an instrument that failed)
                    trio.lowlevel.remove_instrument(self)
            while self.waiting:
                self.waiting.popleft()()


class Bridge:
    """Runs core functions in the trio thread on behalf of asyncio coroutines (coroutine
    functions through an :class:`Admission` of ``per_batch``)."""

    def __init__(
        self, token: trio.lowlevel.TrioToken, nursery: trio.Nursery, per_batch: int = 0
    ) -> None:
        self.token = token
        self.nursery = nursery  # where coroutine calls run, and the hand-over
        self.handover = Handover()
        self.admission = Admission(nursery, per_batch)
        nursery.start_soon(self.handover.run)
        nursery.start_soon(self.admission.run)

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
            self._schedule(lambda: self.admission.start(spawn))
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
    """On the transport's loop: how late a short timer fires, for :class:`server.core.clock.Pace`
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


class DrainFirst(asyncio.SelectorEventLoop):
    """An event loop that runs I/O callbacks ahead of the callbacks already waiting, and
    looks for I/O at least every ``BATCH`` callbacks.

    grpc.aio learns of everything (calls, requests, messages) from one socket that its
    poller thread writes to and the loop drains (``PollerCompletionQueue._handle_events``);
    a plain loop runs that drain after all the callbacks ready before it, and runs all of
    those before it looks again: under load an iteration of 200-250 other games' calls and
    messages, 10-18 ms. Here the drain runs first, and an iteration runs at most ``BATCH``
    of the callbacks waiting (the others stay first in line for the next), so what the
    drain does at once (:class:`AcceptAhead`'s stamps) waits for at most that many."""

    BATCH = 32

    def _add_callback(self, handle: asyncio.Handle) -> None:
        if not handle._cancelled:
            self._ready.appendleft(handle)

    def _run_once(self) -> None:
        ready = self._ready
        if len(ready) <= self.BATCH:
            super()._run_once()
            return
        rest = [ready.pop() for _ in range(len(ready) - self.BATCH)]  # (last first)
        try:
            super()._run_once()  # (callbacks ready: I/O is polled without waiting)
        finally:
            self._ready.extendleft(rest)  # ahead of those queued meanwhile, in order


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

        def factory() -> DrainFirst:
            return DrainFirst(None if idle is None else IdleSelector(idle))

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


# grpc.aio's internals that AcceptAhead drives: the arguments as in grpcio 1.85
_INTERNALS = {
    "_receive_message": ("grpc_call_wrapper", "loop"),
    "_finish_handler_with_unary_response": (
        "rpc_state",
        "unary_handler",
        "request",
        "servicer_context",
        "response_serializer",
        "loop",
    ),
    "_schedule_rpc_coro": ("rpc_coro", "rpc_state", "loop", "method_name"),
}

# When the request of the call being handled was received (on AcceptAhead's clock), for a
# call that AcceptAhead accepted; read by the handler (:func:`received`).
_RECEIVED: contextvars.ContextVar[float | None] = contextvars.ContextVar("received", default=None)


def received() -> float | None:
    """When AcceptAhead received the request of the call being handled (None: the call was
    not accepted by an AcceptAhead)."""
    return _RECEIVED.get()


def _internals_as_known(core, cygrpc) -> bool:
    if not hasattr(core, "_request_registered_call") or not hasattr(cygrpc, "_ServicerContext"):
        return False
    for name, args in _INTERNALS.items():
        code = getattr(getattr(cygrpc, name, None), "__code__", None)
        if code is None or code.co_varnames[: code.co_argcount] != args:
            return False
    return True


class _Then(asyncio.Future):
    """A future that calls ``then()`` as soon as it is done, from the callback that sets it
    (for grpc.aio's futures: the drain of grpc's completion queue), not a loop iteration
    later as done callbacks and awaiting tasks do."""

    def __init__(self, loop: asyncio.AbstractEventLoop, then: Callable[[], None]) -> None:
        super().__init__(loop=loop)
        self._then = then

    def set_result(self, result) -> None:
        super().set_result(result)
        self._then()

    def set_exception(self, exception) -> None:
        super().set_exception(exception)
        self._then()


class _Drive:
    """Runs ``coro``, one of grpc.aio's internal coroutines (which wait on futures made by
    ``loop.create_future``), stepping it on as soon as what it waits for is done (no task:
    see :class:`_Then`); ``done(value, error)`` once it returns or raises. (A class, not a
    closure stepping itself: that would be a reference cycle per call for the collector.)"""

    __slots__ = ("loop", "coro", "done")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        coro,
        done: Callable[[Any, BaseException | None], None],
    ) -> None:
        self.loop, self.coro, self.done = loop, coro, done
        self.step()

    def _future(self) -> _Then:
        return _Then(self.loop, self.step)

    def step(self) -> None:
        self.loop.create_future = self._future  # (for this step only)
        try:
            waited = self.coro.send(None)
        except StopIteration as stop:
            outcome = (stop.value, None)
        except BaseException as error:  # (reported to ``done``)
            outcome = (None, error)
        else:
            outcome = None
        finally:
            del self.loop.create_future
        if outcome is not None:
            self.done(*outcome)
        elif not isinstance(waited, _Then):  # not made here: stepped an iteration later
            waited.add_done_callback(lambda _: self.step())


class AcceptAhead:
    """Keeps ``count`` calls of one unary method requested from grpc's core, besides the one
    grpc.aio's own accept loop keeps, and stamps each call's request as it is received
    (:func:`received`, on ``clock``), before the handler runs.

    grpc.aio asks its core for the next call of a registered method only once the
    previous one has been accepted, a few loop iterations later, so under load plays
    queue in grpc's core before Python sees them. Then it takes three more iterations
    (two tasks created one after the other) before it asks for the call's request, and
    one more after the request is there before the handler runs: each a full pass over
    whatever else the loop has ready (under load, a hundred other calls and messages).
    Here everything up to the stamp runs in the callback that drains grpc's completion
    queue, as soon as each step is done (:class:`_Drive`): a call accepted is replaced by
    a new request and its request asked for at once, and the request is stamped as it
    is drained; the call is then handled as grpc.aio would, in a task. A caller that never
    sends its request holds up nobody else.

    At most ``most`` calls accepted here run at a time (grpc.aio's
    ``maximum_concurrent_rpcs`` does not see them). This uses grpc.aio's internals
    (``grpc._cython.cygrpc``, as in grpcio 1.85); if they are not there it does nothing
    and says so in the log (handlers then stamp on their own).
    """

    def __init__(
        self,
        server: grpc.aio.Server,
        method: str,
        handler: grpc.RpcMethodHandler,
        most: int,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.server = server
        self.method = method
        self.handler = handler
        self.most = most
        self.clock = clock
        self.count = 0  # calls to keep requested
        self.asked = 0  # requested, not yet accepted
        self.receiving = 0  # accepted, their request not yet received
        self.calls: set[asyncio.Task] = set()  # received, being handled
        self.stopped = False

    def start(self, count: int) -> None:
        from grpc._cython import cygrpc

        core = getattr(self.server, "_server", None)
        if count and not _internals_as_known(core, cygrpc):
            log.warning("grpc.aio internals not as known: plays are accepted one at a time")
            return
        self.core, self.cygrpc = core, cygrpc
        self.loop = asyncio.get_running_loop()
        self.count = count
        for _ in range(count):
            self._ask()

    def _ask(self) -> bool:
        """Ask grpc's core for one more call (False: the server is stopping)."""
        if self.stopped or not self.core.is_running():
            return False
        self.asked += 1
        _Drive(self.loop, self.core._request_registered_call(self.method.encode()), self._accepted)
        return True

    def _accepted(self, state, error: BaseException | None) -> None:
        """(In the completion queue's drain.) A call: ask for the next, and its request."""
        self.asked -= 1
        if error is not None:  # the server is shutting down
            return
        self.receiving += 1
        try:
            if self._running() + self.asked < self.most:
                self._ask()
            receive = self.cygrpc._receive_message(state, self.loop)
            _Drive(self.loop, receive, lambda request, _: self._received(state, request))
        except Exception:
            log.exception("accepting a %s call", self.method)

    def _received(self, state, request: bytes | None) -> None:
        """(Likewise.) Its request, stamped now (None: the caller left first); handled as
        grpc.aio would, in a task (cancellation from the caller, errors, the call freed)."""
        self.receiving -= 1
        try:
            context = contextvars.copy_context()  # (the drain's: as grpc.aio's tasks)
            if request is not None:
                context.run(_RECEIVED.set, self.clock())
            handling = self._handle(state, request)
            call = self.cygrpc._schedule_rpc_coro(handling, state, self.loop, self.method)
            task = self.loop.create_task(call, context=context)
            self.calls.add(task)
            task.add_done_callback(self._done)
        except Exception:
            log.exception("handling a %s call", self.method)

    async def _handle(self, state, request: bytes | None) -> None:
        """What grpc.aio's ``_handle_unary_unary_rpc`` does once it has the request (its
        ``_handle_rpc`` and handler lookup are not used: they leave a reference cycle of six
        objects per call for the garbage collector, whose passes stall every stamp)."""
        if request is None:
            return
        handler = self.handler
        if handler.request_deserializer is not None:
            request = handler.request_deserializer(request)
        context = self.cygrpc._ServicerContext(state, None, None, self.loop)
        await self.cygrpc._finish_handler_with_unary_response(
            state, handler.unary_unary, request, context, handler.response_serializer, self.loop
        )

    def _running(self) -> int:
        """Calls accepted here and not over (waiting for their request, or handled)."""
        return self.receiving + len(self.calls)

    def _done(self, task: asyncio.Task) -> None:
        self.calls.discard(task)
        if not task.cancelled() and task.exception() is not None:  # (as grpc.aio: logged)
            log.debug("a %s call ended with %r", self.method, task.exception())
        while self.asked < self.count and self._running() + self.asked < self.most:
            if not self._ask():  # (after a pause at ``most``)
                break

    def stop(self) -> None:
        """Ask for no more calls (those asked for fail as the server stops)."""
        self.stopped = True
