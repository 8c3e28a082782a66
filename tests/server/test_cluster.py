"""Several arbiter instances on one PostgreSQL (server/cluster.py): leases and fencing,
redirects followed by the SDK, reads from any instance.

Real PostgreSQL (NARDY_TEST_PG), real servers on loopback ports, short leases."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading

import grpc
import psycopg
import pytest
import trio

from nardy.client import Client, play_game, serve_games
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.core.cluster import ALIVE, Cluster
from server.core.pgstore import PostgresStore
from server.core.store import LeaseLost
from server.core.writer import JournalWriter
from tests.ladder.test_lockstep import games_of

from .conftest import counting, execute, news_cut, random_engine

LEASE_S = 3.0  # short, so that failover tests are quick; long enough for a loaded machine


def sql(url: str, statement: str, *params):
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def pair(pg_db):
    """Two instances on one database."""
    token = "operator-token-for-the-cluster-tests"
    with (
        EmbeddedServer(db=pg_db, admin_token=token, lease_s=LEASE_S) as a,
        EmbeddedServer(db=pg_db, admin_token=token, lease_s=LEASE_S) as b,
    ):
        yield a, b


async def ladder_bots(pair, ladder: str, **options) -> list[Client]:
    """A ladder of one pair (made at the first instance) and a bot registered and joined at
    each instance."""
    a, b = pair
    async with Client(a.address, a.admin_token) as op:
        await op.create_ladder(ladder, max_games=2, **options)
    bots = [Client(a.address), Client(b.address)]
    for i, bot in enumerate(bots):
        await bot.register(f"{ladder}{i}")
    for bot in bots:
        await bot.join_ladder(ladder)
    return bots


async def wait_for(check, what: str, timeout: float = 60.0):
    """Poll ``check()`` (a coroutine function) until it returns a true value."""
    with trio.fail_after(timeout):
        while True:
            value = await check()
            if value:
                return value
            await trio.sleep(0.05)


# -- fencing, at the store ------------------------------------------------------------------
def test_a_lost_lease_fences_its_old_owner_and_a_live_one_is_never_taken(pg_db):
    store = PostgresStore(pg_db)
    first, second = Cluster(pg_db, 600), Cluster(pg_db, 600)  # expired by hand below
    try:
        first.open()
        second.open()
        row = "INSERT INTO matches (id, target, options, seats) VALUES (?, 1, '{}', '[]')"
        for match_id in ("m1", "m2"):
            store._write_sync([(row, (match_id,)), first.lease(match_id, match_id)])
        note = ("INSERT INTO settings (key, value) VALUES (?, ?)", ("written", "by first"))

        # both leases are live: the second instance takes neither
        beat = second._sync_beat(claim=True)
        assert beat.claimed == [] and beat.held == {}
        store._write_sync([first.fence("m1", 1), note])

        # the first instance stalls past its lease: the second takes its matches, epoch 2
        sql(pg_db, "UPDATE instances SET expires = 0 WHERE id = %s", first.id)
        beat = second._sync_beat(claim=True)
        assert sorted(beat.claimed) == [("m1", 2), ("m2", 2)]
        # the old owner's next write is refused whole, the new owner's goes through
        late = ("INSERT INTO settings (key, value) VALUES (?, ?)", ("late", "by first"))
        with pytest.raises(LeaseLost):
            store._write_sync([first.fence("m1", 1), late])
        assert sql(pg_db, "SELECT value FROM settings WHERE key = 'late'") == []
        store._write_sync(
            [second.fence("m1", 2), ("DELETE FROM settings WHERE key=?", ("written",))]
        )
        # the first instance comes back: it renews its row but owns nothing any more
        beat = first._sync_beat(claim=True)
        assert beat.claimed == [] and beat.held == {}
        assert second._sync_beat(claim=True).held == {"m1": 2, "m2": 2}
    finally:
        trio.run(first.close)


def test_no_new_pair_is_placed_on_an_instance_whose_session_is_gone(pg_db):
    """A killed instance's row stays live until it expires (leases are claimed then), but
    its session ends at once: the leader hands it no new ladder pair in the meantime."""
    store = PostgresStore(pg_db)
    busy, idle = Cluster(pg_db, 600), Cluster(pg_db, 600)
    try:
        for cluster, address in ((busy, "127.0.0.1:1"), (idle, "127.0.0.1:2")):
            cluster.address = address
            cluster.open()
        row = "INSERT INTO matches (id, target, options, seats) VALUES (?, 1, '{}', '[]')"
        store._write_sync([(row, ("m1",)), busy.lease("m1", "m1")])
        assert sql(pg_db, Cluster.LEAST_LOADED) == [(idle.id,)]  # the one running nothing
        # the idle instance is killed: its session ends, its row does not change
        idle._db.close()  # (no leave)
        with psycopg.connect(pg_db, autocommit=True) as conn:  # until the server saw it go:
            conn.execute("SET lock_timeout = '30s'")  # its lock is ours once its session ended
            conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (ALIVE, idle.id))
        assert sql(pg_db, "SELECT count(*) FROM instances WHERE expires >= 1e9") == [(2,)]
        assert sql(pg_db, Cluster.LEAST_LOADED) == [(busy.id,)]
        # it comes back (a new session): it is placed on again
        idle._sync_beat(claim=False)
        assert sql(pg_db, Cluster.LEAST_LOADED) == [(idle.id,)]
    finally:
        trio.run(busy.close)
        trio.run(idle.close)


def test_a_write_refused_for_a_match_taken_over_is_no_warning(pg_db, caplog):
    """At every hand-off the old owner's last writes are refused (LeaseLost): that was
    logged as a failed journal batch and a store refusing writes, three warnings a pair
    in a ladder's log, nothing lost. It is said at INFO; other refusals stay warnings."""
    caplog.set_level(logging.INFO, logger="nardy.server")
    store = PostgresStore(pg_db)
    first, second = Cluster(pg_db, 600), Cluster(pg_db, 600)
    writer = JournalWriter(store)
    note = ("INSERT INTO settings (key, value) VALUES (?, ?)", ("late", "by first"))

    async def late_writes() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            late = [writer.submit(note, fence=first.fence("m1", 1)) for _ in range(2)]
            for commit in late:
                with pytest.raises(LeaseLost):
                    await commit.wait()
            nursery.cancel_scope.cancel()

    try:
        first.open()
        second.open()
        row = "INSERT INTO matches (id, target, options, seats) VALUES (?, 1, '{}', '[]')"
        store._write_sync([(row, ("m1",)), first.lease("m1", "m1")])
        sql(pg_db, "UPDATE instances SET expires = 0 WHERE id = %s", first.id)
        assert second._sync_beat(claim=True).claimed == [("m1", 2)]
        trio.run(late_writes)
        said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "nardy.server"]
        assert said and all(level == "INFO" for level, _ in said), said
    finally:
        trio.run(first.close)
        trio.run(second.close)
        trio.run(store.close)


