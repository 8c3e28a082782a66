"""What every part of the core shares: the store, its reader and journal writer, the
arrival stamps, the games' catalogue, the metrics, the nursery the core's tasks run in, and
whether the core is stopping."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from server.core.catalogue import Catalogue
from server.core.clock import Arrivals
from server.core.metrics import Metrics
from server.core.store import Reader, Store
from server.core.writer import JournalWriter


class Runtime:
    def __init__(self, db: Store) -> None:
        self.store = db
        self.reader = Reader(db)
        self.metrics = Metrics()
        self.writer = JournalWriter(db, observe=self.metrics.journal_commit.observe)
        self.arrivals = Arrivals(trio.current_time)  # plays stamped on this run's clock
        self.catalogue = Catalogue()
        self.nursery: trio.Nursery | None = None
        self.closing = False

    def spawn(self, fn: Callable[..., Awaitable[None]], *args) -> None:
        """Run ``fn(*args)`` as a task of the core (a match, a ladder, a reload)."""
        assert self.nursery is not None
        self.nursery.start_soon(fn, *args)
