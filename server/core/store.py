"""Where the journal lives: the asynchronous :class:`Store` interface and the SQL it speaks.

The core never waits on a database in its own thread. It hands :class:`Write` groups to the
journal writer (``server/writer.py``), which commits them in one transaction per batch
through :meth:`Store.write`; each store runs its connection in a thread of its own
(:class:`Worker`), so a slow disk or a remote database delays acknowledgements, never the
clocks. :class:`SQLiteStore` (WAL) is the embedded default;
``server/pgstore.py`` holds the PostgreSQL store. Both speak the statements below, written
once in the dialect both understand (``?`` parameters, ``ON CONFLICT`` upserts), and both
create and migrate their schema, refusing a database whose schema is newer than the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import outcome
import trio

from server.core import journal
from server.errors import ArbiterError, Code

if TYPE_CHECKING:
    from nardy.variant import Variant

T = TypeVar("T")

# The schema's version: each store records it and applies MIGRATIONS[n] to go from n-1 to n.
SCHEMA_VERSION = 7

Write = tuple[str, tuple]  # one statement and its parameters


def grouped(batch: Sequence[Write]) -> list[tuple[str, list[tuple]]]:
    """Runs of the same statement, for ``executemany`` (a turn's events share theirs)."""
    runs: list[tuple[str, list[tuple]]] = []
    for sql, params in batch:
        if runs and runs[-1][0] == sql:
            runs[-1][1].append(params)
        else:
            runs.append((sql, [params]))
    return runs


def run_batch(cursor: Any, batch: Sequence[Write], placeholder: str = "?") -> None:
    """Execute ``batch`` on a DB-API cursor, runs of one statement with ``executemany``,
    but for queries (a batch's fences, a few): one that fails in psycopg's pipeline of an
    ``executemany`` aborts it midway, and psycopg logs a warning of its own besides the
    error."""
    for sql, params in grouped(batch):
        if placeholder != "?":
            sql = sql.replace("?", placeholder)
        if len(params) == 1 or sql.startswith("SELECT"):
            for one in params:
                cursor.execute(sql, one)
        else:
            cursor.executemany(sql, params)


class StoreError(ArbiterError):
    """The store cannot be read or written; the server refuses changes rather than lose data."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.UNAVAILABLE, message)


class LeaseLost(StoreError):
    """A write for a match this instance no longer owns: another instance took it over
    (server/cluster.py). The write was refused whole; the match must stop here."""


class Store(Protocol):
    """An asynchronous journal store; every method may raise StoreError."""

    name: str  # where it is, for messages (never a password)
    order: str  # the column that keeps insertion order ("rowid" in SQLite)

    async def write(self, batch: Sequence[Write]) -> None:
        """Apply ``batch`` in one transaction: all of it is durable, or none of it."""

    async def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Rows of one statement (the statements below)."""
        ...

    async def close(self) -> None: ...


# -- what recovery reads ------------------------------------------------------------------
LIVE = (int(journal.Status.WAITING), int(journal.Status.IN_PROGRESS))
ENDED = (int(journal.Status.FINISHED), int(journal.Status.ABORTED))
CHUNK = 500  # ids per ``IN (...)`` list


def chunks(items: Sequence[T] | set[T], size: int = CHUNK) -> list[list[T]]:
    """``items`` in lists of at most ``size`` (for ``IN (?, ...)`` reads)."""
    items = list(items)
    return [items[i : i + size] for i in range(0, len(items), size)]


def marks(items: Sequence) -> str:
    """``?, ?, ...``: one parameter per item."""
    return ", ".join("?" * len(items))


# One game as the store gives it back: (game id, number in the match, server seed in hex,
# journal entries, status in the games table).
StoredGame = tuple[str, int, str, list[tuple[int, int, float, dict]], int]


class Reader:
    """The reads of restart and replay, over any Store (rows decoded by server.core.journal).

    A restart reads what is live (games not over, through the ``games_status`` index) and
    the newest matches ListGames lists, never the whole history; an archived game's
    journal is read back from the ``archive`` table (server/core/retention.py)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.order = store.order

    async def players(self) -> list[tuple[str, str, int, str, str]]:
        return await self.store.query(
            f"SELECT id, name, bot, token_hash, owner FROM players ORDER BY {self.order}"
        )

    async def setting(self, key: str) -> str | None:
        rows = await self.store.query("SELECT value FROM settings WHERE key=?", (key,))
        return rows[0][0] if rows else None

    async def ladders(self) -> list[tuple[str, dict]]:
        rows = await self.store.query(f"SELECT name, options FROM ladders ORDER BY {self.order}")
        return [(name, journal.decode_ladder_options(options)) for name, options in rows]

    async def ladder_games(self, ladder: str, after: int = 0) -> list[dict]:
        """A ladder's records in the order they were stored (``after``: but the first ones)."""
        rows = await self.store.query(
            f"SELECT record FROM ladder_games WHERE ladder=? ORDER BY {self.order} "
            "LIMIT ? OFFSET ?",
            (ladder, 2**62, after),
        )
        return [journal.decode_ladder_game(text) for (text,) in rows]

    async def ladder_game_at(self, ladder: str, position: int) -> str | None:
        """The game id of a ladder's ``position``-th record, from 1 (None: no such record)."""
        rows = await self.store.query(
            f"SELECT game_id FROM ladder_games WHERE ladder=? ORDER BY {self.order} "
            "LIMIT 1 OFFSET ?",
            (ladder, position - 1),
        )
        return rows[0][0] if rows else None

    async def ladder_books(self, ladder: str) -> tuple[int, str, dict] | None:
        """(records counted, the last of them, the books) as last stored (None: never)."""
        rows = await self.store.query(
            "SELECT counted, last, books FROM ladder_books WHERE ladder=?", (ladder,)
        )
        return (rows[0][0], rows[0][1], journal.decode_json(rows[0][2])) if rows else None

    async def counted_games(self, game_ids: Sequence[str]) -> set[str]:
        """Those of ``game_ids`` in their ladder's books (a record stored)."""
        found: set[str] = set()
        for ids in chunks(game_ids):
            rows = await self.store.query(
                f"SELECT game_id FROM ladder_games WHERE game_id IN ({marks(ids)})", tuple(ids)
            )
            found.update(game_id for (game_id,) in rows)
        return found

    async def ladder_members(self, ladder: str) -> list[tuple[str, int]]:
        return await self.store.query(
            "SELECT player_id, ready FROM ladder_members WHERE ladder=?", (ladder,)
        )

    # -- what a restart reads ----------------------------------------------------------
    async def live_games(self) -> list[tuple[str, str]]:
        """(match id, game id) of every game not over in the games table."""
        return await self.store.query("SELECT match_id, id FROM games WHERE status IN (?, ?)", LIVE)

    async def uncounted_ladder_games(self) -> list[str]:
        """The matches of ended ladder games missing from their ladder's books (none are
        archived: server/core/retention.py archives a ladder game once it counts)."""
        rows = await self.store.query(
            "SELECT DISTINCT g.match_id FROM games g JOIN matches m ON m.id = g.match_id "
            "WHERE g.archived = 0 AND g.status IN (?, ?) AND m.pair <> '' "
            "AND NOT EXISTS (SELECT 1 FROM ladder_games l WHERE l.game_id = g.id)",
            ENDED,
        )
        return [match_id for (match_id,) in rows]

    async def pair_partners(self, match_ids: set[str]) -> set[str]:
        """The matches of the duplicate pairs of ``match_ids`` (those included)."""
        pairs: set[str] = set()
        for ids in chunks(match_ids):
            rows = await self.store.query(
                f"SELECT pair FROM matches WHERE pair <> '' AND id IN ({marks(ids)})", tuple(ids)
            )
            pairs.update(pair for (pair,) in rows)
        found = set(match_ids)
        for ids in chunks(pairs):
            rows = await self.store.query(
                f"SELECT id FROM matches WHERE pair IN ({marks(ids)})", tuple(ids)
            )
            found.update(match_id for (match_id,) in rows)
        return found

    async def matches_by_id(self, match_ids: set[str]) -> list[tuple[int, dict]]:
        """(insertion order, row) of each of ``match_ids``."""
        cols = ", ".join(journal.MATCH_COLUMNS)
        out = []
        for ids in chunks(match_ids):
            rows = await self.store.query(
                f"SELECT {self.order}, {cols} FROM matches WHERE id IN ({marks(ids)})", tuple(ids)
            )
            out += [(row[0], journal.decode_match(row[1:])) for row in rows]
        return out

    async def newest_matches(self, count: int) -> list[tuple[int, dict]]:
        """(insertion order, row) of the newest ``count`` matches."""
        cols = ", ".join(journal.MATCH_COLUMNS)
        rows = await self.store.query(
            f"SELECT {self.order}, {cols} FROM matches ORDER BY {self.order} DESC "
            f"LIMIT {int(count)}"
        )
        return [(row[0], journal.decode_match(row[1:])) for row in rows]

    async def seat_tokens(self, match_ids: set[str]) -> list[tuple[str, int, str, str]]:
        """(match id, seat, token hash, creator) of the seats of ``match_ids``."""
        out = []
        for ids in chunks(match_ids):
            out += await self.store.query(
                "SELECT match_id, seat, token_hash, creator FROM seat_tokens "
                f"WHERE match_id IN ({marks(ids)})",
                tuple(ids),
            )
        return out

    async def seat_token_hashes(self) -> list[str]:
        """The hash of every seat token ever issued (one narrow column: the filter of issued
        tokens needs them all; the seats themselves are looked up when asked for)."""
        return [row[0] for row in await self.store.query("SELECT token_hash FROM seat_tokens")]

    async def status_counts(self, match_ids: set[str] | None = None) -> Counter[int]:
        """How many stored games are in each status (of ``match_ids`` only, if given)."""
        if match_ids is None:
            rows = await self.store.query("SELECT status, count(*) FROM games GROUP BY status")
            return Counter(dict(rows))
        counts: Counter[int] = Counter()
        for ids in chunks(match_ids):
            rows = await self.store.query(
                f"SELECT status, count(*) FROM games WHERE match_id IN ({marks(ids)}) "
                "GROUP BY status",
                tuple(ids),
            )
            counts.update(dict(rows))
        return counts

    # -- games read back ----------------------------------------------------------------
    async def match(self, match_id: str) -> dict | None:
        cols = ", ".join(journal.MATCH_COLUMNS)
        rows = await self.store.query(f"SELECT {cols} FROM matches WHERE id=?", (match_id,))
        return journal.decode_match(rows[0]) if rows else None

    async def players_where(self, condition: str, *params) -> list[tuple[str, str, int, str, str]]:
        """Players matching an SQL ``condition`` (another instance may have registered them)."""
        return await self.store.query(
            f"SELECT id, name, bot, token_hash, owner FROM players WHERE {condition}", params
        )

    async def match_of(self, game_id: str) -> str | None:
        """The match a stored game belongs to (None: no such game)."""
        rows = await self.store.query("SELECT match_id FROM games WHERE id=?", (game_id,))
        return rows[0][0] if rows else None

    async def seat_token(self, digest: str) -> tuple[str, int, str] | None:
        """(match id, seat, creator's limits key) of a seat token's hash (None: no such
        token)."""
        rows = await self.store.query(
            "SELECT match_id, seat, creator FROM seat_tokens WHERE token_hash=?", (digest,)
        )
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    async def unfinished_games(self) -> list[tuple[str, dict]]:
        """(game id, its match row) of every game not yet over, oldest first."""
        cols = ", ".join(f"m.{c}" for c in journal.MATCH_COLUMNS)
        rows = await self.store.query(
            f"SELECT g.id, {cols} FROM games g JOIN matches m ON m.id = g.match_id "
            "WHERE g.status IN (?, ?) ORDER BY g.created",
            LIVE,
        )
        return [(row[0], journal.decode_match(row[1:])) for row in rows]

    async def pair_playing(self, pair_id: str) -> bool:
        """Whether a game of the ladder pair ``pair_id`` is not over yet."""
        rows = await self.store.query(
            "SELECT 1 FROM games g JOIN matches m ON m.id = g.match_id "
            "WHERE g.status IN (?, ?) AND m.pair = ? LIMIT 1",
            (*LIVE, pair_id),
        )
        return bool(rows)

    async def match_games(self, match_id: str) -> list[StoredGame]:
        """Each game of a match with its journal entries and stored status, in order:
        (id, number, server seed in hex, entries, status) as recovery restores them."""
        rows = await self.store.query(
            "SELECT id, number, server_seed, status FROM games WHERE match_id=? ORDER BY number",
            (match_id,),
        )
        return [
            (game_id, number, seed, await self.entries(game_id), status)
            for game_id, number, seed, status in rows
        ]

    async def match_ends(self, match_id: str) -> list[StoredGame]:
        """As :meth:`match_games`, each game with its last journal entry only (an ended
        match, read back to be looked at), in one read however long the match."""
        return (await self.ends_of([match_id])).get(match_id, [])

    async def ends_of(self, match_ids: Sequence[str]) -> dict[str, list[StoredGame]]:
        """:meth:`match_ends` of several matches, a few reads for all of them. (An
        archived game keeps its last entry in ``events``.)"""
        out: dict[str, list[StoredGame]] = {}
        for ids in chunks(match_ids):
            rows = await self.store.query(
                "SELECT g.match_id, g.id, g.number, g.server_seed, g.status, e.seq, e.type, "
                "e.time, e.data FROM games g LEFT JOIN events e ON e.game_id = g.id AND e.seq = "
                "(SELECT MAX(seq) FROM events WHERE game_id = g.id) "
                f"WHERE g.match_id IN ({marks(ids)}) ORDER BY g.match_id, g.number",
                tuple(ids),
            )
            for match_id, game_id, number, seed, status, seq, kind, t, data in rows:
                entries = [] if seq is None else [_entry(seq, kind, t, data)]
                out.setdefault(match_id, []).append((game_id, number, seed, entries, status))
        return out

    async def glances(self, game_ids: list[str]) -> list[tuple[str, dict, list]]:
        """(game id, its match row, its last two journal entries) of each of ``game_ids``
        that is stored, in two reads however many: boards to look at."""
        if not game_ids:
            return []
        marks = ",".join("?" * len(game_ids))
        rows = await self.store.query(
            "SELECT e.game_id, e.seq, e.type, e.time, e.data FROM events e "
            f"WHERE e.game_id IN ({marks}) AND e.seq >= "
            "(SELECT MAX(seq) FROM events WHERE game_id = e.game_id) - 1 ORDER BY e.seq",
            tuple(game_ids),
        )
        entries: dict[str, list] = {}
        for game_id, *entry in rows:
            entries.setdefault(game_id, []).append(_entry(*entry))
        cols = ", ".join(f"m.{c}" for c in journal.MATCH_COLUMNS)
        rows = await self.store.query(
            f"SELECT g.id, {cols} FROM games g JOIN matches m ON m.id = g.match_id "
            f"WHERE g.id IN ({marks})",
            tuple(game_ids),
        )
        return [
            (row[0], journal.decode_match(row[1:]), entries[row[0]])
            for row in rows
            if row[0] in entries
        ]

    async def entries(self, game_id: str, *, tail: int = 0) -> list[tuple[int, int, float, dict]]:
        """A game's journal entries in order (``tail``: its last ``tail`` entries only),
        from its archive once it is archived."""
        if tail:
            sql = "SELECT seq, type, time, data FROM events WHERE game_id=? ORDER BY seq DESC"
            rows = (await self.store.query(f"{sql} LIMIT {int(tail)}", (game_id,)))[::-1]
        else:
            sql = "SELECT seq, type, time, data FROM events WHERE game_id=? ORDER BY seq"
            rows = await self.store.query(sql, (game_id,))
        # seqs run from 1: an archived game keeps its last entry only
        if rows and rows[0][0] != 1 and (not tail or len(rows) < tail):
            archived = await self.archived(game_id)
            if archived is not None:
                rows = archived[-tail:] if tail else archived
        return [_entry(*row) for row in rows]

    async def archived(self, game_id: str) -> list[tuple] | None:
        """An archived game's journal rows ``(seq, type, time, data)`` (None: not archived)."""
        rows = await self.store.query(
            "SELECT format, journal FROM archive WHERE game_id=?", (game_id,)
        )
        return journal.unpack_entries(*rows[0]) if rows else None

    async def events(self, game_id: str, rules: Variant, tail: int = 0) -> list[journal.Event]:
        """A game's events (``tail``: its last ones only), decoded for its variant's rules."""
        entries = await self.entries(game_id, tail=tail)
        return [journal.decode_event(*entry, rules) for entry in entries]

    # -- retention (server/core/retention.py) -------------------------------------------
    async def archivable(
        self, before: float, after: tuple[float, str], limit: int
    ) -> list[tuple[str, float]]:
        """(id, when it ended) of games to archive, by their end then id from just after
        ``after`` (an end and an id): ended before ``before`` (a time.time()), not archived,
        every game of their match over, and a ladder game counted in its ladder's books."""
        end, game_id = after
        return await self.store.query(
            "SELECT g.id, g.ended FROM games g JOIN matches m ON m.id = g.match_id "
            "WHERE g.archived = 0 AND g.ended < ? AND (g.ended > ? OR (g.ended = ? AND g.id > ?)) "
            "AND g.status IN (?, ?) "
            "AND NOT EXISTS (SELECT 1 FROM games h WHERE h.match_id = g.match_id "
            "AND h.status IN (?, ?)) "
            "AND (m.pair = '' OR EXISTS (SELECT 1 FROM ladder_games l WHERE l.game_id = g.id)) "
            f"ORDER BY g.ended, g.id LIMIT {int(limit)}",
            (before, end, end, game_id, *ENDED, *LIVE),
        )

    async def count_archivable(self, before: float) -> int:
        """About how many games :meth:`archivable` would give, all told."""
        rows = await self.store.query(
            "SELECT count(*) FROM games WHERE archived = 0 AND ended < ?", (before,)
        )
        return rows[0][0]

    async def journal_rows(self, game_ids: Sequence[str]) -> dict[str, list[tuple]]:
        """The journal rows ``(seq, type, time, data)`` of each of ``game_ids``, as stored."""
        out: dict[str, list[tuple]] = {game_id: [] for game_id in game_ids}
        for ids in chunks(game_ids):
            rows = await self.store.query(
                "SELECT game_id, seq, type, time, data FROM events "
                f"WHERE game_id IN ({marks(ids)}) ORDER BY game_id, seq",
                tuple(ids),
            )
            for game_id, *row in rows:
                out[game_id].append(tuple(row))
        return out


def _entry(seq: int, kind: int, t: float, data) -> tuple[int, int, float, dict]:
    """A journal row ``(seq, type, time, data)`` with its data decoded."""
    return seq, kind, t, journal.entry_of(data)


# -- the stores ---------------------------------------------------------------------------
class Worker:
    """A store's own thread: it runs the store's calls one at a time, in the order they
    were made, and wakes each caller's trio task with the outcome. Lighter than a
    ``trio.to_thread`` call per statement (a thread cache hand-over, a limiter and a
    context copy each): a turn's commit crosses threads twice either way. A call, once
    made, is seen through (not abandoned when its caller is cancelled)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._thread is None:  # started at the first call (a store may fail to open)
            self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
            self._thread.start()
        job = (fn, args, trio.lowlevel.current_trio_token(), trio.lowlevel.current_task())
        self._jobs.put(job)
        return await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.FAILED)

    def _main(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, token, task = job
            result = outcome.capture(fn, *args)
            with contextlib.suppress(trio.RunFinishedError):  # the caller's run is over
                token.run_sync_soon(trio.lowlevel.reschedule, task, result)

    def stop(self) -> None:
        """End the thread after the calls made so far."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None


class SQLStore:
    """A store over one DB-API connection, used from its own thread (:class:`Worker`).

    Subclasses connect, run a batch in a transaction (``_write_sync``) and a query
    (``_query_sync``); the version bookkeeping and migrations are shared.
    """

    name = ""
    order = "rowid"
    # one script of ';'-separated statements, or a list of statements (a function body)
    MIGRATIONS: dict[int, str | list[str]] = {}

    def __init__(self) -> None:
        self._worker = Worker("store")  # one statement at a time on the connection
        self.transactions = 0  # committed batches (group commit: far fewer than writes)
        self.writes = 0

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._worker.run(fn, *args)

    async def write(self, batch: Sequence[Write]) -> None:
        await self._run(self._write_sync, batch)
        self.transactions += 1
        self.writes += len(batch)

    async def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return await self._run(self._query_sync, sql, params)

    def _write_sync(self, batch: Sequence[Write]) -> None:
        raise NotImplementedError

    def _query_sync(self, sql: str, params: tuple) -> list[tuple]:
        raise NotImplementedError

    def _migrate(self, version: int) -> int:
        """Bring a database at ``version`` to SCHEMA_VERSION; return the version found."""
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.name}: its schema is version {version}, newer than this server "
                f"understands ({SCHEMA_VERSION}); upgrade nardy to use this database"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            script = self.MIGRATIONS[step]
            statements = script if isinstance(script, list) else script.split(";")
            self._write_sync(
                [(sql, ()) for sql in statements if sql.strip()]
                + [("UPDATE nardy_schema SET version=?", (step,))]
            )
        return version