def test_a_batch_refused_by_one_of_its_fences_makes_psycopg_warn_of_nothing(pg_db, caplog):
    """A journal batch's several fences ran as one ``executemany``, whose pipeline a refused
    fence aborted midway now and then (timing: this finds it in about three runs of four):
    psycopg logged `error ignored terminating ... pipeline aborted` at every ladder pair
    handed over."""
    store = PostgresStore(pg_db)
    first, second = Cluster(pg_db, 600), Cluster(pg_db, 600)
    matches = [f"m{i}" for i in range(4)]  # the first taken over, the others still first's
    note = "INSERT INTO settings (key, value) VALUES (?, ?)"
    try:
        first.open()
        second.open()
        row = "INSERT INTO matches (id, target, options, seats) VALUES (?, 1, '{}', '[]')"
        for m in matches:
            store._write_sync([(row, (m,)), first.lease(m, m)])
        sql(pg_db, "UPDATE leases SET owner = %s, epoch = 2 WHERE match_id = 'm0'", second.id)
        for n in range(50):
            fences = [first.fence(m, 1) for m in matches]
            with pytest.raises(LeaseLost):
                store._write_sync(fences + [(note, (f"{n}.{i}", "")) for i in range(200)])
        assert not [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")]
    finally:
        trio.run(first.close)
        trio.run(second.close)
        trio.run(store.close)


def test_a_takeover_waits_for_the_old_owners_write_in_flight(pg_db):
    """The fence holds the lease row until its transaction ends: a claim made meanwhile
    waits, so the write is either in the journal before the takeover or refused."""
    store = PostgresStore(pg_db)
    first, second = Cluster(pg_db, 600), Cluster(pg_db, 600)  # expired by hand below
    first.open()
    second.open()
    row = "INSERT INTO matches (id, target, options, seats) VALUES (?, 1, '{}', '[]')"
    store._write_sync([(row, ("m1",)), first.lease("m1", "m1")])
    sql(pg_db, "UPDATE instances SET expires = 0 WHERE id = %s", first.id)
    with psycopg.connect(pg_db) as writer:  # the old owner's transaction, still open
        writer.execute("SELECT nardy_fence('m1', %s, 1)", (first.id,))
        writer.execute("INSERT INTO settings (key, value) VALUES ('in flight', 'x')")
        claimed: list = []

        async def claim() -> None:
            claimed.append(await second.beat())

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(claim)
                # the claim is blocked on the lease row: nothing is claimed yet
                await wait_for(
                    lambda: trio.to_thread.run_sync(
                        sql,
                        pg_db,
                        "SELECT count(*) FROM pg_locks WHERE NOT granted",
                    ),
                    "the claim waiting",
                )
                assert claimed == []
                await trio.to_thread.run_sync(writer.commit)

        trio.run(main)
    assert claimed[0].claimed == [("m1", 2)]
    assert sql(pg_db, "SELECT value FROM settings WHERE key = 'in flight'") == [("x",)]
    trio.run(first.close)
    trio.run(second.close)
    trio.run(store.close)


# -- redirects and reads from any instance --------------------------------------------------
@pytest.mark.slow
async def test_a_game_run_elsewhere_is_redirected_and_the_sdk_follows(pair):
    a, b = pair
    async with Client(a.address) as at_a, Client(b.address) as at_b:
        r = await at_a.create_match(options=pb.GameOptions(turn_time_ms=30_000))

        # ListGames and GetGame answer from either instance
        async def listed_on_b() -> bool:
            return r.game_id in [g.game_id for g in (await at_b.list_games()).games]

        await wait_for(listed_on_b, "the game listed on b")
        state = (await at_b.get_game(r.game_id)).state
        assert state.game_id == r.game_id

        # a call that changes the game, sent to b, is answered with where it lives
        raw = api_grpc.ArbiterServiceStub(at_b.channel)
        meta = (("authorization", f"Bearer {r.first_seat_token}"),)
        with pytest.raises(grpc.RpcError) as info:
            raw.Resign(api.ResignRequest(game_id=r.game_id), metadata=meta)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert ("nardy-instance", a.address) in tuple(info.value.trailing_metadata())

        # seats connected to b (seat tokens issued by a) play the whole game through a
        seats = [at_b.with_token(r.first_seat_token), at_b.with_token(r.second_seat_token)]
        async with trio.open_nursery() as nursery:
            for i, seat in enumerate(seats):
                nursery.start_soon(play_game, seat, r.game_id, random_engine(i))
        final = (await at_b.get_game(r.game_id)).state
        assert final.status == pb.GAME_STATUS_FINISHED
        assert seats[0].routes.games[r.game_id] == a.address
        # the game is over: b reads it from the store, replay included
        events = [ev async for ev in at_b.events(r.game_id, from_start=True)]
        assert events[-1].type == pb.EVENT_TYPE_GAME_FINISHED

        async def released() -> bool:  # a match that is over holds no lease
            sql = f"SELECT count(*) FROM leases WHERE match_id='{r.match_id}'"
            return await trio.to_thread.run_sync(execute, a.config.db, sql) == [(0,)]

        await wait_for(released, "the lease given up")


@pytest.mark.slow
async def test_players_registered_anywhere_play_a_ladder_from_any_instance(pair):
    a, b = pair
    async with Client(a.address, a.admin_token) as op_a, Client(b.address) as at_b:
        # standings from either instance list both members once they joined anywhere
        bots = await ladder_bots(pair, "duo", turn_time_ms=30_000)
        async with trio.open_nursery() as nursery:
            for i, bot in enumerate(bots):
                nursery.start_soon(
                    lambda bot=bot, i=i: serve_games(bot, random_engine(i), max_games=2)
                )

        async def counted() -> bool:  # a result is stored just after the game's end is told
            return (await at_b.standings("duo")).finished_games == 2

        await wait_for(counted, "both results counted")
        standings = [await c.standings("duo") for c in (op_a, at_b)]
        assert standings[0] == standings[1]
        assert standings[0].games_in_progress == 0
        for bot in bots:
            bot.close()


async def test_a_ladder_member_joined_while_the_leader_was_not_listening_is_paired(pair, pg_db):
    """Ladder news sent while the leading instance's news connection is down is not lost:
    once it listens again it reads its ladders back, and pairs a member that joined at
    another instance meanwhile."""
    a, b = pair
    async with Client(a.address, a.admin_token) as op:
        await op.create_ladder("gap", max_games=2, turn_time_ms=30_000)
    bots = [Client(a.address), Client(b.address)]
    for i, bot in enumerate(bots):
        await bot.register(f"gap{i}")
    with news_cut(pg_db, instances=len(pair)):
        for bot in bots:  # told while nobody listens
            await bot.join_ladder("gap")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for i, bot in enumerate(bots):
                nursery.start_soon(
                    lambda bot=bot, i=i: serve_games(bot, random_engine(i), max_games=2)
                )
    for bot in bots:
        bot.close()


async def token_works(address: str, token: str) -> bool:
    """Whether the instance at ``address`` takes ``token`` as a player's (False: refused as
    unknown)."""
    async with Client(address, token) as player:
        try:
            await player.list_challenges()
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAUTHENTICATED, e
            return False
    return True


@pytest.mark.parametrize("listening", [True, False], ids=["told", "while-not-listening"])
async def test_a_reissued_token_stops_working_on_every_instance(pair, pg_db, listening):
    """A player's token reissued on one instance stops working on the others, which knew
    it, and the new one works there: told at once as news, or, when the news was sent
    while they did not listen, once they listen again (they read the players back)."""
    a, b = pair
    async with Client(a.address) as player:
        old = await player.register("reissued")
    assert await token_works(b.address, old)  # (b holds it now)
    with contextlib.ExitStack() as cut:
        if not listening:
            cut.enter_context(news_cut(pg_db, instances=len(pair)))
        new = await trio.to_thread.run_sync(a.call, a.arbiter.roster.reissue_token, "reissued")
    assert not await token_works(a.address, old)

    async def refused_at_b() -> bool:
        return not await token_works(b.address, old)

    await wait_for(refused_at_b, "the old token refused at the other instance")
    assert await token_works(b.address, new)


@pytest.mark.parametrize("listening", [True, False], ids=["told", "while-not-listening"])
async def test_a_challenge_made_at_one_instance_reaches_players_following_at_another(
    pair, pg_db, listening
):
    """Two players follow their streams at one instance; one challenges the other at
    another instance: the challenged is told CHALLENGE and the challenger GAME_ASSIGNED
    where they follow, as news at once or, when it was sent while nobody listened, once
    the instances listen again (each tells the others its games waiting for seats). The
    challenged lists it and accepts it there."""
    a, b = pair
    tokens = {}
    for name in ("challenger", "challenged"):
        async with Client(a.address) as player:
            tokens[name] = await player.register(f"{name}-{listening}")
    told = {name: trio.Event() for name in tokens}
    want = {
        "challenger": api.PLAYER_EVENT_TYPE_GAME_ASSIGNED,
        "challenged": api.PLAYER_EVENT_TYPE_CHALLENGE,
    }
    following = {name: trio.Event() for name in tokens}

    async def follow(name: str, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with Client(a.address, tokens[name]) as player:
            task_status.started()
            async for ev in player.player_events():
                following[name].set()
                if ev.type == want[name]:
                    told[name].set()

    async with trio.open_nursery() as nursery:
        for name in tokens:
            await nursery.start(follow, name)
        with contextlib.ExitStack() as cut:
            if not listening:
                cut.enter_context(news_cut(pg_db, instances=len(pair)))
            async with Client(b.address, tokens["challenger"]) as challenger:
                made = await challenger.create_match(
                    first=api.SeatSpec(player_name=f"challenger-{listening}"),
                    second=api.SeatSpec(player_name=f"challenged-{listening}"),
                )
        assert made.challenge
        with trio.move_on_after(60):
            for name in tokens:
                await told[name].wait()
        assert [name for name in tokens if not told[name].is_set()] == []
        nursery.cancel_scope.cancel()
    async with Client(a.address, tokens["challenged"]) as challenged:  # listed, accepted there
        assert [c.match_id for c in await challenged.list_challenges()] == [made.match_id]
        assert (await challenged.accept_challenge(made.match_id)).game_id == made.game_id
        assert await challenged.list_challenges() == []


async def test_games_elsewhere_are_read_once_a_second_however_fast_players_ask(pair):
    """ListChallenges and a player stream's start look for the games other instances run:
    one read of every game not yet over, shared by all callers for a second, so a caller
    asking as fast as its rate allows does not make the store scan them each time."""
    a, _ = pair
    reader = a.arbiter.reader
    scan = reader.unfinished_games
    reads = 0

    async def counted():
        nonlocal reads
        reads += 1
        return await scan()

    await trio.to_thread.run_sync(a.call, setattr, reader, "unfinished_games", counted)
    try:
        async with Client(a.address) as player:
            await player.register("eager")
            start = trio.current_time()
            for _ in range(60):
                assert await player.list_challenges() == []
            elapsed = trio.current_time() - start
    finally:
        await trio.to_thread.run_sync(a.call, setattr, reader, "unfinished_games", scan)
    assert 1 <= reads <= elapsed + 2, (reads, elapsed)


async def test_a_pairs_seed_stays_secret_on_every_instance_until_both_games_end(pair):
    """The two games of a ladder pair share one server seed, revealed once both have ended:
    the first game to end must not show it while its partner plays, on any instance. The
    instance that does not run the pair read the ended game back from the store without
    its partner, and showed the seed: every coming throw of the other game with it."""
    a, b = pair
    bots = await ladder_bots(pair, "secret", turn_time_ms=60_000)
    games = await games_of(bots[0])
    first, other = games
    started = {g: trio.Event() for g in games}

    async def seat(bot: Client, game_id: str) -> None:  # (resubscribes after a hand-over)
        async for ev in bot.events(game_id):  # (after a hand-over: a SNAPSHOT of it started)
            if ev.state.status == pb.GAME_STATUS_IN_PROGRESS:
                started[game_id].set()

    async with trio.open_nursery() as nursery:
        for bot in bots:
            for g in games:
                nursery.start_soon(seat, bot, g)
        with trio.fail_after(60):
            for g in games:
                await started[g].wait()
        # (retried: a pair may be handed to the other instance just after it starts)
        await bots[0].call("Resign", api.ResignRequest(game_id=first), attempts=10)
        for server in (a, b):
            with grpc.insecure_channel(server.address) as ch:
                stub = api_grpc.ArbiterServiceStub(ch)
                ended = stub.GetGame(api.GetGameRequest(game_id=first), timeout=30).state
                playing = stub.GetGame(api.GetGameRequest(game_id=other), timeout=30).state
            assert ended.status == pb.GAME_STATUS_FINISHED
            assert playing.status == pb.GAME_STATUS_IN_PROGRESS
            assert not ended.server_seed, f"the pair's seed shown by {server.address}"
        await bots[0].call("Resign", api.ResignRequest(game_id=other), attempts=10)
        nursery.cancel_scope.cancel()

    async def shown() -> bool:  # both ended: by every instance, for both games
        seeds = set()  # (once both results are stored, just after their ends are told)
        for server in (a, b):
            with grpc.insecure_channel(server.address) as ch:
                stub = api_grpc.ArbiterServiceStub(ch)
                for g in games:
                    state = stub.GetGame(api.GetGameRequest(game_id=g), timeout=30).state
                    seeds.add(state.server_seed)
        return len(seeds) == 1 and seeds != {""}

    await wait_for(shown, "the seed shown everywhere")
    for bot in bots:
        bot.close()


async def test_anyones_standings_requests_do_not_each_read_a_ladder_back(pg_db):
    """Several instances: GetStandings and GetCrosstable read the ladder's books back from
    the store, every result of the ladder (a ladder that ran for weeks: 100,000 records,
    decoded in the trio thread), and anyone may ask 1000 times a second. The books are
    read back at most once a second per ladder; standings may be a second behind."""
    Counting, read = counting(PostgresStore, "ladder_games")  # ladder records read back

    token = "operator-token-for-the-cluster-tests"
    with (
        EmbeddedServer(db=pg_db, admin_token=token, lease_s=LEASE_S) as a,
        EmbeddedServer(db=pg_db, admin_token=token, lease_s=LEASE_S, store_factory=Counting) as b,
    ):
        async with Client(a.address, token) as op, Client(b.address) as stranger:
            await op.create_ladder("busy", max_games=2)
            await stranger.standings("busy")
            read.clear()
            for _ in range(20):
                await stranger.standings("busy")
                await stranger.crosstable("busy")
    assert len(read) <= 4, read  # 40 requests


@pytest.mark.parametrize("other", ["Racer", "racer"], ids=["other-case", "same-case"])
async def test_a_name_asked_for_at_two_instances_at_once_is_given_once(pair, pg_db, other):
    """Player names are unique whatever their case (``Racer`` is ``racer``). Two instances
    asked for one name at the same moment, each before the other has stored it: one
    registers it, the other answers ALREADY_EXISTS, and the store holds one player."""
    a, b = pair
    outcomes: dict[str, list] = {}

    async def register(client: Client, name: str, key: str) -> None:
        try:
            await client.call("RegisterPlayer", api.RegisterPlayerRequest(name=name))
            outcomes.setdefault(key, []).append("registered")
        except grpc.RpcError as e:
            outcomes.setdefault(key, []).append(e.code())

    async with Client(a.address, a.admin_token) as at_a, Client(b.address, b.admin_token) as at_b:
        for i in range(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(register, at_a, f"{other}{i}", f"racer{i}")
                nursery.start_soon(register, at_b, f"racer{i}", f"racer{i}")
    for name, got in outcomes.items():
        assert sorted(got, key=str) == [grpc.StatusCode.ALREADY_EXISTS, "registered"], name
    stored = sql(pg_db, "SELECT lower(name), count(*) FROM players GROUP BY lower(name)")
    assert [n for n, count in stored if n.startswith("racer") and count != 1] == []


async def test_the_command_line_answers_a_challenge_at_the_instance_that_runs_it(pair):
    """`nardy accept`, `decline` and `admin void` called the instance given and stopped at
    its refusal ("run by the instance at ...; call it there"): they follow it now, as the
    SDK, the engines and the terminal client do."""
    a, b = pair
    tokens = {}
    for name in ("cli-er", "cli-ed"):
        async with Client(a.address) as player:
            tokens[name] = await player.register(name)
    async with Client(a.address, tokens["cli-er"]) as challenger:  # the match runs at a
        made = await challenger.create_match(
            first=api.SeatSpec(player_name="cli-er"), second=api.SeatSpec(player_name="cli-ed")
        )
    env = {**os.environ, "NARDY_TOKEN": tokens["cli-ed"]}
    command = [sys.executable, "-m", "clients", "accept", made.match_id, "--server", b.address]
    done = await trio.run_process(
        command, env=env, capture_stdout=True, capture_stderr=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert f"accepted: game {made.game_id}" in done.stdout.decode()


async def test_the_operator_lists_every_instances_players_at_any_instance(pair):
    """ListPlayers answered from the instance's memory: the players registered at another
    instance were missing until it had met them (3 of 10 listed)."""
    a, b = pair
    for i, srv in enumerate((a, b, a, b)):
        async with Client(srv.address) as player:
            await player.register(f"listed{i}")
    for srv in (a, b):
        with grpc.insecure_channel(srv.address) as ch:
            listed = admin_grpc.AdminServiceStub(ch).ListPlayers(
                admin_pb.ListPlayersRequest(),
                metadata=(("authorization", f"Bearer {srv.admin_token}"),),
            )
        names = {p.player.name for p in listed.players}
        assert {f"listed{i}" for i in range(4)} <= names, (srv.address, names)


def test_a_challenge_answered_as_its_match_ends_is_refused_as_over(pg_db):
    """A match leaves the instance's tables when it ends and gives up its lease in the
    write after: an answer to its challenge between the two found the lease still this
    instance's and was told "this game's instance stopped and another is taking it over"
    (UNAVAILABLE, retry), as if the instance had died (seen on a loaded machine)."""
    reached, release = threading.Event(), threading.Event()

    class Slow(PostgresStore):  # its ended matches' leases given up only when told
        async def write(self, batch):
            if any(sql.startswith("DELETE FROM leases") for sql, _ in batch):
                reached.set()
                await trio.to_thread.run_sync(release.wait, 60)
            await super().write(batch)

    with EmbeddedServer(db=pg_db, store_factory=Slow) as srv:
        try:
            channel = grpc.insecure_channel(srv.address)
            stub = api_grpc.ArbiterServiceStub(channel)
            md = {}
            for name in ("alice", "bob"):
                token = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name)).token
                md[name] = (("authorization", f"Bearer {token}"),)
            r = stub.CreateMatch(
                api.CreateMatchRequest(
                    first=api.SeatSpec(player_name="alice"), second=api.SeatSpec(player_name="bob")
                ),
                metadata=md["alice"],
            )
            decline = api.DeclineChallengeRequest(match_id=r.match_id)
            stub.DeclineChallenge(decline, metadata=md["bob"])
            assert reached.wait(30)  # the match is over, its lease not yet given up
            with pytest.raises(grpc.RpcError) as again:
                stub.DeclineChallenge(decline, metadata=md["bob"])
            assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION, again.value.details()
        finally:
            release.set()
        channel.close()
