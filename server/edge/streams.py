"""A stream's messages at the edge: what its tap tells (server.edge.link), queued for the
stream's writer, with a heartbeat when it is idle and an end for a reader too far behind.

A reader that stops reading stalls its stream's writes (transport flow control); what is
told meanwhile waits here, up to :data:`MAX_BACKLOG` messages. Beyond that the stream is
over: its queue is dropped at once, so it holds nothing while its connection lingers, and
the stream ends with RESOURCE_EXHAUSTED (:data:`BEHIND`) as soon as its stalled write goes
through. (That write is not cancelled: a cancellation that lands as the write completes
would end the call unreported.)
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("nardy.edge")

# A stream whose reader lags this many messages behind is ended (it can resume by seq).
MAX_BACKLOG = 10_000
BEHIND = "the stream fell too far behind its reader; resubscribe with after_seq"
BEAT = object()  # the stream has been idle for the heartbeat interval
END = object()  # the stream is over


class Gone(Exception):
    """A stream's caller went away under a write: the transport refused it (grpc.aio
    raises an ExecuteBatchError, and logs a traceback if it reaches the call's end)."""


def writer(context) -> Callable[[bytes], Awaitable[None]]:
    """``context.write`` of a stream's call, a refused write raised as :class:`Gone`."""

    async def write(message: bytes) -> None:
        try:
            await context.write(message)
        except Exception as e:
            raise Gone(repr(e)) from None

    return write


class Follow:
    """The messages for one stream, in order: (message, turn offered, seq) from its tap,
    and whatever else the stream's handler puts (a Play stream's answers)."""

    def __init__(self, every: float | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self._items: collections.deque = collections.deque()
        self._waiter: asyncio.Future | None = None
        self._room: asyncio.Future | None = None  # a Play stream's reader waits for room
        self.error: str | None = None  # why it ended early (None: it ended as it should)
        self.ended = False
        self.behind = False  # ended because its reader fell MAX_BACKLOG messages behind
        self.every = every
        self.last = self.loop.time()
        self._timer = self.loop.call_later(every, self._due) if every else None

    # -- from the tap (Follower) --------------------------------------------------------
    def told(self, message: bytes, turn_id: int, seq: int) -> None:
        self.put((message, turn_id, seq))

    def closed(self, error: str | None) -> None:
        if not self.ended:
            self.ended, self.error = True, error
            self._wake()
            self._free_room()

    # -- the handler's side -----------------------------------------------------------------
    def put(self, item: Any) -> None:
        if self.ended:
            return
        if len(self._items) >= MAX_BACKLOG:
            log.warning("a reader fell %d messages behind; ending its stream", MAX_BACKLOG)
            self._fell_behind()
            return
        self._items.append(item)
        self._wake()

    def _fell_behind(self) -> None:
        """End the stream now: nothing queued is kept."""
        self.behind = True
        self.closed(BEHIND)
        self._items.clear()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _free_room(self) -> None:
        """Wake a Play stream's reader waiting in :meth:`room`."""
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)

    async def next(self) -> Any:
        """The next item, BEAT once idle for ``every`` seconds, or END."""
        while not self._items:
            if self.ended:
                return END
            self._waiter = self.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        self._free_room()
        return item

    async def send(self, write: Callable[[bytes], Awaitable[None]], message: bytes) -> None:
        """``write(message)`` unless the reader has fallen too far behind; the stream is not
        idle."""
        if self.behind:
            return
        await write(message)
        self.sent()

    async def room(self, most: int) -> None:
        """Until fewer than ``most`` messages wait for the reader, or the stream is over
        (a Play stream reads its next play then: a reader that reads no answers gets no
        more plays read)."""
        while len(self._items) >= most and not self.ended:
            log.debug("%d answers unread: no more plays read until the reader reads", most)
            self._room = self.loop.create_future()
            try:
                await self._room
            finally:
                self._room = None

    def sent(self) -> None:
        """Something was just written: the stream is not idle."""
        self.last = self.loop.time()

    def _due(self) -> None:
        now = self.loop.time()
        if now >= self.last + self.every - 1e-3:
            if not self._items:
                self.put(BEAT)
            self.last = now
        self._timer = self.loop.call_later(self.last + self.every - now, self._due)

    def cancel(self) -> None:
        """The stream is over: no more heartbeats, and its Play reader waits no more."""
        self.ended = True
        if self._timer is not None:
            self._timer.cancel()
        self._free_room()
