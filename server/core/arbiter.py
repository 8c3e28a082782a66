"""The arbiter core: one object holding its parts, each with one responsibility.

- :attr:`Arbiter.roster`: registered players and who every token speaks for;
- :attr:`Arbiter.seating`: creating matches, consent and challenges;
- :attr:`Arbiter.tables`: the matches and games this core holds, their journal and ends;
- :attr:`Arbiter.actions`: what callers do at a game (watch, play, resign, void);
- :attr:`Arbiter.notices`: the players' streams;
- :attr:`Arbiter.ladders`: the ladders and their books;
- :attr:`Arbiter.retention`: finished games archived out of the live journal;
- :attr:`Arbiter.owner`: which instance runs which match (alone, or several on one
  PostgreSQL: server.core.ownership).

Everything runs in the core's trio thread. Every change is journaled through the
group-commit writer and answered only once it is durable; each match is a task in the
arbiter's nursery. The arbiter is the parts' Runtime (server.core.runtime); each part is
given the others it uses, and none knows the arbiter.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from server.core.actions import Actions
from server.core.ladders import Ladders
from server.core.match import MatchSession, MatchSpec
from server.core.notices import Notices
from server.core.ownership import Sole
from server.core.policy import Policy
from server.core.restart import Parts, restore
from server.core.retention import Retention
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.seating import Seating
from server.core.shared import Shared
from server.core.store import Store
from server.core.tables import Tables

if TYPE_CHECKING:
    from server.core.cluster import Cluster

log = logging.getLogger("nardy.server")


class Arbiter(Runtime):
    def __init__(
        self,
        db: Store,
        *,
        admin_hash: str | None = None,
        policy: Policy | None = None,
        cluster: Cluster | None = None,
    ) -> None:
        super().__init__(db)
        self.owner: Sole = Sole(self) if cluster is None else Shared(self, cluster)
        self.roster = Roster(self, self.owner, admin_hash, policy or Policy())
        self.notices = Notices(self, self.roster, self.owner)
        self.ladders = Ladders(self, self.roster, self.owner, self._create_pair)
        self.tables = Tables(self, self.roster, self.notices, self.ladders, self.owner)
        self.seating = Seating(self, self.roster, self.tables, self.notices, self.owner)
        self.actions = Actions(self, self.roster, self.tables, self.ladders)
        self.retention = Retention(self, self.roster, self.ladders, self.owner)
        if isinstance(self.owner, Shared):
            self.owner.bind(self.roster, self.tables, self.ladders, self.notices)

    async def _create_pair(self, specs: list[MatchSpec]) -> list[MatchSession]:
        """(For the ladders: a duplicate pair's matches, stored and running.)"""
        return await self.seating.create_pair(specs)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Restore what the journal holds, then run every match and ladder until cancelled
        (with several instances, the heartbeat too)."""
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            await nursery.start(self.writer.run)
            await restore(Parts(self, self.roster, self.ladders, self.tables, self.owner))
            await self.retention.restore()
            nursery.start_soon(self.retention.schedule)
            nursery.start_soon(self.tables.mind_stillness)
            if isinstance(self.owner, Shared):
                await nursery.start(self.owner.run)
            task_status.started()
            await trio.sleep_forever()

    def shutdown(self) -> None:
        """End every stream with a final SERVER_SHUTDOWN message and refuse new work."""
        self.closing = True
        self.tables.shutdown()
        self.notices.shutdown()
