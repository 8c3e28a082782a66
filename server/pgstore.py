"""The PostgreSQL store (psycopg 3): the same journal as SQLite, for several instances.

``nardy serve --db postgresql://user@host:port/dbname``. The connection lives in the
store's worker thread like SQLite's (the core never waits on it); a lost connection is
opened again on the next batch, and the batch that met the loss fails with StoreError
(the play is refused, nothing half-written). Schema creation and migration run under a
PostgreSQL advisory lock, so instances starting together migrate once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

import psycopg

from server.store import SQLStore, StoreError, Write, run_batch

MIGRATE_LOCK = 0x6E61_7264_7901  # advisory lock key: "nardy" schema migration
SERVER_LOCK = 0x6E61_7264_7902  # held by the one server running this database's games
SERVER_LOCK_WAIT_S = 10.0  # a killed server's session may take a moment to go away

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
        self._claim(SERVER_LOCK_WAIT_S)

    def _claim(self, wait_s: float) -> None:
        """Hold the server lock: one server runs a database's games (two would both
        resume every game in progress). Refused clearly when another server holds it."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                row = self.db.execute("SELECT pg_try_advisory_lock(%s)", (SERVER_LOCK,)).fetchone()
            except psycopg.Error as e:
                raise StoreError(f"{self.name}: cannot lock the database ({e})") from None
            if row[0]:
                return
            if time.monotonic() >= deadline:
                self.db.close()
                raise StoreError(
                    f"{self.name}: another nardy server is running this database's games; "
                    "stop it first (one server per database)"
                )
            time.sleep(0.2)

    def _connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise StoreError(f"{self.name}: cannot connect ({e})".strip()) from None

    def _conn(self) -> psycopg.Connection:
        if self.db.closed or self.db.broken:  # reconnect, and hold the server lock again
            self.db = self._connect()
            self._claim(0.0)
        return self.db

    def _write_sync(self, batch: Sequence[Write]) -> None:
        try:
            db = self._conn()
            with db.transaction(), db.cursor() as cur:
                run_batch(cur, batch, "%s")
        except psycopg.Error as e:
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
