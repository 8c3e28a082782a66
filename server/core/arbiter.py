"""The arbiter core: one object holding its parts, each with one responsibility.

- :attr:`Arbiter.roster`: registered players and who every token speaks for;
- :attr:`Arbiter.seating`: creating matches, consent and challenges;
- :attr:`Arbiter.tables`: the matches and games this core holds, their journal and ends;
- :attr:`Arbiter.actions`: what callers do at a game (watch, play, resign, void);
- :attr:`Arbiter.notices`: the players' streams;
- :attr:`Arbiter.ladders`: the ladders and their books;
- :attr:`Arbiter.owner`: which instance runs which match (alone, or several on one
  PostgreSQL: server.core.ownership).

Everything runs in the core's trio thread. Every change is journaled through the
group-commit writer and answered only once it is durable; each match is a task in the
arbiter's nursery.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from server.core.actions import Actions
from server.core.catalogue import Catalogue
from server.core.clock import Arrivals
from server.core.ladders import Ladders
from server.core.metrics import Metrics
from server.core.notices import Notices
from server.core.ownership import Shared, Sole
from server.core.policy import Policy
from server.core.recovery import restore
from server.core.roster import Roster
from server.core.seating import Seating
from server.core.store import Reader, Store
from server.core.tables import Tables
from server.core.writer import JournalWriter

if TYPE_CHECKING:
    from server.core.cluster import Cluster

log = logging.getLogger("nardy.server")


class Arbiter:
    def __init__(
        self,
        db: Store,
        *,
        admin_hash: str | None = None,
        policy: Policy | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        self.store = db
        self.reader = Reader(db)
        self.metrics = Metrics()
        self.writer = JournalWriter(db, observe=self.metrics.journal_commit.observe)
        self.arrivals = Arrivals(trio.current_time)  # plays stamped on this run's clock
        self.catalogue = Catalogue()
        self.nursery: trio.Nursery | None = None
        self.closing = False
        self.owner: Sole = Sole(self) if cluster is None else Shared(self, cluster)
        self.roster = Roster(self, admin_hash, policy or Policy())
        self.seating = Seating(self)
        self.tables = Tables(self)
        self.actions = Actions(self)
        self.notices = Notices(self)
        self.ladders = Ladders(self)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Restore what the journal holds, then run every match and ladder until cancelled
        (with several instances, the heartbeat too)."""
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            await nursery.start(self.writer.run)
            await restore(self)
            if isinstance(self.owner, Shared):
                await nursery.start(self.owner.run)
            task_status.started()
            await trio.sleep_forever()

    def spawn(self, fn: Callable[..., Awaitable[None]], *args) -> None:
        """Run ``fn(*args)`` as a task of the arbiter (a match, a ladder, a reload)."""
        assert self.nursery is not None
        self.nursery.start_soon(fn, *args)

    def shutdown(self) -> None:
        """End every stream with a final SERVER_SHUTDOWN message and refuse new work."""
        self.closing = True
        self.tables.shutdown()
        self.notices.shutdown()