def folded_names(order: str) -> list[str]:
    """Migration 7, the same in both stores (``order``: the column that keeps insertion
    order): player names unique whatever their case in the store too, so that two
    instances registering ``Bob`` and ``bob`` at once cannot both succeed. A name with an
    older twin (only such a race made one) is renamed first: its first 31 characters, a
    dash and the start of its id."""
    return [
        "UPDATE players SET name = substr(name, 1, 31) || '-' || substr(id, 1, 8) "
        "WHERE EXISTS (SELECT 1 FROM players o WHERE lower(o.name) = lower(players.name) "
        f"AND o.{order} < players.{order})",
        "CREATE UNIQUE INDEX IF NOT EXISTS players_folded_name ON players (lower(name))",
    ]


# Migration 6's indexes, the same in both stores (live games by status, a match's games,
# games to archive by when they ended, a duplicate pair's matches), and each ladder's books
# as of its ``counted``-th result, the last of them ``last`` (server.core.ladders).
RETENTION_SCHEMA = [
    "CREATE INDEX IF NOT EXISTS games_status ON games (status)",
    "CREATE INDEX IF NOT EXISTS games_match ON games (match_id)",
    "CREATE INDEX IF NOT EXISTS games_archivable ON games (archived, ended)",
    "CREATE INDEX IF NOT EXISTS matches_pair ON matches (pair)",
    """CREATE TABLE IF NOT EXISTS ladder_books (
    ladder TEXT PRIMARY KEY, counted INTEGER NOT NULL, last TEXT NOT NULL, books TEXT NOT NULL)""",
]

