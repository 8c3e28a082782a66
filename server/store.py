"""The arbiter's journal: players, matches, games and every event, in SQLite (WAL).

:class:`Store` is the interface the core writes through; :class:`SQLiteStore` is the
embedded default. Each write commits before the call returns, so a play is on disk before
the player is told it was accepted (WAL with synchronous=NORMAL survives a killed process).
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict
from typing import TYPE_CHECKING, Protocol

from server import journal
from server.errors import ArbiterError, Code

if TYPE_CHECKING:
    from server.ladder import LadderGame, LadderOptions
    from server.session import Event, GameSession, MatchSession

SCHEMA = """
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
    created REAL DEFAULT (unixepoch('subsec')), server_seed TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS ladders (name TEXT PRIMARY KEY, options TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ladder_members (
    ladder TEXT NOT NULL, player_id TEXT NOT NULL, ready INTEGER NOT NULL,
    PRIMARY KEY (ladder, player_id));
CREATE TABLE IF NOT EXISTS ladder_games (
    ladder TEXT NOT NULL, game_id TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    game_id TEXT NOT NULL REFERENCES games(id), seq INTEGER NOT NULL, type INTEGER NOT NULL,
    time REAL NOT NULL, data BLOB NOT NULL, PRIMARY KEY (game_id, seq)) WITHOUT ROWID;
"""


class Store(Protocol):
    path: str

    def add_player(
        self, player_id: str, name: str, bot: bool, token_hash: str, owner: str = ""
    ) -> None: ...
    def add_seat_token(self, match_id: str, seat: int, token_hash: str) -> None: ...
    def add_match(self, match: MatchSession) -> None: ...
    def update_match(self, match: MatchSession) -> None: ...
    def add_game(self, game: GameSession) -> None: ...
    def update_game(self, game: GameSession) -> None: ...
    def append_event(self, game: GameSession, event: Event) -> None: ...
    def set_player_token(self, player_id: str, token_hash: str) -> None: ...
    def accept_challenge(self, match_id: str) -> None: ...
    def get_setting(self, key: str) -> str | None: ...
    def set_setting(self, key: str, value: str) -> None: ...
    def load_players(self) -> list[tuple[str, str, int, str, str]]: ...
    def add_ladder(self, name: str, options: LadderOptions) -> None: ...
    def set_ladder_member(self, ladder: str, player_id: str, ready: bool) -> None: ...
    def add_ladder_game(self, ladder: str, record: LadderGame) -> None: ...
    def load_ladders(self) -> list[tuple[str, dict]]: ...
    def load_ladder_games(self, ladder: str) -> list[dict]: ...
    def load_ladder_members(self, ladder: str) -> list[tuple[str, int]]: ...
    def close(self) -> None: ...


class StoreError(ArbiterError):
    """The store cannot be read or written; the server refuses changes rather than lose data."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.UNAVAILABLE, message)


class SQLiteStore:
    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            check = self.db.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"integrity check failed: {check}")
            self.db.executescript(SCHEMA)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(games)")}
            if "server_seed" not in columns:  # a database from before provably fair dice
                self.db.execute("ALTER TABLE games ADD COLUMN server_seed TEXT NOT NULL DEFAULT ''")
        except sqlite3.Error as e:
            raise StoreError(f"{path}: not a usable nardy database ({e})") from None

    def _write(self, sql: str, params: tuple = ()) -> None:
        """One committed write; a failure (read-only file, full disk) becomes UNAVAILABLE."""
        try:
            self.db.execute(sql, params)
        except sqlite3.Error as e:
            raise StoreError(
                f"cannot store data in {self.path} ({e}); nothing was changed"
            ) from None

    def add_player(
        self, player_id: str, name: str, bot: bool, token_hash: str, owner: str = ""
    ) -> None:
        self._write(
            "INSERT INTO players (id, name, bot, token_hash, owner) VALUES (?,?,?,?,?)",
            (player_id, name, int(bot), token_hash, owner),
        )

    def add_seat_token(self, match_id: str, seat: int, token_hash: str) -> None:
        self._write("INSERT INTO seat_tokens VALUES (?,?,?)", (match_id, seat, token_hash))

    def add_match(self, match: MatchSession) -> None:
        self._write(
            "INSERT INTO matches (id, target, options, seats, seed, script, start) "
            "VALUES (?,?,?,?,?,?,?)",
            journal.encode_match(match),
        )

    def update_match(self, match: MatchSession) -> None:
        self._write(
            "UPDATE matches SET scores=? WHERE id=?",
            (journal.encode_json(match.match.scores), match.id),
        )

    def add_game(self, game: GameSession) -> None:
        self._write(
            "INSERT INTO games (id, match_id, number, status, server_seed) VALUES (?,?,?,?,?)",
            (game.id, game.match.id, game.number, int(game.status), game.roller.server_seed.hex()),
        )

    def update_game(self, game: GameSession) -> None:
        self._write(
            "UPDATE games SET status=?, white_seat=?, result=? WHERE id=?",
            (int(game.status), game.white_seat, journal.encode_game_result(game.result), game.id),
        )

    def append_event(self, game: GameSession, event: Event) -> None:
        self._write(
            "INSERT INTO events VALUES (?,?,?,?,?)",
            (
                game.id,
                event.seq,
                int(event.type),
                event.time,
                journal.encode_event(event, game.white_seat, game.roller.rolled),
            ),
        )

    def set_player_token(self, player_id: str, token_hash: str) -> None:
        self._write("UPDATE players SET token_hash=? WHERE id=?", (token_hash, player_id))

    def accept_challenge(self, match_id: str) -> None:
        self._write(
            "UPDATE matches SET options=json_set(options, '$.challenged', NULL) WHERE id=?",
            (match_id,),
        )

    def get_setting(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_setting(self, key: str, value: str) -> None:
        self._write("INSERT OR REPLACE INTO settings VALUES (?,?)", (key, value))

    def load_players(self) -> list[tuple[str, str, int, str, str]]:
        return self.db.execute(
            "SELECT id, name, bot, token_hash, owner FROM players ORDER BY rowid"
        ).fetchall()

    # -- ladders ------------------------------------------------------------------------
    def add_ladder(self, name: str, options: LadderOptions) -> None:
        self._write(
            "INSERT INTO ladders VALUES (?,?)", (name, journal.encode_json(asdict(options)))
        )

    def set_ladder_member(self, ladder: str, player_id: str, ready: bool) -> None:
        self._write(
            "INSERT OR REPLACE INTO ladder_members VALUES (?,?,?)", (ladder, player_id, int(ready))
        )

    def add_ladder_game(self, ladder: str, record: LadderGame) -> None:
        self._write(
            "INSERT OR REPLACE INTO ladder_games VALUES (?,?,?)",
            (ladder, record.game_id, journal.encode_ladder_game(record)),
        )

    def load_ladders(self) -> list[tuple[str, dict]]:
        rows = self.db.execute("SELECT name, options FROM ladders ORDER BY rowid").fetchall()
        return [(name, journal.decode_json(options)) for name, options in rows]

    def load_ladder_games(self, ladder: str) -> list[dict]:
        rows = self.db.execute(
            "SELECT record FROM ladder_games WHERE ladder=? ORDER BY rowid", (ladder,)
        ).fetchall()
        return [journal.decode_ladder_game(text) for (text,) in rows]

    def load_ladder_members(self, ladder: str) -> list[tuple[str, int]]:
        return self.db.execute(
            "SELECT player_id, ready FROM ladder_members WHERE ladder=?", (ladder,)
        ).fetchall()

    # -- recovery -----------------------------------------------------------------------
    def load_matches(self) -> list[dict]:
        cols = ", ".join(journal.MATCH_COLUMNS)
        rows = self.db.execute(f"SELECT {cols} FROM matches ORDER BY rowid").fetchall()
        return [journal.decode_match(row) for row in rows]

    def load_games(self, match_id: str) -> list[tuple[str, int, str]]:
        """(id, number, server seed in hex) of each game of a match, in order."""
        return self.db.execute(
            "SELECT id, number, server_seed FROM games WHERE match_id=? ORDER BY number",
            (match_id,),
        ).fetchall()

    def load_events(self, game_id: str) -> list[tuple[int, int, float, dict]]:
        rows = self.db.execute(
            "SELECT seq, type, time, data FROM events WHERE game_id=? ORDER BY seq", (game_id,)
        ).fetchall()
        return [(seq, kind, t, journal.entry_of(data)) for seq, kind, t, data in rows]

    def load_seat_tokens(self) -> list[tuple[str, int, str]]:
        return self.db.execute("SELECT match_id, seat, token_hash FROM seat_tokens").fetchall()

    def close(self) -> None:
        self.db.close()
