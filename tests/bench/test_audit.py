"""The soak's and the failover drill's "nothing lost" check can fail: a game played by the
noting bot's client (bench.notingbot) over both transports on a real server and SQLite
file audits clean, and a play or a result taken out of the journal afterwards is found."""

from __future__ import annotations

import sqlite3

import trio

from bench.audit import audit
from bench.notingbot import Notes, NotingClient
from nardy.client import PLAY, UNARY, Client, play_game
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.core.journal import EventType, entry_of
from tests.server.conftest import random_engine


async def test_the_audit_finds_a_lost_play_and_a_changed_result(tmp_path):
    db = tmp_path / "audit.db"
    notes = [tmp_path / "white.notes", tmp_path / "black.notes"]
    with EmbeddedServer(db=str(db)) as server:
        async with Client(server.address, server.admin_token) as op:
            r = await op.create_match(options=pb.GameOptions(turn_time_ms=30_000))

        async def seat(i: int, token: str) -> None:
            with open(notes[i], "a") as out:
                how = PLAY if i == 0 else UNARY
                async with NotingClient(Notes(out), server.address, token, transport=how) as c:
                    await play_game(c, r.game_id, random_engine(i))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(seat, 0, r.first_seat_token)
            nursery.start_soon(seat, 1, r.second_seat_token)

    clean = audit(str(db), notes)
    assert clean.acknowledged > 10 and clean.seen_ended == 1 and clean.lost == 0
    assert clean.games == 1 and clean.unfinished == 0 and sum(clean.terminations.values()) == 1

    with sqlite3.connect(db) as conn:  # one acknowledged play goes missing
        plays = conn.execute(
            "SELECT game_id, seq, data FROM events WHERE type = ? ORDER BY seq",
            (EventType.PLAY_MADE,),
        ).fetchall()
        game_id, seq = next((g, q) for g, q, d in plays if not entry_of(d)["play"][4])
        conn.execute("DELETE FROM events WHERE game_id = ? AND seq = ?", (game_id, seq))
    assert audit(str(db), notes).missing == 1
    with sqlite3.connect(db) as conn:  # and the result is not the one the seats were told
        conn.execute("UPDATE games SET result = replace(result, 'normal', 'timeout')")
    assert audit(str(db), notes).ended_missing == 1
