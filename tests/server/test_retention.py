"""Retention: finished games archived out of the live journal (AdminService.ArchiveGames,
SetRetention, ``nardy admin archive``). The journal shrinks; nothing is lost: every
record, replay, state, verification and standing is the same, byte for byte, before and
after archiving and after a restart; live games are untouched; only the operator may do
it, and bad times are refused (SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime

import grpc
import pytest
import trio
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from clients import cli
from clients.export import game_events
from nardy.client import Client, my_turn, play_game, serve_games
from nardy.record import dumps, to_json
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.verify import verify
from nardy.wire import record_of
from server.app import EmbeddedServer
from server.core import retention
from server.core.store import SCHEMA_VERSION
from tests.server.conftest import create, execute, resigned
from tests.server.test_eviction import one_play_game
from tests.server.test_journal import gated

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- helpers ------------------------------------------------------------------------------
def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def timestamp(at: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int(at * 1e9))
    return ts


def operator(server: EmbeddedServer, method: str, request):
    """An AdminService call with the operator's token: its answer's Retention."""
    with grpc.insecure_channel(server.address) as ch:
        stub = admin_grpc.AdminServiceStub(ch)
        answer = getattr(stub, method)(request, metadata=bearer(server.admin_token), timeout=30)
    return answer.retention


async def run_over(server: EmbeddedServer) -> admin_pb.ArchiveRun:
    """The archiving run, once it is over, as GetRetention tells it."""

    async def finished() -> None:
        await server.arbiter.retention.run.done.wait()

    await trio.to_thread.run_sync(server.call, finished)
    run = operator(server, "GetRetention", admin_pb.GetRetentionRequest()).run
    assert not run.running and not run.error
    return run


async def archived(server: EmbeddedServer, before: float | None = None) -> admin_pb.ArchiveRun:
    """ArchiveGames (the games that ended before ``before``, default now), waited for."""
    request = admin_pb.ArchiveGamesRequest(before=timestamp(before or time.time()))
    started = await trio.to_thread.run_sync(operator, server, "ArchiveGames", request)
    assert started.run.before == request.before
    return await run_over(server)


async def full_game(client: Client, seed: int) -> str:
    """A game with fair dice, played to its end by two random engines: its id."""
    r, seats = await create(client)
    async with trio.open_nursery() as nursery:
        for k, seat in enumerate(seats):
            rng = random.Random(seed * 2 + k)
            nursery.start_soon(play_game, seat, r.game_id, lambda t, rng=rng: rng.choice(t.legal))
    return r.game_id


def everything(address: str, game_ids: list[str]) -> dict[str, tuple]:
    """What anyone can read of each game: GetGame, every event (SubscribeGame from the
    start) as bytes, its record as text and as JSON, and the verdict on its dice."""
    out = {}
    with grpc.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        for game_id in game_ids:
            got = stub.GetGame(api.GetGameRequest(game_id=game_id), timeout=30)
            events = game_events(stub, game_id)
            record = record_of(events)
            if got.state.server_seed:
                record.headers["ServerSeed"] = got.state.server_seed
            out[game_id] = (
                got.SerializeToString(deterministic=True),
                [ev.SerializeToString(deterministic=True) for ev in events],
                dumps([record]),
                to_json([record]),
                verify(record).fair,
            )
    return out


def rows(db: str, table: str, where: str = "") -> int:
    return execute(db, f"SELECT count(*) FROM {table} {where}")[0][0]


def ids_in(ids: list[str]) -> str:
    return "(" + ", ".join(f"'{i}'" for i in ids) + ")"


# -- archiving ----------------------------------------------------------------------------
async def test_archived_games_leave_the_journal_and_read_back_byte_for_byte(db):
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        async with Client(server.address) as client:
            finished = [await full_game(client, seed) for seed in (1, 2)]
            finished.append((await one_play_game(client))[0].game_id)
            # a match to 3 points whose first game is over (a mars): its match goes on
            r3, seats3 = await create(client, target_points=3)
            second = await resigned(seats3, r3.game_id)
            assert second
            waiting = await client.create_match(start_timeout_ms=600_000)
            live, live_seats = await create(client, seed=11)  # a turn waits for its play
            async with trio.open_nursery() as nursery:

                async def follow(seat) -> None:
                    async for ev in seat.events(live.game_id):
                        if my_turn(ev):
                            nursery.cancel_scope.cancel()

                for seat in live_seats:
                    nursery.start_soon(follow, seat)
            seen = await trio.to_thread.run_sync(everything, server.address, finished)
            assert all(fair for *_, fair in seen.values())  # (the third: a seeded game)
            events_before = rows(db, "events")
            kept = rows(db, "events", f"WHERE game_id NOT IN {ids_in(finished)}")

            run = await archived(server)
            assert run.archived == len(finished)
            assert run.remaining == 1  # the first game of the match that goes on
            assert rows(db, "archive") == len(finished)
            assert rows(db, "events") == kept + len(finished) < events_before / 2
            assert rows(db, "games", "WHERE archived = 1") == len(finished)
            for game_id in finished:  # what an archived game keeps live: its last event
                assert rows(db, "events", f"WHERE game_id = '{game_id}'") == 1
            assert await trio.to_thread.run_sync(everything, server.address, finished) == seen
            again = await archived(server)  # nothing left to do: nothing changes
            assert again.archived == 0 and rows(db, "archive") == len(finished)

    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:  # a restart on the pruned journal
        assert await trio.to_thread.run_sync(everything, server.address, finished) == seen
        async with Client(server.address) as client:
            listed = {g.game_id for g in await client.all_games()}
            assert {waiting.game_id, second, live.game_id, *finished} <= listed
            states = {g: (await client.get_game(g)).state for g in (waiting.game_id, second)}
            assert {s.status for s in states.values()} == {pb.GAME_STATUS_WAITING}
            seats = [Client(server.address, shared=client.channel).with_token(t) for t in
                     (live.first_seat_token, live.second_seat_token)]  # fmt: skip
            async with trio.open_nursery() as nursery:  # the live game goes on

                async def play_on(seat) -> None:
                    async for ev in seat.events(live.game_id):
                        if my_turn(ev):
                            end = ev.state.legal_plays[0].end_position
                            made = await seat.submit(
                                live.game_id, ev.state.turn_id, end_position=end
                            )
                            assert made.end_position == end and not made.duplicate
                            nursery.cancel_scope.cancel()

                for seat in seats:
                    nursery.start_soon(play_on, seat)


async def test_a_ladder_s_archived_games_still_count_the_same(db):
    """The standings are built from the ladder's books (one record a game), never from
    the games' events: archiving changes nothing in them, nor after a restart."""
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        games = await ladder_of_one_pair(server, "kept")
        assert len(games) == 2
        books = await trio.to_thread.run_sync(books_of, server, "kept")
        seen = await trio.to_thread.run_sync(everything, server.address, games)
        run = await archived(server)
        assert run.archived == 2 and rows(db, "archive") == 2
        if not db.startswith("postgresql://"):  # (several instances' books: the store's)
            assert execute(db, "SELECT counted FROM ladder_books") == [(2,)]  # stored by the run
        assert (await trio.to_thread.run_sync(books_of, server, "kept"))[0] == books[0]
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        assert await trio.to_thread.run_sync(books_of, server, "kept") == books
        assert await trio.to_thread.run_sync(everything, server.address, games) == seen


