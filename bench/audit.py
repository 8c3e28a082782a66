"""Nothing lost: what the bots were told (bench.notingbot's notes) against the journal.

Read after the servers have stopped, from the database itself (SQLite file or PostgreSQL
URL): every play acknowledged to a bot must be a PLAY_MADE of that turn with that notation;
every game a bot saw end must be in the store, ended, with the result it was told; no turn
is journaled twice; the ladder counts every finished game once. Shared by bench.soak and
bench.failover.
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from pathlib import Path

from nardy.v1 import game_pb2 as pb
from server.core.journal import EventType, Status, entry_of

WINNER = {pb.COLOR_WHITE: "w", pb.COLOR_BLACK: "b"}


def termination_name(value: int) -> str:
    """A pb.Termination as the journal writes it (TERMINATION_ILLEGAL_PLAYS -> illegal-plays)."""
    return pb.Termination.Name(value).removeprefix("TERMINATION_").lower().replace("_", "-")


def read_notes(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """Every note of the files: (plays acknowledged, games seen ending)."""
    plays, ends = [], []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if not line.endswith("}"):
                continue  # (a line cut by a kill)
            note = json.loads(line)
            (plays if note["k"] == "play" else ends).append(note)
    return plays, ends


def rows(db: str, sql: str) -> list[tuple]:
    """A query's rows from the SQLite file or PostgreSQL database ``db``."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return conn.execute(sql).fetchall()
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


@dataclass
class Audit:
    acknowledged: int = 0  # plays acknowledged to the bots
    missing: int = 0  # ... of which not in the journal as acknowledged
    twice: int = 0  # turns journaled more than once (all games)
    seen_ended: int = 0  # games the bots saw end
    ended_missing: int = 0  # ... not ended in the store with the result they were told
    games: int = 0  # games in the store
    unfinished: int = 0  # games neither finished nor aborted
    aborted: int = 0
    terminations: collections.Counter = field(default_factory=collections.Counter)
    ladder_counted: int = 0  # finished ladder games (not voided) in the ladder's books
    uncounted: int = 0  # games the bots saw finish in a ladder, missing from its books
    examples: list[str] = field(default_factory=list)  # a few of what went wrong

    @property
    def lost(self) -> int:
        return self.missing + self.twice + self.ended_missing + self.uncounted

    def note(self, what: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(what)


def audit(db: str, notes: list[Path], ladder: str = "") -> Audit:
    """The notes of ``notes`` against the journal of ``db`` (``ladder``: its books too)."""
    plays, ends = read_notes(notes)
    a = Audit(acknowledged=len(plays))
    games = {
        g: (status, result)
        for g, status, result in rows(db, "SELECT id, status, result FROM games")
    }
    a.games = len(games)
    for status, result in games.values():
        if status == Status.ABORTED:
            a.aborted += 1
        elif status != Status.FINISHED:
            a.unfinished += 1
        elif result:
            a.terminations[json.loads(result)["termination"]] += 1
    journal: dict[tuple[str, int], list[str]] = collections.defaultdict(list)
    for game_id, data in rows(
        db, f"SELECT game_id, data FROM events WHERE type = {EventType.PLAY_MADE:d}"
    ):
        play = entry_of(data)["play"]
        journal[(game_id, play[3])].append(play[2])
    a.twice = sum(len(v) - 1 for v in journal.values())
    for p in plays:
        if journal.get((p["g"], p["turn"]), [None])[0] != p["n"]:
            a.missing += 1
            a.note(f"game {p['g']} turn {p['turn']}: {p['n']} acknowledged, not journaled")
    booked: set[str] = set()
    if ladder:
        for game_id, record in rows(
            db, f"SELECT game_id, record FROM ladder_games WHERE ladder = '{ladder}'"
        ):
            if not json.loads(record)["voided"]:
                booked.add(game_id)
        a.ladder_counted = len(booked)
    seen: dict[str, dict] = {}
    for e in ends:
        seen.setdefault(e["g"], e)
    a.seen_ended = len(seen)
    for game_id, e in seen.items():
        status, result = games.get(game_id, (None, None))
        if e["type"] == pb.EVENT_TYPE_GAME_ABORTED:
            ok = status == Status.ABORTED
        else:
            r = json.loads(result) if result else {}
            told = (WINNER.get(e["winner"]), e["points"], termination_name(e["term"]))
            ok = status == Status.FINISHED and told == (
                r.get("winner"),
                r.get("points"),
                r.get("termination"),
            )
            if ladder and game_id not in booked:
                a.uncounted += 1
                a.note(f"game {game_id}: seen finished, not in the ladder's books")
        if not ok:
            a.ended_missing += 1
            a.note(f"game {game_id}: seen ending {e}, the store has {status} {result}")
    return a