SQLITE_MIGRATIONS = {
    1: """
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, bot INTEGER NOT NULL,
    token_hash TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',
    created REAL DEFAULT (unixepoch('subsec')));
CREATE TABLE IF NOT EXISTS seat_tokens (
    match_id TEXT NOT NULL, seat INTEGER NOT NULL, token_hash TEXT NOT NULL,
    PRIMARY KEY (match_id, seat));
CREATE TABLE IF NOT EXISTS matches (
    id TEXT PRIMARY KEY, target INTEGER NOT NULL, options TEXT NOT NULL, seats TEXT NOT NULL,
    seed INTEGER, script TEXT NOT NULL DEFAULT '[]', start TEXT NOT NULL DEFAULT '',
    scores TEXT NOT NULL DEFAULT '[0,0]',
    created REAL DEFAULT (unixepoch('subsec')));
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY, match_id TEXT NOT NULL REFERENCES matches(id), number INTEGER NOT NULL,
    status INTEGER NOT NULL, white_seat INTEGER, result TEXT,
    created REAL DEFAULT (unixepoch('subsec')));
CREATE TABLE IF NOT EXISTS ladders (name TEXT PRIMARY KEY, options TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ladder_members (
    ladder TEXT NOT NULL, player_id TEXT NOT NULL, ready INTEGER NOT NULL,
    PRIMARY KEY (ladder, player_id));
CREATE TABLE IF NOT EXISTS ladder_games (
    ladder TEXT NOT NULL, game_id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    game_id TEXT NOT NULL REFERENCES games(id), seq INTEGER NOT NULL, type INTEGER NOT NULL,
    time REAL NOT NULL, data BLOB NOT NULL, PRIMARY KEY (game_id, seq)) WITHOUT ROWID
""",
    # provably fair dice: each game's secret server seed (revealed when it ends)
    2: "ALTER TABLE games ADD COLUMN server_seed TEXT NOT NULL DEFAULT ''",
    # ended matches' seat tokens are looked up here, not kept in memory
    3: "CREATE INDEX IF NOT EXISTS seat_tokens_hash ON seat_tokens (token_hash)",
    # PostgreSQL's instances and leases (server/cluster.py); one SQLite file has one server
    4: "",
    # a seat counts as its match's creator for limits (server.core.arbiter.Principal)
    5: "ALTER TABLE seat_tokens ADD COLUMN creator TEXT NOT NULL DEFAULT ''",
    # retention: when each game ended, archived games (server/core/retention.py), and the
    # indexes a restart reads what is live by (it reads nothing of the rest)
    6: [
        "ALTER TABLE games ADD COLUMN ended REAL",
        "ALTER TABLE games ADD COLUMN archived INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE matches ADD COLUMN pair TEXT NOT NULL DEFAULT ''",
        "UPDATE matches SET pair = COALESCE(json_extract(options, '$.pair_id'), '') "
        "WHERE options LIKE '%pair_id%'",
        "UPDATE games SET ended = (SELECT e.time FROM events e WHERE e.game_id = games.id "
        "ORDER BY e.seq DESC LIMIT 1) WHERE status IN (3, 4)",
        *RETENTION_SCHEMA,
        """CREATE TABLE IF NOT EXISTS archive (
    game_id TEXT PRIMARY KEY REFERENCES games(id), format INTEGER NOT NULL,
    entries INTEGER NOT NULL, at REAL NOT NULL, journal BLOB NOT NULL)""",
    ],
    # player names unique whatever their case in the store too
    7: folded_names("rowid"),
}


