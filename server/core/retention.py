"""Retention: finished games archived out of the live journal, by the operator's command
(AdminService.ArchiveGames) or on the schedule the operator stored (SetRetention), so that
the journal an arbiter reads and writes stays the size of what is live and recent.

Archiving a game packs its whole journal into one ``archive`` row (nothing lost: see
server.core.journal.pack_entries; Reader.entries reads it back byte for byte) and deletes
its events but the last, which holds its final state (an ended game is read back from its
last entry). A run goes through the games to archive in batches of ``BATCH``: a read in
the store's thread, the packing in a worker thread, then one short transaction, then a
pause as long as the batch held the store; the journal's commits of live games come
between batches, and the trio thread never waits. A run ends by storing each ladder's
books, so that a restart counts only the results after them (server.core.ladders).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import trio

from server.core import statements
from server.core.journal import pack_entries
from server.core.ladders import Ladders
from server.core.ownership import Sole
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.store import StoreError
from server.errors import ArbiterError, Code

log = logging.getLogger("nardy.server")

BATCH = 8  # games per transaction (a game's journal is ~180 events)
INTERVAL_S = 3600.0  # the schedule: a run this often
FIRST_S = 60.0  # the schedule's first run after a start
KEEP_SETTING = "retention_keep_s"  # the schedule, in the settings table
MAX_KEEP_S = 100 * 365 * 86400.0
SKEW_S = 300.0  # how far in the future ``before`` may be (the operator's clock may differ)


@dataclass
class Run:
    """One archiving run (see ArchiveRun in admin.proto)."""

    before: float  # archive the games that ended before this (a time.time())
    started: float
    finished: float | None = None
    archived: int = 0
    remaining: int = 0
    error: str = ""
    done: trio.Event = field(default_factory=trio.Event)


def packed(journals: dict[str, list[tuple]]) -> list[tuple[str, int, bytes]]:
    """(game id, entries, packed journal) of each game whose journal is whole (its seqs run
    from 1 without a gap; any other is left as it is)."""
    out = []
    for game_id, rows in journals.items():
        if rows and [row[0] for row in rows] == list(range(1, len(rows) + 1)):
            out.append((game_id, len(rows), pack_entries(rows)))
        else:
            log.warning("game %s not archived: its journal is not whole", game_id)
    return out


class Retention:
    """The archiving runs of this core and the stored schedule."""

    def __init__(self, runtime: Runtime, roster: Roster, ladders: Ladders, owner: Sole) -> None:
        self.runtime = runtime
        self.roster = roster
        self.ladders = ladders
        self.owner = owner
        self.keep_s = 0.0  # the schedule (0: none)
        self.run: Run | None = None  # running, or the last one
        self._stored = trio.Event()  # set when the operator stores a schedule here

    # -- the operator's calls -------------------------------------------------------------
    async def archive(self, digest: str | None, before: float | None) -> None:
        """Start archiving the games that ended before ``before`` (ArchiveGames)."""
        self.roster.require_operator(digest)
        if before is None or not math.isfinite(before) or before <= 0:
            raise ArbiterError(Code.INVALID_ARGUMENT, "before: a time after 1970 is needed")
        if before > time.time() + SKEW_S:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "before: that time is in the future (games not yet over)"
            )
        self._start(min(before, time.time()))

    async def set_keep(self, digest: str | None, keep_s: float) -> None:
        """Store the schedule, and run it once now (SetRetention)."""
        self.roster.require_operator(digest)
        if not math.isfinite(keep_s) or keep_s < 0 or keep_s > MAX_KEEP_S:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "keep: a duration from zero (no schedule) to 100 years"
            )
        await self.runtime.writer.commit(statements.set_setting(KEEP_SETTING, repr(keep_s)))
        self.keep_s = keep_s
        self._stored.set()
        if keep_s:
            log.info("retention: games archived %g s after they end", keep_s)
        else:
            log.info("retention: no schedule (games are archived on the operator's command)")
        if keep_s:
            self._start(time.time() - keep_s)

    async def state(self, digest: str | None) -> tuple[float, Run | None]:
        """The schedule and this instance's run now or last (GetRetention: the operator
        only). With several instances the schedule is read back: another may have stored
        it (the leader runs it)."""
        self.roster.require_operator(digest)
        if self.owner.settings_shared:
            await self.restore()
        return self.keep_s, self.run

    # -- runs ---------------------------------------------------------------------------
    def _start(self, before: float) -> None:
        run = self.run
        if run is not None and run.finished is None:  # running: it goes on to the later time
            run.before = max(run.before, before)
            return
        self.run = run = Run(before, time.time())
        self.runtime.spawn(self._archive, run)

    async def _archive(self, run: Run) -> None:
        read = self.runtime.reader
        try:
            run.remaining = await read.count_archivable(run.before)
            after = (-math.inf, "")
            while not self.runtime.closing:
                t0 = trio.current_time()
                games = await read.archivable(run.before, after, BATCH)
                if not games:
                    break
                after = (games[-1][1], games[-1][0])
                journals = await read.journal_rows([game_id for game_id, _ in games])
                t1 = trio.current_time()
                done = await trio.to_thread.run_sync(packed, journals)
                t2 = trio.current_time()
                if done:
                    await self.runtime.store.write(statements.archive_games(done, time.time()))
                run.archived += len(done)
                run.remaining = max(0, run.remaining - len(games))
                # the store is the live games' as long again as it was this batch's
                await trio.sleep(t1 - t0 + trio.current_time() - t2)
            run.remaining = await read.count_archivable(run.before)
            for commit in self.ladders.keep_books():  # (a restart counts the results after)
                await commit.wait()
        except StoreError as e:
            run.error = e.message
            log.error("archiving stopped: %s", e.message)
        except Exception as e:  # a run in the background: said in its status and the log
            run.error = repr(e)[:200]
            log.exception("archiving stopped")
        finally:
            run.finished = time.time()
            run.done.set()
            log.info(
                "archived %d games that ended before %s%s",
                run.archived,
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run.before)),
                f" ({run.remaining} left: their match goes on)" if run.remaining else "",
            )

    # -- the schedule -------------------------------------------------------------------
    async def schedule(self) -> None:
        """Run the stored schedule once an hour (where the ladders are paired: with
        several instances, one of them), the first time a minute after the start. An
        instance alone on its store with no schedule waits for one to be stored: no wake-ups
        while there is nothing to do."""
        delay = FIRST_S
        while True:
            if not self.keep_s and not self.owner.settings_shared:
                self._stored = trio.Event()
                await self._stored.wait()
            await trio.sleep(delay)
            delay = INTERVAL_S
            try:
                await self.restore()  # (set on any instance)
            except StoreError as e:
                log.warning("retention: the schedule not read: %s", e.message)
                continue
            if self.keep_s and self.owner.leading and not self.runtime.closing:
                self._start(time.time() - self.keep_s)

    async def restore(self) -> None:
        """The stored schedule (after a restart; another instance may have set it)."""
        stored = await self.runtime.reader.setting(KEEP_SETTING)
        try:
            keep_s = float(stored or 0)
        except ValueError:
            keep_s = math.nan
        if not 0 <= keep_s <= MAX_KEEP_S:
            log.warning("retention: the stored schedule %r is not a duration: none", stored[:40])
            keep_s = 0.0
        self.keep_s = keep_s
