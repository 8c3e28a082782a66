"""The statements the core writes to its store, each built from what it stores (the SQL
both SQLite and PostgreSQL speak: server.core.store)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from server.core import journal
from server.core.journal import Status
from server.core.store import Write

if TYPE_CHECKING:
    from server.core.ladder import LadderGame, LadderOptions
    from server.core.match import MatchSession
    from server.core.session import GameSession


def add_player(player_id: str, name: str, bot: bool, token_hash: str, owner: str = "") -> Write:
    return (
        "INSERT INTO players (id, name, bot, token_hash, owner, created) VALUES (?,?,?,?,?,?)",
        (player_id, name, int(bot), token_hash, owner, time.time()),
    )


def set_player_token(player_id: str, token_hash: str) -> Write:
    return ("UPDATE players SET token_hash=? WHERE id=?", (token_hash, player_id))


def set_setting(key: str, value: str) -> Write:
    return (
        "INSERT INTO settings (key, value) VALUES (?,?) "
        "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
        (key, value),
    )


def add_seat_token(match_id: str, seat: int, token_hash: str, creator: str) -> Write:
    return (
        "INSERT INTO seat_tokens (match_id, seat, token_hash, creator) VALUES (?,?,?,?)",
        (match_id, seat, token_hash, creator),
    )


def add_match(match: MatchSession) -> Write:
    return (
        f"INSERT INTO matches ({', '.join(journal.MATCH_COLUMNS)}, pair, created) "
        "VALUES (?,?,?,?,?,?,?,?,?)",
        (*journal.encode_match(match), match.pair_id, time.time()),
    )


def update_match_options(match: MatchSession) -> Write:
    """The options column again (a challenge accepted)."""
    return ("UPDATE matches SET options=? WHERE id=?", (journal.encode_match(match)[2], match.id))


def update_match(match: MatchSession) -> Write:
    return (
        "UPDATE matches SET scores=? WHERE id=?",
        (journal.encode_json(match.match.scores), match.id),
    )


def add_game(game: GameSession) -> Write:
    return (
        "INSERT INTO games (id, match_id, number, status, server_seed, created) "
        "VALUES (?,?,?,?,?,?)",
        (
            game.id,
            game.match.id,
            game.number,
            int(game.status),
            game.roller.server_seed.hex(),
            time.time(),
        ),
    )


def update_game(game: GameSession) -> Write:
    """The game's status and result; when it ended, the first time it is seen ended."""
    ended = time.time() if game.status in (Status.FINISHED, Status.ABORTED) else None
    return (
        "UPDATE games SET status=?, white_seat=?, result=?, ended=COALESCE(ended, ?) WHERE id=?",
        (
            int(game.status),
            game.white_seat,
            journal.encode_game_result(game.result),
            ended,
            game.id,
        ),
    )


def append_event(game: GameSession, event: journal.Event) -> Write:
    data = journal.encode_event(event, game.white_seat, game.roller.rolled)
    return (
        "INSERT INTO events (game_id, seq, type, time, data) VALUES (?,?,?,?,?)",
        (game.id, event.seq, int(event.type), event.time, data),
    )


def add_ladder(name: str, options: LadderOptions) -> Write:
    return (
        "INSERT INTO ladders (name, options) VALUES (?,?)",
        (name, journal.encode_json(asdict(options))),
    )


def set_ladder_member(ladder: str, player_id: str, ready: bool) -> Write:
    """A member ready (``ready`` counts its JoinLadder{ready: true} in a row, so that every
    instance sees a bot say it again) or not (0)."""
    return (
        "INSERT INTO ladder_members (ladder, player_id, ready) VALUES (?,?,?) "
        "ON CONFLICT (ladder, player_id) DO UPDATE SET ready=CASE WHEN excluded.ready=0 "
        "THEN 0 ELSE ladder_members.ready + 1 END",
        (ladder, player_id, int(ready)),
    )


def add_ladder_game(ladder: str, record: LadderGame) -> Write:
    return (
        "INSERT INTO ladder_games (ladder, game_id, record) VALUES (?,?,?) "
        "ON CONFLICT (game_id) DO UPDATE SET record=excluded.record",
        (ladder, record.game_id, journal.encode_ladder_game(record)),
    )


def archive_games(packed: list[tuple[str, int, bytes]], at: float) -> list[Write]:
    """Archive ended games: each one's journal packed (game id, entries, the packed
    journal: server.core.journal.pack_entries) into ``archive``, and its events but the
    last (its final state, which ended games are read back from) pruned. A game archived
    already (by another instance) keeps its archive as it is."""
    return [
        *(
            (
                "INSERT INTO archive (game_id, format, entries, at, journal) VALUES (?,?,?,?,?) "
                "ON CONFLICT (game_id) DO NOTHING",
                (game_id, journal.ARCHIVE_FORMAT, entries, at, data),
            )
            for game_id, entries, data in packed
        ),
        *(
            ("DELETE FROM events WHERE game_id=? AND seq<?", (game_id, entries))
            for game_id, entries, _ in packed
        ),
        *(("UPDATE games SET archived=1 WHERE id=?", (game_id,)) for game_id, _, _ in packed),
    ]


def set_ladder_books(ladder: str, counted: int, last: str, books: dict) -> Write:
    """A ladder's books as of its ``counted``-th record, the game ``last``."""
    return (
        "INSERT INTO ladder_books (ladder, counted, last, books) VALUES (?,?,?,?) "
        "ON CONFLICT (ladder) DO UPDATE SET counted=excluded.counted, last=excluded.last, "
        "books=excluded.books",
        (ladder, counted, last, journal.encode_json(books)),
    )


def drop_ladder_books(ladder: str) -> Write:
    """A ladder's stored books no longer hold (a result voided): counted again from every
    record at the next restart."""
    return ("DELETE FROM ladder_books WHERE ladder=?", (ladder,))