async def ladder_of_one_pair(server: EmbeddedServer, name: str) -> list[str]:
    """A ladder whose two bots play one duplicate pair to its end: the games' ids."""
    async with Client(server.address, server.admin_token) as op:
        await op.create_ladder(name, max_games=2, turn_time_ms=5000)
    bots = [Client(server.address) for _ in range(2)]
    for i, bot in enumerate(bots):
        await bot.register(f"{name}{i}")
    async with trio.open_nursery() as nursery:
        for i, bot in enumerate(bots):
            rng = random.Random(i)
            nursery.start_soon(
                lambda b=bot, r=rng: serve_games(b, lambda t: r.choice(t.legal), max_games=2)
            )
        for bot in bots:
            await bot.join_ladder(name)
    games = [g.game_id for g in await bots[0].all_games(ladder=name)]
    for bot in bots:
        bot.close()
    return games


def books_of(server: EmbeddedServer, ladder: str) -> tuple[bytes, bytes]:
    """The ladder's standings and crosstable, as bytes."""
    from nardy.v1 import ladder_pb2 as ladder_pb
    from nardy.v1 import ladder_pb2_grpc as ladder_grpc

    with grpc.insecure_channel(server.address) as ch:
        stub = ladder_grpc.LadderServiceStub(ch)
        standings = stub.GetStandings(ladder_pb.GetStandingsRequest(ladder=ladder), timeout=30)
        cross = stub.GetCrosstable(ladder_pb.GetCrosstableRequest(ladder=ladder), timeout=30)
    return standings.SerializeToString(deterministic=True), cross.SerializeToString(
        deterministic=True
    )


