"""The core's end of the link (server.link): calls in from the edge, answers, taps' messages
and fences out.

One task reads frames as they come and admits each call at once (a play is stamped as it
is read: server.core.clock); each call is then answered by a task of its own. At most
:data:`CALLS_A_ROUND` answers are started in one scheduling round, the rest in the rounds
after, in order: however many calls a saturated core has read, a round stays short, so a
clock whose deadline passes is acted on within a round or two rather than after all of
them. The frames made in one scheduling round go out together, in order, in one write at
the start of the next: a turn's events and its answer cost the socket (and the edge's
wake-up) once, not once a frame. Answers cut short when the link closes are not written
(there is no edge to read them; the edge answers its open calls UNAVAILABLE when the link
drops). A frame the core cannot use is dropped and logged, never fatal: nothing the edge
can send stops the core, and the link closing (the edge stopped or died) ends its run.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque

import trio

from server.core.api import Api, refusal
from server.core.clock import Passed
from server.core.taps import Taps
from server.errors import ArbiterError, Code
from server.link import Frames, frame, link_pb

log = logging.getLogger("nardy.server")

READ_BYTES = 16 * 1024  # frames read at a time: a core batch stays short (timers between)
CALLS_A_ROUND = 2  # answers started in one scheduling round (each a play's work, ~1 ms)


class EdgeLink:
    """The core's end of one link: serves ``api`` to the edge on ``stream``."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.taps = Taps(self)
        self.api: Api | None = None
        self._out = bytearray()  # not written yet, in order
        self._wake = trio.Event()
        self._fences: dict[int, Passed] = {}  # asked of the edge, not answered yet
        self._fence_ids = itertools.count(1)
        self.offset = 0.0  # the core's clock minus CLOCK_MONOTONIC
        self.frames = Frames(link_pb.ToCore)
        self.closed = trio.Event()
        self._admitted: deque = deque()  # calls read, their answers not started yet
        self._started = 0  # answers started since the reader last read
        self._queued = trio.Event()

    # -- out ------------------------------------------------------------------------------
    def send(self, message: link_pb.ToEdge) -> None:
        self._out += frame(message)
        self._wake.set()

    def tell(self, tap: int, message: bytes, turn_id: int, seq: int) -> None:
        self.send(
            link_pb.ToEdge(tell=link_pb.Tell(tap=tap, message=message, turn_id=turn_id, seq=seq))
        )

    def close_tap(self, tap: int) -> None:
        self.send(link_pb.ToEdge(close=link_pb.Close(tap=tap)))

    def ready(self, instance: str = "", tokens: bytes = b"") -> None:
        self.send(link_pb.ToEdge(ready=link_pb.Ready(instance=instance, tokens=tokens)))

    def issued(self, digests: list[str]) -> None:
        self.send(link_pb.ToEdge(issued=link_pb.Issued(digests=digests)))

    def fence(self, game_id: str, turn_id: int, before: float) -> Passed:
        """Ask the edge now for a fence of ``game_id`` at ``before`` (the core's clock),
        answered once every play it stamped before then has been read (server.core.clock),
        with when it handed its seat turn ``turn_id``, if it did (the core's clock)."""
        ticket = Passed(before)
        if self.closed.is_set():
            return ticket  # no edge: nothing is on its way
        ticket.done = trio.Event()
        fence_id = next(self._fence_ids)
        self._fences[fence_id] = ticket
        fence = link_pb.Fence(
            id=fence_id, game_id=game_id, turn_id=turn_id, before=before - self.offset
        )
        self.send(link_pb.ToEdge(fence=fence))
        return ticket

    async def _write(self) -> None:
        """The frames made since it last wrote, in one write while the socket takes them."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            try:
                while self._out:
                    data, self._out = bytes(self._out), bytearray()
                    await self.stream.send_all(data)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the edge is gone: the reader sees it too

    # -- in -------------------------------------------------------------------------------
    async def serve(self, api: Api, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve ``api`` until the edge closes the link."""
        self.api = api
        self.offset = api.offset
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._write)
            nursery.start_soon(self._start_queued)
            task_status.started()
            try:
                await self._read()
            finally:
                self.closed.set()
                for ticket in self._fences.values():
                    ticket.done.set()  # no edge: nothing is in flight
                self._fences.clear()
                nursery.cancel_scope.cancel()

    async def _read(self) -> None:
        while True:
            try:
                data = await self.stream.receive_some(READ_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            self._started = 0
            dropped = self.frames.dropped
            for message in self.frames.feed(data):
                self._take(message)
            if self.frames.dropped > dropped:
                log.warning(
                    "link: %d frames dropped (oversize or unreadable)",
                    self.frames.dropped - dropped,
                )

    def _take(self, message: link_pb.ToCore) -> None:
        kind = message.WhichOneof("kind")
        try:
            if kind == "call":
                self._call(message.call)
            elif kind == "leave":
                self.api.leave(message.leave.tap)
            elif kind == "stood_still":
                self.api.stood_still(message.stood_still.seconds)
            elif kind == "fenced":
                ticket = self._fences.pop(message.fenced.id, None)
                if ticket is not None:
                    sent = message.fenced.sent
                    ticket.sent = sent + self.offset if sent else None
                    ticket.done.set()
        except Exception:  # a frame the core cannot use: dropped, the link goes on
            log.exception("link: a %s frame dropped", kind)

    def _call(self, call: link_pb.Call) -> None:
        try:
            admitted = self.api.admit(call)
        except ArbiterError as e:
            self.send(link_pb.ToEdge(reply=refusal(call.id, e)))
            return
        if self._started < CALLS_A_ROUND and not self._admitted:
            self._started += 1
            self._nursery.start_soon(self._answer, admitted)
        else:
            self._admitted.append(admitted)
            self._queued.set()

    async def _start_queued(self) -> None:
        """The answers the reader did not start: :data:`CALLS_A_ROUND` a round, in order."""
        while True:
            await self._queued.wait()
            self._queued = trio.Event()
            while self._admitted:
                for _ in range(min(CALLS_A_ROUND, len(self._admitted))):
                    self._nursery.start_soon(self._answer, self._admitted.popleft())
                await trio.lowlevel.checkpoint()

    async def _answer(self, admitted) -> None:
        call_id = admitted.call.id
        try:
            reply = await self.api.answer(admitted)
        except Exception:
            log.exception("answering %s", admitted.call.method)
            reply = refusal(call_id, ArbiterError(Code.INTERNAL, "the server failed to answer"))
        self.send(link_pb.ToEdge(reply=reply))
