"""The PostgreSQL store (psycopg 3): the same journal as SQLite, for several instances.

``nardy serve --db postgresql://user@host:port/dbname``. The connection lives in the
store's worker thread like SQLite's (the core never waits on it); a lost connection is
opened again on the next batch, and the batch that met the loss fails with StoreError
(the play is refused, nothing half-written). Schema creation and migration run under a
PostgreSQL advisory lock, so instances starting together migrate once. Several instances
may serve one database: who runs which match is settled by leases (server/cluster.py),
and a write fenced by a lease this instance lost fails with LeaseLost.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

import psycopg

from server.core.store import (
    RETENTION_SCHEMA,
    LeaseLost,
    SQLStore,
    StoreError,
    Write,
    folded_names,
    run_batch,
)

MIGRATE_LOCK = 0x6E61_7264_7901  # advisory lock key: "nardy" schema migration
FENCED = "NRD01"  # the SQLSTATE nardy_fence raises: the lease is no longer the writer's

POSTGRES_MIGRATIONS = {
    1: """
CREATE TABLE IF NOT EXISTS players (
    n BIGSERIAL, id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, bot INTEGER NOT NULL,
    token_hash TEXT NOT NULL, owner TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION DEFAULT extract(epoch FROM now()));
CREATE TABLE IF NOT EXISTS seat_tokens (
    match_id TEXT NOT NULL, seat INTEGER NOT NULL, token_hash TEXT NOT NULL,
    PRIMARY KEY (match_id, seat));
CREATE TABLE IF NOT EXISTS matches (
    n BIGSERIAL, id TEXT PRIMARY KEY, target INTEGER NOT NULL, options TEXT NOT NULL,
    seats TEXT NOT NULL, seed BIGINT, script TEXT NOT NULL DEFAULT '[]',
    start TEXT NOT NULL DEFAULT '', scores TEXT NOT NULL DEFAULT '[0,0]',
    created DOUBLE PRECISION DEFAULT extract(epoch FROM now()));
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY, match_id TEXT NOT NULL REFERENCES matches(id), number INTEGER NOT NULL,
    status INTEGER NOT NULL, white_seat INTEGER, result TEXT,
    created DOUBLE PRECISION DEFAULT extract(epoch FROM now()));