async def test_a_restart_loads_the_ladders_books_and_counts_no_result_again(tmp_path):
    """A ladder's books are stored when the server stops (and after each archiving run):
    a restart loads them and reads no result back, standings and crosstable the same; a
    void drops them (every result is counted again at the next restart); books that do not
    match the stored results are not used. (SQLite: on PostgreSQL, where several instances
    may write results, the books are read back from every result.)"""
    db = str(tmp_path / "books.db")
    read: list[int] = []  # ladder records read back by each restart

    def store(path: str):
        from server.core.main import open_store

        inner = open_store(path)
        query = inner.query

        async def counting_query(sql, params=()):
            rows = await query(sql, params)
            if sql.startswith("SELECT record FROM ladder_games"):
                read.append(len(rows))
            return rows

        inner.query = counting_query
        return inner

    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        games = await ladder_of_one_pair(server, "booked")
        books = await trio.to_thread.run_sync(books_of, server, "booked")
    [(counted, last)] = execute(db, "SELECT counted, last FROM ladder_books")
    assert counted == 2 and last in games  # (the pair's games end in either order)
    with EmbeddedServer(db=db, heartbeat_s=30.0, store_factory=store) as server:
        assert read == [0]  # every result is in the stored books
        assert await trio.to_thread.run_sync(books_of, server, "booked") == books
        with grpc.insecure_channel(server.address) as ch:
            void = admin_pb.VoidGameRequest(game_id=games[1])
            admin_grpc.AdminServiceStub(ch).VoidGame(void, metadata=bearer(server.admin_token))
        assert rows(db, "ladder_books") == 0  # they counted a result now voided
        voided = await trio.to_thread.run_sync(books_of, server, "booked")
        assert voided != books
    read.clear()
    with EmbeddedServer(db=db, heartbeat_s=30.0, store_factory=store) as server:
        assert read == [0]  # stored again when it stopped
        assert await trio.to_thread.run_sync(books_of, server, "booked") == voided
    execute(db, "UPDATE ladder_books SET last = 'another'")  # books of other results
    read.clear()
    with EmbeddedServer(db=db, heartbeat_s=30.0, store_factory=store) as server:
        assert read == [2]  # not used: every result counted again
        assert await trio.to_thread.run_sync(books_of, server, "booked") == voided


async def test_a_prune_goes_in_short_transactions(tmp_path, monkeypatch):
    """A huge prune holds no long transaction: a few games a batch, each its own
    transaction, so the commits of live games come between them."""
    monkeypatch.setattr(retention, "BATCH", 2)
    db = str(tmp_path / "batches.db")
    with gated(db) as (server, gate):
        async with Client(server.address) as client:
            games = [(await one_play_game(client))[0].game_id for _ in range(5)]
            gate.batches.clear()
            run = await archived(server)
    assert run.archived == 5
    archiving = [b for b in gate.batches if any("INSERT INTO archive" in sql for sql, _ in b)]
    assert len(archiving) == 3
    assert [sum("INSERT INTO archive" in sql for sql, _ in b) for b in archiving] == [2, 2, 1]
    assert rows(db, "events", f"WHERE game_id IN {ids_in(games)}") == 5


async def test_the_schedule_is_stored_and_archives_at_once(db):
    get = admin_pb.GetRetentionRequest()
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        async with Client(server.address) as client:
            game = (await one_play_game(client))[0].game_id
        keep = Duration(nanos=1_000_000)  # games kept a millisecond after they end
        set_ = operator(server, "SetRetention", admin_pb.SetRetentionRequest(keep=keep))
        assert set_.keep == keep and set_.run.before.seconds
        run = await run_over(server)  # run at once
        assert run.archived == 1
        assert rows(db, "events", f"WHERE game_id = '{game}'") == 1
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:  # stored: it outlives a restart
        got = operator(server, "GetRetention", get)
        assert got.keep == keep and not got.HasField("run")
        off = operator(server, "SetRetention", admin_pb.SetRetentionRequest())
        assert not off.HasField("keep") and not off.HasField("run")
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        assert not operator(server, "GetRetention", get).HasField("keep")
    execute(db, f"UPDATE settings SET value = 'soon' WHERE key = '{retention.KEEP_SETTING}'")
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:  # a damaged value: no schedule
        assert not operator(server, "GetRetention", get).HasField("keep")


