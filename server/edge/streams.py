"""A stream's messages at the edge: what its tap tells (server.edge.link), queued for the
stream's writer, with a heartbeat when it is idle and an end for a reader too far behind.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

log = logging.getLogger("nardy.edge")

# A stream whose reader lags this many messages behind is ended (it can resume by seq).
MAX_BACKLOG = 10_000
BEAT = object()  # the stream has been idle for the heartbeat interval
END = object()  # the stream is over


class Follow:
    """The messages for one stream, in order: (message, turn offered, seq) from its tap,
    and whatever else the stream's handler puts (a Play stream's answers)."""

    def __init__(self, every: float | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        self._items: collections.deque = collections.deque()
        self._waiter: asyncio.Future | None = None
        self.error: str | None = None  # why it ended early (None: it ended as it should)
        self.ended = False
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

    # -- the handler's side -----------------------------------------------------------------
    def put(self, item: Any) -> None:
        if self.ended:
            return
        if len(self._items) >= MAX_BACKLOG:
            log.warning("a reader fell %d messages behind; ending its stream", MAX_BACKLOG)
            self.closed("the stream fell too far behind; resubscribe with after_seq")
            return
        self._items.append(item)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

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
        return self._items.popleft()

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
        """The stream is over: no more heartbeats."""
        self.ended = True
        if self._timer is not None:
            self._timer.cancel()
