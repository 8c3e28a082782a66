"""The journal writer: group commit, off the trio thread.

Sessions and the arbiter :meth:`JournalWriter.submit` groups of writes and get a
:class:`Commit` to wait on; one writer task takes everything submitted while the previous
transaction ran and commits it as one transaction in the store's worker thread. Whoever
waits is woken when its writes are durable, so a play is acknowledged (and shown to
anyone) only after its commit, and a slow store delays those acknowledgements only: the
trio thread, and with it every clock, keeps running.

A batch that fails is retried group by group, so one refused group (a constraint another
instance raced us to) fails alone; an unwritable store fails them all with StoreError.

A group may carry a *fence* (server/core/cluster.py): a statement that fails unless this
instance still owns the group's match. The batch runs each distinct fence once, first, in
the same transaction as the writes; a group whose fence fails on its own fails with
LeaseLost, the other groups still commit.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence

import trio

from server.core.store import LeaseLost, Store, StoreError, Write

log = logging.getLogger("nardy.server")

FAILURES_LOGGED_S = 10.0  # a store that cannot be written is logged at most this often


class Commit:
    """A group of writes on its way to the store."""

    def __init__(self) -> None:
        self._done = trio.Event()
        self.error: StoreError | None = None

    def _settle(self, error: StoreError | None) -> None:
        self.error = error
        self._done.set()

    async def wait(self) -> None:
        """Return once the writes are durable; raise StoreError if they never will be."""
        await self._done.wait()
        if self.error is not None:
            raise self.error


class JournalWriter:
    def __init__(self, store: Store, observe: Callable[[float], None] | None = None) -> None:
        self.store = store
        self.observe = observe  # told how long each transaction took (seconds)
        self._pending: list[tuple[Sequence[Write], Commit, Write | None]] = []
        self._wake = trio.Event()
        self._idle = trio.Event()
        self._idle.set()
        self.closed = False
        self._failures = 0  # groups refused since the last warning
        self._warned = -math.inf

    def submit(self, *writes: Write, fence: Write | None = None) -> Commit:
        """Queue ``writes`` (committed together, in order after everything queued before),
        only if ``fence`` holds in the same transaction."""
        commit = Commit()
        if self.closed:
            commit._settle(StoreError(f"{self.store.name}: the journal is closed"))
            return commit
        self._pending.append((writes, commit, fence))
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        self._wake.set()
        return commit

    async def commit(self, *writes: Write, fence: Write | None = None) -> None:
        """Submit ``writes`` and wait until they are durable."""
        await self.submit(*writes, fence=fence).wait()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            if trio.lowlevel.current_statistics().tasks_runnable:
                await trio.lowlevel.checkpoint()  # let tasks woken with us queue theirs
            batch, self._pending = self._pending, []
            with trio.CancelScope(shield=True):  # a started transaction is seen through
                await self._commit(batch)
            if not self._pending:
                self._idle.set()

    async def _commit(self, batch: list[tuple[Sequence[Write], Commit, Write | None]]) -> None:
        t0 = time.perf_counter()
        fences = list(dict.fromkeys(fence for _, _, fence in batch if fence is not None))
        try:
            await self.store.write(fences + [w for writes, _, _ in batch for w in writes])
            if self.observe is not None:
                self.observe(time.perf_counter() - t0)
        except StoreError as e:
            if len(batch) == 1:
                self._failed(e)
                batch[0][1]._settle(e)
                return
            level = logging.INFO if isinstance(e, LeaseLost) else logging.WARNING  # (_failed)
            log.log(level, "a journal batch of %d groups failed (%s); retrying each", len(batch), e)
            for writes, commit, fence in batch:
                try:
                    await self.store.write([fence, *writes] if fence is not None else writes)
                except StoreError as e:
                    self._failed(e)
                    commit._settle(e)
                else:
                    commit._settle(None)
        else:
            for _, commit, _ in batch:
                commit._settle(None)

    def _failed(self, error: StoreError) -> None:
        """A group was refused by the store: say so (once in FAILURES_LOGGED_S, counted),
        as the callers' UNAVAILABLE does not reach the log. A write for a match another
        instance has taken over is no fault (its hand-off): said at INFO."""
        if isinstance(error, LeaseLost):
            log.info("a write for a match another instance runs now was refused: %s", error)
            return
        self._failures += 1
        now = time.monotonic()
        if now - self._warned >= FAILURES_LOGGED_S:
            log.warning("the journal refused %d writes: %s", self._failures, error)
            self._warned, self._failures = now, 0

    async def drain(self) -> None:
        """Wait until everything submitted so far is committed (or has failed)."""
        await self._idle.wait()

    async def close(self) -> None:
        """Refuse new writes and wait for the queued ones."""
        self.closed = True
        await self.drain()