async def test_only_the_operator_archives_and_bad_times_are_refused(tmp_path):
    """A stranger can make retention do nothing, learn nothing of it (its arguments are
    not even looked at), and a bad time is INVALID_ARGUMENT with nothing started."""
    with EmbeddedServer(db=str(tmp_path / "r.db")) as server:
        async with Client(server.address) as client:
            game = (await one_play_game(client))[0].game_id
            player = await client.register("someone")
        now = time.time()
        good = admin_pb.ArchiveGamesRequest(before=timestamp(now))
        bad_before = [
            admin_pb.ArchiveGamesRequest(),  # unset
            admin_pb.ArchiveGamesRequest(before=Timestamp(seconds=0)),
            admin_pb.ArchiveGamesRequest(before=Timestamp(seconds=-86400)),
            admin_pb.ArchiveGamesRequest(before=timestamp(now + 86400)),  # in the future
            admin_pb.ArchiveGamesRequest(before=Timestamp(seconds=int(now), nanos=-1)),
            admin_pb.ArchiveGamesRequest(before=Timestamp(seconds=int(now), nanos=10**9)),
        ]
        bad_keep = [
            admin_pb.SetRetentionRequest(keep=Duration(seconds=-1)),
            admin_pb.SetRetentionRequest(keep=Duration(seconds=101 * 365 * 86400)),
            admin_pb.SetRetentionRequest(keep=Duration(seconds=5, nanos=-1)),
        ]
        with grpc.insecure_channel(server.address) as ch:
            admin = admin_grpc.AdminServiceStub(ch)
            calls = [
                (admin.ArchiveGames, good),
                *((admin.ArchiveGames, r) for r in bad_before),
                (admin.SetRetention, admin_pb.SetRetentionRequest(keep=Duration(seconds=1))),
                *((admin.SetRetention, r) for r in bad_keep),
                (admin.GetRetention, admin_pb.GetRetentionRequest()),
            ]
            for who, code in (
                (bearer(player), grpc.StatusCode.PERMISSION_DENIED),
                ((), grpc.StatusCode.UNAUTHENTICATED),  # (admin.proto: no valid token)
                (bearer("x" * 43), grpc.StatusCode.UNAUTHENTICATED),
            ):
                for method, request in calls:
                    with pytest.raises(grpc.RpcError) as info:
                        method(request, metadata=who, timeout=10)
                    assert info.value.code() == code, (who, request)
            md = bearer(server.admin_token)
            for method, request in [(admin.ArchiveGames, r) for r in bad_before] + [
                (admin.SetRetention, r) for r in bad_keep
            ]:
                with pytest.raises(grpc.RpcError) as info:
                    method(request, metadata=md, timeout=10)
                assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, request
            got = admin.GetRetention(admin_pb.GetRetentionRequest(), metadata=md).retention
            assert not got.HasField("run") and not got.HasField("keep")  # nothing started
        assert rows(str(tmp_path / "r.db"), "archive") == 0
        assert rows(str(tmp_path / "r.db"), "events", f"WHERE game_id = '{game}'") > 1


