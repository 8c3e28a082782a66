"""Bad stores: a corrupted database or one with a newer schema is refused clearly; an old one
is migrated; an unwritable one refuses new games and plays with UNAVAILABLE instead of losing
data, and the server stays up (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import grpc
import pytest
import trio

from nardy.client import Client
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.core.journal import EventType
from server.core.store import SCHEMA_VERSION, SQLITE_MIGRATIONS, SQLiteStore, StoreError
from tests.server.conftest import execute
from tests.server.test_journal import journal_rows


def read_only(srv: EmbeddedServer, on: bool):
    """Make every write of the running server's store fail (a full disk, a read-only file,
    a database switched to read-only), or work again."""
    store = srv.arbiter.store
    if isinstance(store, SQLiteStore):
        # (query_only: root, which runs CI, ignores read-only file modes)
        sql = f"PRAGMA query_only={int(on)}"
    else:
        sql = f"SET default_transaction_read_only = {'on' if on else 'off'}"

    async def run():
        await store._run(store.db.execute, sql)

    return lambda: srv.call(run)


@pytest.mark.slow
def test_corrupted_database_is_refused_with_a_clear_error(tmp_path):
    db = tmp_path / "bad.db"
    db.write_bytes(b"this is not a database at all" * 100)
    out = subprocess.run(
        [sys.executable, "-m", "clients", "serve", "--port", "0", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "not a usable nardy database" in out.stderr
    with pytest.raises(StoreError):
        EmbeddedServer(db=str(db)).start()


def test_truncated_database_is_refused(tmp_path):
    db = tmp_path / "t.db"
    with EmbeddedServer(db=str(db)):
        pass
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreError):
        EmbeddedServer(db=str(db)).start()


def test_a_database_with_a_newer_schema_is_refused_clearly(db):
    with EmbeddedServer(db=db):
        pass
    execute(db, f"UPDATE nardy_schema SET version={SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError) as info:
        EmbeddedServer(db=db).start()
    assert "newer than this server understands" in info.value.message


def test_a_database_from_before_schema_versions_is_migrated(tmp_path):
    db = str(tmp_path / "old.db")
    with sqlite3.connect(db) as conn:
        conn.executescript(SQLITE_MIGRATIONS[1])
        conn.execute("INSERT INTO ladders VALUES ('old-ladder', '{}')")
    with EmbeddedServer(db=db) as srv:
        assert "old-ladder" in srv.arbiter.ladders.by_name
    assert execute(db, "SELECT version FROM nardy_schema") == [(SCHEMA_VERSION,)]


async def test_a_ladder_stored_by_an_older_version_still_loads(db):
    """Before the per-turn time had one name, ladder options were stored with the key
    ``turn_ms`` (and without the later keys): such a ladder is recovered, its turn time kept."""
    with EmbeddedServer(db=db):
        pass
    old = '{"turn_ms": 750, "time_bank_ms": 0, "max_games_per_bot": 4, "illegal_play_limit": 2}'
    execute(db, f"INSERT INTO ladders (name, options) VALUES ('old-ladder', '{old}')")
    with EmbeddedServer(db=db) as srv:
        async with Client(srv.address, srv.admin_token) as client:
            r = await client.create_ladder("old-ladder")  # the existing one is answered
            assert not r.created
            assert (r.options.turn_time_ms, r.options.max_games_per_bot) == (750, 4)
            assert r.options.illegal_play_limit == 2 and r.options.variant == "long"
            await client.standings("old-ladder")
    with EmbeddedServer(db=db) as srv:  # and it stays loadable (nothing rewritten wrongly)
        assert srv.arbiter.ladders.by_name["old-ladder"].options.turn_time_ms == 750


async def test_unwritable_store_refuses_changes_and_the_server_stays_up(db, caplog):
    with EmbeddedServer(db=db) as srv:
        async with Client(srv.address) as client:
            r = await client.create_match(seed=1)
            # the disk goes away: every write now fails
            await trio.to_thread.run_sync(read_only(srv, True))
            with pytest.raises(grpc.RpcError) as info:
                await client.create_match(seed=2)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "cannot store data" in info.value.details()
            with pytest.raises(grpc.RpcError) as info:
                await client.register("someone")
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            # the operator is told, with the store's own reason (once in a while, counted)
            refused = [r for r in caplog.records if "the journal refused" in r.getMessage()]
            assert len(refused) == 1 and refused[0].levelname == "WARNING"
            assert "read" in refused[0].getMessage().lower()  # (read-only, in the store's words)
            # reads still work
            state = (await client.get_game(r.game_id)).state
            assert state.status == pb.GAME_STATUS_WAITING


async def test_a_play_that_cannot_be_stored_is_refused_and_nothing_changes(db):
    with EmbeddedServer(db=db) as srv:
        async with Client(srv.address) as client:
            r = await client.create_match(seed=9)
            seats = [client.with_token(r.first_seat_token), client.with_token(r.second_seat_token)]
            async with trio.open_nursery() as nursery:

                async def follow(seat):
                    async for _ in seat.events(r.game_id):
                        pass

                nursery.start_soon(follow, seats[1])
                async for ev in seats[0].events(r.game_id):
                    if ev.type == pb.EVENT_TYPE_TURN_STARTED:
                        break
                st = ev.state
                mover = seats[0] if st.side_to_move == st.your_color else seats[1]
                async for ev in mover.events(r.game_id):  # the mover's view: legal plays
                    if ev.state.legal_plays:
                        break
                play = ev.state.legal_plays[0]

                await trio.to_thread.run_sync(read_only(srv, True))
                with pytest.raises(grpc.RpcError) as info:
                    await mover.submit(r.game_id, st.turn_id, end_position=play.end_position)
                assert info.value.code() == grpc.StatusCode.UNAVAILABLE
                after = (await client.get_game(r.game_id)).state
                assert after.position == st.position and after.turn_id == st.turn_id
                await trio.to_thread.run_sync(read_only(srv, False))
                resp = await mover.submit(r.game_id, st.turn_id, end_position=play.end_position)
                assert not resp.duplicate and resp.end_position == play.end_position
                # The refused commit also held the next turn (thrown ahead, see
                # GameSession._roll_ahead): its dice were thrown back, not skipped.
                turns = (pb.EVENT_TYPE_TURN_STARTED, pb.EVENT_TYPE_TURN_PASSED)
                async for ev in mover.events(r.game_id, from_start=True):
                    if ev.type in turns and ev.state.turn_id > st.turn_id:
                        break
                rolled = {
                    e["turn"]: e["rolled"]
                    for _, kind, e in journal_rows(db, r.game_id)
                    if kind in (EventType.TURN_STARTED, EventType.TURN_PASSED)
                }
                assert rolled[st.turn_id + 1] == rolled[st.turn_id] + 2
                nursery.cancel_scope.cancel()


def test_a_second_server_on_the_same_sqlite_file_is_refused(tmp_path):
    """Two servers on one SQLite file would both resume every game in progress (on
    PostgreSQL several instances share a database through leases: tests/server/test_cluster)."""
    db = str(tmp_path / "arbiter.db")
    with EmbeddedServer(db=db):
        with pytest.raises(StoreError) as info:
            EmbeddedServer(db=db).start()
        assert "another nardy server is running this database" in info.value.message
    with EmbeddedServer(db=db):  # free again once the first has stopped
        pass


async def test_names_twinned_by_case_before_they_were_unique_in_the_store_are_told_apart(db):
    """Before the store itself kept names unique whatever their case, two instances racing
    could register ``Twin`` and ``twin``. The migration renames the younger (its first
    characters, a dash, the start of its id); both players keep their tokens, and the
    store refuses such twins from then on."""
    with EmbeddedServer(db=db) as srv:
        async with Client(srv.address) as client:
            await client.register("Twin")
    execute(db, "DROP INDEX players_folded_name")
    execute(db, "UPDATE nardy_schema SET version = 6")
    execute(
        db,
        "INSERT INTO players (id, name, bot, token_hash, owner, created) "
        "VALUES ('a1b2c3d4e5f6', 'twin', 1, 'h', '', 0)",
    )
    with EmbeddedServer(db=db) as srv:
        names = {p.name for p in srv.arbiter.roster.players.values()}
        assert {"Twin", "twin-a1b2c3d4"} <= names
        async with Client(srv.address, client.token) as twin:
            await twin.call("ListChallenges", api.ListChallengesRequest())  # (Twin's token)
    assert execute(db, "SELECT version FROM nardy_schema") == [(SCHEMA_VERSION,)]
    with pytest.raises(Exception, match="(?i)unique"):
        execute(db, "INSERT INTO players (id, name, bot, token_hash) VALUES ('x', 'TWIN', 1, 'h')")


async def test_players_matches_and_games_are_stored_with_when_they_were_created(db):
    """The column's default (unixepoch('subsec')) is NULL on SQLite before 3.42, Debian
    bookworm's 3.40 among them: every row's `created` was NULL, and a restart took back
    the games not over in no order at all (ORDER BY created)."""
    with EmbeddedServer(db=db) as srv:
        async with Client(srv.address) as client:
            before = time.time()
            await client.register("dated")
            await client.create_match()
    for table in ("players", "matches", "games"):
        (created,) = execute(db, f"SELECT created FROM {table}")[0]
        assert created is not None and before - 1 <= created <= time.time(), table