CREATE TABLE IF NOT EXISTS ladders (n BIGSERIAL, name TEXT PRIMARY KEY, options TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ladder_members (
    ladder TEXT NOT NULL, player_id TEXT NOT NULL, ready INTEGER NOT NULL,
    PRIMARY KEY (ladder, player_id));
CREATE TABLE IF NOT EXISTS ladder_games (
    n BIGSERIAL, ladder TEXT NOT NULL, game_id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    game_id TEXT NOT NULL REFERENCES games(id), seq INTEGER NOT NULL, type INTEGER NOT NULL,
    time DOUBLE PRECISION NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (game_id, seq))
""",
    # provably fair dice: each game's secret server seed (revealed when it ends)
    2: "ALTER TABLE games ADD COLUMN server_seed TEXT NOT NULL DEFAULT ''",
    # ended matches' seat tokens are looked up here, not kept in memory
    3: "CREATE INDEX IF NOT EXISTS seat_tokens_hash ON seat_tokens (token_hash)",
    # several instances (server/cluster.py): each instance's heartbeat row, and one lease
    # per unfinished match naming its owner and an epoch that every journal write checks
    4: [
        """CREATE TABLE IF NOT EXISTS instances (
    id TEXT PRIMARY KEY, address TEXT NOT NULL, started DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS leases (
    match_id TEXT PRIMARY KEY REFERENCES matches(id), grp TEXT NOT NULL, owner TEXT NOT NULL,
    epoch BIGINT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS leases_owner ON leases (owner)",
        "CREATE INDEX IF NOT EXISTS games_match ON games (match_id)",
        # any instance answers any token: it looks unknown ones up here
        "CREATE INDEX IF NOT EXISTS players_token ON players (token_hash)",
        # a database from one server: its unfinished matches, owned by nobody (taken at once)
        """INSERT INTO leases (match_id, grp, owner, epoch)
    SELECT m.id, COALESCE(NULLIF(m.options::json->>'pair_id', ''), m.id), '', 0
    FROM matches m
    WHERE EXISTS (SELECT 1 FROM games g WHERE g.match_id = m.id AND g.status IN (1, 2))
    ON CONFLICT DO NOTHING""",
        # the fence ('%%' is psycopg's escape of '%'): in the writer's transaction, fail
        # unless the lease is still ours at this epoch; FOR SHARE holds off a takeover
        # until the transaction ends
        f"""CREATE OR REPLACE FUNCTION nardy_fence(m TEXT, o TEXT, e BIGINT) RETURNS integer
AS $$
BEGIN
    PERFORM 1 FROM leases WHERE match_id = m AND owner = o AND epoch = e FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'match %% is no longer run by this instance (taken over)', m
            USING ERRCODE = '{FENCED}';
    END IF;
    RETURN 1;
END
$$ LANGUAGE plpgsql""",
    ],
    # a seat counts as its match's creator for limits (server.core.arbiter.Principal)
    5: "ALTER TABLE seat_tokens ADD COLUMN creator TEXT NOT NULL DEFAULT ''",
    # retention (as SQLite's), and the newest matches by insertion order
    6: [
        "ALTER TABLE games ADD COLUMN ended DOUBLE PRECISION",
        "ALTER TABLE games ADD COLUMN archived INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE matches ADD COLUMN pair TEXT NOT NULL DEFAULT ''",
        "UPDATE matches SET pair = COALESCE(options::json->>'pair_id', '') "
        "WHERE options LIKE '%%pair_id%%'",
        "UPDATE games g SET ended = (SELECT e.time FROM events e WHERE e.game_id = g.id "
        "ORDER BY e.seq DESC LIMIT 1) WHERE g.status IN (3, 4)",
        *RETENTION_SCHEMA,
        "CREATE INDEX IF NOT EXISTS matches_n ON matches (n)",
        """CREATE TABLE IF NOT EXISTS archive (
    game_id TEXT PRIMARY KEY REFERENCES games(id), format INTEGER NOT NULL,
    entries INTEGER NOT NULL, at DOUBLE PRECISION NOT NULL, journal BYTEA NOT NULL)""",
    ],
    # player names unique whatever their case in the store too
    7: folded_names("n"),
}


def redact(url: str) -> str:
    """``url`` without its password, for logs and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


class PostgresStore(SQLStore):
    order = "n"
    MIGRATIONS = POSTGRES_MIGRATIONS

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.name = redact(url)
        self.db = self._connect()
        try:
            self.db.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
            try:
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS nardy_schema (version INTEGER NOT NULL)"
                )
                row = self.db.execute("SELECT version FROM nardy_schema").fetchone()
                if row is None:
                    self.db.execute("INSERT INTO nardy_schema VALUES (0)")
                self._migrate(row[0] if row else 0)
            finally:
                self.db.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))
        except psycopg.Error as e:
            self.db.close()
            raise StoreError(f"{self.name}: not a usable nardy database ({e})") from None
        except StoreError:
            self.db.close()
            raise

    def _connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise StoreError(f"{self.name}: cannot connect ({e})".strip()) from None

    def _conn(self) -> psycopg.Connection:
        if self.db.closed or self.db.broken:
            self.db = self._connect()
        return self.db

    def _write_sync(self, batch: Sequence[Write]) -> None:
        try:
            db = self._conn()
            with db.transaction(), db.cursor() as cur:
                run_batch(cur, batch, "%s")
        except psycopg.Error as e:
            if e.sqlstate == FENCED:
                raise LeaseLost(str(e).strip().splitlines()[0]) from None
            raise StoreError(
                f"cannot store data in {self.name} ({str(e).strip()}); nothing was changed"
            ) from None

    def _query_sync(self, sql: str, params: tuple) -> list[tuple]:
        try:
            return self._conn().execute(sql.replace("?", "%s"), params).fetchall()
        except psycopg.Error as e:
            raise StoreError(f"cannot read {self.name} ({str(e).strip()})") from None

    async def close(self) -> None:
        await self._run(self.db.close)
        self._worker.stop()
