"""Several arbiter instances on one PostgreSQL: leases, fencing, takeover, leader, news.

Each instance has a row in ``instances`` (a random id, the address clients reach it at,
``expires``) that its heartbeat pushes forward every ``lease_s / 3``. Each unfinished match
has a row in ``leases``: its ``owner`` instance, an ``epoch``, and a ``grp`` (a duplicate
pair's two matches share one, so they always run on one instance: they throw in
lockstep). A lease is live while its owner's row has not expired, by the database's clock,
so the instances' own clocks do not matter.

- Creating a match writes its lease (this instance, epoch 1) in the same transaction.
- Every journal write of a match carries the fence ``nardy_fence(match, owner, epoch)``
  (server/pgstore.py) in the writer's transaction: it fails unless the lease is still this
  instance's at that epoch, and it holds the lease row until the transaction ends. A
  takeover therefore waits for a write in flight, and every later write of the old owner
  fails (LeaseLost): a paused or partitioned instance cannot add a play to a game it lost.
- Each heartbeat claims, under one advisory lock (two claimers never race), the leases
  whose owner has expired: owner := this instance, epoch + 1; the arbiter then rebuilds
  those matches from the journal (server/recovery.py: same dice, fresh clock). A live
  lease is never claimed.
- Each heartbeat lists the leases the instance holds: a match it runs but no longer owns
  (it was paused for longer than the lease) is stopped at once, not at its next write.
- Each instance holds a session advisory lock of its own (ALIVE, its id) on its heartbeat
  connection: a killed instance's lock goes with its session at once, long before its row
  expires, so the leader places no new ladder pair on it (LEAST_LOADED). Only placement
  reads it: leases are claimed on expiry alone (a session that drops and comes back must
  not lose its matches).
- The ladder scheduler runs on the instance holding a session advisory lock (the leader).
  When the leader dies its database session ends and the lock is free; the next heartbeat
  of another instance takes it.
- News for the other instances (a game's new summary for ListGames, a game assigned to a
  player, a ladder changed, a token reissued) is sent with NOTIFY inside the writer's
  transaction (so only what committed is told) and read on each instance's LISTEN
  connection, in a thread of its own.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
import trio

from server.core.pgstore import redact
from server.core.store import StoreError, Write

log = logging.getLogger("nardy.server")

LADDER_LOCK = 0x6E61_7264_7903  # session advisory lock: the ladder scheduler's leader
CLAIM_LOCK = 0x6E61_7264_7904  # transaction advisory lock: one claimer at a time
ALIVE = 0x6E61_7264  # session advisory locks (ALIVE, hashtext(id)): the instance is running
CHANNEL = "nardy"  # LISTEN/NOTIFY channel of news between instances
LISTENING = {"k": "listening"}  # (told by listen itself: it listens from now on)
NOW = "extract(epoch FROM clock_timestamp())"  # the database's clock, in seconds
DEFAULT_LEASE_S = 10.0
CLAIMS_PER_BEAT = 64  # lease groups one heartbeat may claim (the others go to the next)


@dataclass(frozen=True)
class Beat:
    """What one heartbeat found."""

    claimed: list[tuple[str, int]]  # (match id, epoch) taken over by this instance now
    held: dict[str, int]  # every lease this instance holds: match id -> epoch
    leader: bool  # this instance runs the ladders


@dataclass(frozen=True)
class Place:
    """Where a game lives: its match, and the lease's owner (None: the match is over)."""

    match_id: str
    owner: str | None
    address: str
    live: bool  # the owner's heartbeat is current