def nardy(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clients", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


async def test_nardy_admin_archive_then_export_verify_and_the_web_view(tmp_path, capsys):
    """The commands an operator and a player run: `nardy admin archive --before`, then
    `nardy export`, `nardy verify` and the web view's replay of the archived game, the
    same as before."""
    db = str(tmp_path / "cli.db")
    with EmbeddedServer(db=db, http_port=0) as server:
        async with Client(server.address) as client:
            game = await full_game(client, 5)
        address, token = server.address, {"NARDY_ADMIN_TOKEN": server.admin_token}

        def outputs() -> tuple[str, str, str]:
            text = nardy("export", game, "--server", address)
            fair = nardy("verify", game, "--server", address)
            with urllib.request.urlopen(f"{server.http_url}/game/{game}") as page:
                replay = page.read().decode()  # (one page: each event counts for its limit)
            assert text.returncode == 0 and fair.returncode == 0, text.stderr + fair.stderr
            assert fair.stdout.startswith("fair")
            plays = re.findall(r"^\s*\d+ [wb] \d-\d (.+)$", text.stdout, re.M)
            assert len(plays) > 10 and all(p in replay for p in plays if p != "-")
            return text.stdout, fair.stdout, replay

        before = await trio.to_thread.run_sync(outputs)
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        done = await trio.to_thread.run_sync(
            lambda: nardy("admin", "--server", address, "archive", "--before", when, env=token)
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("archived 1 game that ended before"), done.stdout
        assert rows(db, "events", f"WHERE game_id = '{game}'") == 1
        shown = await trio.to_thread.run_sync(
            lambda: nardy("admin", "--server", address, "archive", env=token)
        )
        assert "schedule: none" in shown.stdout and "last run: archived 1 game " in shown.stdout
    with EmbeddedServer(db=db, http_port=0) as server:  # (a fresh web view: nothing cached)
        address = server.address
        assert await trio.to_thread.run_sync(outputs) == before
    assert cli.main(["admin", "--server", address, "archive", "--before", "soon"]) == 2
    assert "--before: 'soon' is not a date" in capsys.readouterr().err


# -- an older database ---------------------------------------------------------------------
DOWNGRADE = [  # schema 6 back to schema 5, as an older server left it
    "DROP TABLE archive",
    "DROP TABLE ladder_books",
    "DROP INDEX games_status",
    "DROP INDEX games_match",
    "DROP INDEX games_archivable",
    "DROP INDEX matches_pair",
    "ALTER TABLE games DROP COLUMN ended",
    "ALTER TABLE games DROP COLUMN archived",
    "ALTER TABLE matches DROP COLUMN pair",
    "UPDATE nardy_schema SET version = 5",
]


async def test_a_database_of_schema_5_is_migrated_and_its_games_archived(db):
    """A journal written before retention: each ended game's end is taken from its last
    event, and its games archive like any other."""
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        async with Client(server.address) as client:
            games = [(await one_play_game(client))[0].game_id for _ in range(2)]
            waiting = await client.create_match(start_timeout_ms=600_000)
        seen = await trio.to_thread.run_sync(everything, server.address, games)
    ends = {
        game_id: execute(db, f"SELECT max(time) FROM events WHERE game_id = '{game_id}'")[0][0]
        for game_id in games
    }
    if db.startswith("postgresql://"):
        execute(db, "DROP INDEX matches_n")
    for sql in DOWNGRADE:
        execute(db, sql)
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        assert execute(db, "SELECT version FROM nardy_schema") == [(SCHEMA_VERSION,)]
        for game_id, end in ends.items():
            assert execute(db, f"SELECT ended FROM games WHERE id = '{game_id}'") == [(end,)]
        assert execute(db, f"SELECT ended FROM games WHERE id = '{waiting.game_id}'") == [(None,)]
        run = await archived(server)
        assert run.archived == 2
        assert await trio.to_thread.run_sync(everything, server.address, games) == seen


async def test_several_instances_archive_what_any_of_them_ran(pg_db):
    """Two instances on one PostgreSQL: the games one ran, archived by the other, read
    the same from both."""
    token = "operator-token-for-the-retention-tests"
    with (
        EmbeddedServer(db=pg_db, admin_token=token, lease_s=3.0) as a,
        EmbeddedServer(db=pg_db, admin_token=token, lease_s=3.0) as b,
    ):
        async with Client(a.address) as client:
            games = [(await one_play_game(client))[0].game_id for _ in range(2)]
        seen = await trio.to_thread.run_sync(everything, a.address, games)
        run = await archived(b)
        assert run.archived == 2 and rows(pg_db, "archive") == 2
        assert rows(pg_db, "events", f"WHERE game_id IN {ids_in(games)}") == 2
        for server in (a, b):
            assert await trio.to_thread.run_sync(everything, server.address, games) == seen
        assert (await archived(a)).archived == 0  # archived already: nothing to do
        # a schedule stored on one is the other's too (it told "none" until its next hour)
        keep = admin_pb.SetRetentionRequest(keep=Duration(seconds=30 * 86400))
        await trio.to_thread.run_sync(operator, b, "SetRetention", keep)
        get = admin_pb.GetRetentionRequest()
        told = await trio.to_thread.run_sync(operator, a, "GetRetention", get)
        assert told.keep.seconds == 30 * 86400


def test_a_run_just_started_is_said_to_be_counting_not_to_have_nothing_left():
    from clients.admin import _run_line

    run = admin_pb.ArchiveRun(running=True)  # (what `archive --no-wait` is answered at once)
    assert _run_line(run).endswith(": counting them")
    run.remaining = 1018
    assert _run_line(run).endswith(": 0 archived, about 1018 left")