class SQLiteStore(SQLStore):
    """The embedded default: one SQLite file in WAL mode (synchronous=NORMAL survives a
    killed process). Databases from before versioning (tables, no ``nardy_schema``) are
    version 0 and migrate in place."""

    MIGRATIONS = SQLITE_MIGRATIONS

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = self.name = path
        self._lock = self._claim(path)
        try:
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            check = self.db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check}")
            self.db.execute("CREATE TABLE IF NOT EXISTS nardy_schema (version INTEGER NOT NULL)")
            row = self.db.execute("SELECT version FROM nardy_schema").fetchone()
            if row is None:
                self.db.execute("INSERT INTO nardy_schema VALUES (0)")
            self._migrate(row[0] if row else 0)
        except sqlite3.Error as e:
            self._unlock()
            raise StoreError(f"{path}: not a usable nardy database ({e})") from None
        except BaseException:
            self._unlock()
            raise

    @staticmethod
    def _claim(path: str) -> int | None:
        """Lock ``path``'s lock file: one server runs a database's games (two would both
        resume every game in progress). The kernel drops the lock when the process dies."""
        if path == ":memory:" or path.startswith("file:"):
            return None
        try:
            fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StoreError(f"{path}: cannot create its lock file ({e})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreError(
                f"{path}: another nardy server is running this database's games; "
                "stop it first (one server per database)"
            ) from None
        return fd

    def _write_sync(self, batch: Sequence[Write]) -> None:
        """One transaction; a failure (read-only file, full disk) becomes UNAVAILABLE."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                run_batch(self.db, batch)
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # (a failed COMMIT may have ended it: the cause stands)
                    with contextlib.suppress(sqlite3.Error):
                        self.db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise StoreError(
                f"cannot store data in {self.path} ({e}); nothing was changed"
            ) from None

    def _query_sync(self, sql: str, params: tuple) -> list[tuple]:
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise StoreError(f"cannot read {self.path} ({e})") from None

    async def close(self) -> None:
        await self._run(self.db.close)
        self._worker.stop()
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