class Cluster:
    """This instance's side of the leases, on a connection of its own (a heartbeat must
    not wait behind the journal's writes)."""

    def __init__(self, url: str, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.url = url
        self.name = redact(url)
        self.lease_s = lease_s
        self.id = secrets.token_hex(8)
        self.address = ""  # host:port for redirects, set once the transport is bound
        self.leader = False
        self._db: psycopg.Connection | None = None
        self._limiter = trio.CapacityLimiter(1)
        self._stop = threading.Event()
        self._listener: threading.Thread | None = None

    @property
    def interval_s(self) -> float:
        return self.lease_s / 3

    @property
    def closed(self) -> bool:
        return self._stop.is_set()

    # -- writes that ride in the journal's transactions --------------------------------
    def lease(self, match_id: str, grp: str) -> Write:
        """The lease of a match being created here (in its creating transaction)."""
        return (
            "INSERT INTO leases (match_id, grp, owner, epoch) VALUES (?,?,?,1)",
            (match_id, grp, self.id),
        )

    def fence(self, match_id: str, epoch: int) -> Write:
        return ("SELECT nardy_fence(?,?,?)", (match_id, self.id, epoch))

    @staticmethod
    def release(match_id: str) -> Write:
        """The lease of a match that is over (fenced like any other write of it)."""
        return ("DELETE FROM leases WHERE match_id=?", (match_id,))

    def hand_over(self, grp: str, owner: str) -> Write:
        """Give a lease group of this instance's to ``owner`` (a new ladder pair, placed
        on the least loaded instance); it takes the matches at its next heartbeat."""
        return (
            "UPDATE leases SET owner = ?, epoch = epoch + 1 WHERE grp = ? AND owner = ?",
            (owner, grp, self.id),
        )

    # the live instance running the fewest matches, its heartbeat's session still there
    LEAST_LOADED = (
        "SELECT i.id FROM instances i LEFT JOIN leases l ON l.owner = i.id "
        f"WHERE i.expires >= {NOW} AND i.address <> '' AND EXISTS ("
        "SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted "
        "AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        f"AND k.classid = {ALIVE} AND k.objid = hashtext(i.id)::oid AND k.objsubid = 2) "
        "GROUP BY i.id ORDER BY count(l.match_id), random() LIMIT 1"
    )

    def news(self, kind: str, **fields) -> Write:
        payload = json.dumps({"o": self.id, "k": kind, **fields}, separators=(",", ":"))
        return ("SELECT pg_notify(?, ?)", (CHANNEL, payload))

    # -- where a game lives (read through the store) ----------------------------------
    PLACE_OF_GAME = (
        "SELECT g.match_id, l.owner, COALESCE(i.address, ''), "
        f"COALESCE(i.expires >= {NOW}, false) FROM games g "
        "LEFT JOIN leases l ON l.match_id = g.match_id "
        "LEFT JOIN instances i ON i.id = l.owner WHERE g.id = ?"
    )
    PLACE_OF_MATCH = (
        "SELECT m.id, l.owner, COALESCE(i.address, ''), "
        f"COALESCE(i.expires >= {NOW}, false) FROM matches m "
        "LEFT JOIN leases l ON l.match_id = m.id "
        "LEFT JOIN instances i ON i.id = l.owner WHERE m.id = ?"
    )

    @staticmethod
    def place(rows: list[tuple]) -> Place | None:
        if not rows:
            return None
        match_id, owner, address, live = rows[0]
        return Place(match_id, owner, address, bool(live))

    # -- the heartbeat ------------------------------------------------------------------
    async def _run(self, fn: Callable, *args):
        return await trio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    def open(self) -> None:
        """Connect and register this instance (in a worker thread: it blocks)."""
        self._sync_beat(claim=False)

    def _conn(self) -> psycopg.Connection:
        if self._db is None or self._db.closed or self._db.broken:
            if self._db is not None and self.leader:
                log.warning("instance %s: lost its database session: no longer the leader", self.id)
            self.leader = False  # a session advisory lock dies with its session
            try:
                self._db = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
                self._db.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (ALIVE, self.id))
            except psycopg.Error as e:
                raise StoreError(f"{self.name}: cannot connect ({e})".strip()) from None
        return self._db

    async def beat(self, *, claim: bool = True) -> Beat:
        return await self._run(self._sync_beat, claim)

    def _sync_beat(self, claim: bool) -> Beat:
        try:
            db = self._conn()
            renew = (
                "INSERT INTO instances (id, address, started, expires) "
                f"VALUES (%s, %s, {NOW}, {NOW} + %s) ON CONFLICT (id) DO UPDATE "
                "SET address = excluded.address, expires = excluded.expires"
            )
            me = (self.id, self.address, self.lease_s)
            db.execute(renew, me)
            claimed: list[tuple[str, int]] = []
            if claim:
                with db.transaction():
                    db.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
                    db.execute(renew, me)  # live when claiming, however long the lock took
                    claimed = db.execute(
                        "UPDATE leases SET owner = %s, epoch = epoch + 1 WHERE grp IN ("
                        "SELECT l.grp FROM leases l LEFT JOIN instances i ON i.id = l.owner "
                        f"WHERE i.id IS NULL OR i.expires < {NOW} "
                        "GROUP BY l.grp ORDER BY min(l.match_id) LIMIT %s) "
                        "RETURNING match_id, epoch",
                        (self.id, CLAIMS_PER_BEAT),
                    ).fetchall()
            held = dict(
                db.execute(
                    "SELECT match_id, epoch FROM leases WHERE owner = %s", (self.id,)
                ).fetchall()
            )
            if claim and not self.leader:
                row = db.execute("SELECT pg_try_advisory_lock(%s)", (LADDER_LOCK,)).fetchone()
                self.leader = bool(row[0])
            # instances gone for an hour and owning nothing are forgotten
            db.execute(
                f"DELETE FROM instances WHERE expires < {NOW} - 3600 "
                "AND NOT EXISTS (SELECT 1 FROM leases WHERE owner = instances.id)"
            )
        except psycopg.Error as e:
            raise StoreError(f"{self.name}: heartbeat failed ({str(e).strip()})") from None
        return Beat(claimed, held, self.leader)

    async def close(self) -> None:
        """Leave: the lease row expires now, so the others take our games at once."""
        self._stop.set()

        def leave() -> None:
            if self._db is None or self._db.closed:
                return
            try:
                if not self._db.broken:
                    self._db.execute("UPDATE instances SET expires = 0 WHERE id = %s", (self.id,))
            except psycopg.Error as e:
                log.warning("instance %s: could not leave cleanly (%s)", self.id, e)
            self._db.close()
            self.leader = False
            if self._listener is not None:
                self._listener.join()

        await self._run(leave)

    # -- news from the other instances ------------------------------------------------
    def listen(self, deliver: Callable[[dict], None]) -> None:
        """Call ``deliver(news)`` in the trio thread for each NOTIFY of another instance,
        and ``deliver(LISTENING)`` each time it starts listening (at first, and again after
        a lost connection): news sent before that was missed."""
        token = trio.lowlevel.current_trio_token()

        def tell(news: dict) -> None:  # in the trio thread: a bad item must not stop it
            try:
                deliver(news)
            except Exception:
                log.exception("instance %s: news not understood: %.200r", self.id, news)

        def loop() -> None:
            conn = None
            while not self._stop.is_set():
                try:
                    if conn is None or conn.closed or conn.broken:
                        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
                        conn.execute(f"LISTEN {CHANNEL}")
                        token.run_sync_soon(tell, LISTENING)
                    for note in conn.notifies(timeout=0.5):
                        news = json.loads(note.payload)
                        if news.get("o") != self.id:
                            token.run_sync_soon(tell, news)
                except psycopg.Error as e:
                    log.warning("instance %s: news connection lost (%s)", self.id, e)
                    self._stop.wait(1.0)  # back off before reconnecting
                except trio.RunFinishedError:
                    break
            if conn is not None:
                conn.close()

        self._listener = threading.Thread(target=loop, name="nardy-news", daemon=True)
        self._listener.start()
