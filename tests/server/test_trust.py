"""Hostile clients against the arbiter: each hole found in the wild, tried again.

Every test plays the stranger: it tries to seat a registered bot without consent, to rig a
game, to get a rigged game counted, to predict seeded dice, to dodge the rate limit with
made-up tokens, to flood the server with players, waiting matches or ladders, to make errors
echo its input, to slip in unknown enum values or huge seeds, to borrow a registered name,
or to ignore the illegal-play limit, and checks that it fails and nothing is written.
"""

from __future__ import annotations

import secrets

import grpc
import pytest
import trio

from nardy.client import Client
from nardy.dice import keyed_die, seeded_server_seed
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from server.app import EmbeddedServer
from server.core.policy import Policy
from tests.server.conftest import create, execute

WIN_IN_ONE = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,1"


async def refused(code: grpc.StatusCode, call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        await call
    assert info.value.code() == code, info.value.details()
    return info.value


async def register(client: Client, name: str) -> Client:
    r = await client.call("RegisterPlayer", api.RegisterPlayerRequest(name=name, bot=True))
    return client.with_token(r.token)


async def admin_call(client: Client, method: str, request):
    """An AdminService call with the client's token."""
    done = trio.Event()
    stub = admin_pb2_grpc.AdminServiceStub(client.channel)
    fut = getattr(stub, method).future(request, metadata=client.metadata, timeout=10)
    token = trio.lowlevel.current_trio_token()
    fut.add_done_callback(lambda _: token.run_sync_soon(done.set))
    await done.wait()
    return fut.result()


def db_count(server: EmbeddedServer, table: str) -> int:
    """Rows in ``table`` of the server's database (SQLite or PostgreSQL)."""
    return execute(server.config.db, f"SELECT count(*) FROM {table}")[0][0]


async def first_event(
    seat: Client, game_id: str, kind: int, from_start: bool = False
) -> pb.GameEvent:
    async for ev in seat.events(game_id, from_start=from_start):
        if ev.type == kind:
            return ev
    raise AssertionError("the game ended first")


# -- consent ----------------------------------------------------------------------------
async def test_nobody_but_the_operator_seats_a_registered_bot(arbiter, client, operator):
    victim = await register(client, "victim")
    stranger = await register(client, "stranger")
    seat_victim = {"first": api.SeatSpec(player_name="victim"), "second": api.SeatSpec()}
    await refused(grpc.StatusCode.PERMISSION_DENIED, client.create_match(**seat_victim))
    await refused(grpc.StatusCode.PERMISSION_DENIED, stranger.create_match(**seat_victim))
    casual = await client.create_match()  # open seats: anyone may
    seat_token = client.with_token(casual.first_seat_token)
    await refused(grpc.StatusCode.PERMISSION_DENIED, seat_token.create_match(**seat_victim))
    await refused(
        grpc.StatusCode.UNAUTHENTICATED,
        client.with_token("made-up").create_match(**seat_victim),
    )
    assert db_count(arbiter, "matches") == 1  # only the casual one
    # the bot may seat itself, and the operator may seat it
    assert (await victim.create_match(**seat_victim)).game_id
    assert (await operator.create_match(**seat_victim)).game_id
    # ... but only the operator creates ladders and voids games
    from nardy.v1 import ladder_pb2_grpc

    ladders = ladder_pb2_grpc.LadderServiceStub(client.channel)
    req = lpb.CreateLadderRequest(name="mine")
    for token in (None, victim.token, casual.first_seat_token):
        with pytest.raises(grpc.RpcError) as info:
            ladders.CreateLadder.future(
                req, metadata=(("authorization", f"Bearer {token}"),) if token else ()
            ).result()
        assert info.value.code() in (
            grpc.StatusCode.PERMISSION_DENIED,
            grpc.StatusCode.UNAUTHENTICATED,
        )
    await refused(
        grpc.StatusCode.PERMISSION_DENIED,
        admin_call(victim, "VoidGame", admin_pb.VoidGameRequest(game_id=casual.game_id)),
    )


async def test_a_challenge_seats_the_other_player_only_when_it_accepts(client, operator):
    alice, bob = await register(client, "alice"), await register(client, "bob")
    r = await alice.create_match(
        first=api.SeatSpec(player_name="alice"), second=api.SeatSpec(player_name="bob")
    )
    assert r.challenge
    # until bob accepts he holds no seat: the game cannot start with him
    await refused(grpc.StatusCode.PERMISSION_DENIED, bob.get_game(r.game_id))
    assert (await alice.get_game(r.game_id)).state.challenge_pending
    await refused(
        grpc.StatusCode.FAILED_PRECONDITION,
        alice.call("AcceptChallenge", api.AcceptChallengeRequest(match_id=r.match_id)),
    )
    # bob hears of it on his player stream
    async for ev in bob.player_events():
        assert ev.type == api.PLAYER_EVENT_TYPE_CHALLENGE and ev.match_id == r.match_id
        break
    await bob.call("AcceptChallenge", api.AcceptChallengeRequest(match_id=r.match_id))
    assert (await bob.get_game(r.game_id)).state.your_color == pb.COLOR_UNSPECIFIED
    assert not (await alice.get_game(r.game_id)).state.challenge_pending
    async with trio.open_nursery() as n:
        n.start_soon(first_event, alice, r.game_id, pb.EVENT_TYPE_GAME_STARTED)
        ev = await first_event(bob, r.game_id, pb.EVENT_TYPE_GAME_STARTED)
    assert ev.state.rated and not ev.state.seeded
    # a declined challenge ends its match at once
    r2 = await alice.create_match(
        first=api.SeatSpec(player_name="alice"), second=api.SeatSpec(player_name="bob")
    )
    await bob.call("DeclineChallenge", api.DeclineChallengeRequest(match_id=r2.match_id))
    state = (await operator.get_game(r2.game_id)).state
    assert state.status == pb.GAME_STATUS_ABORTED and not state.challenge_pending
    # an answered challenge is answered: a second answer is refused alike, declined or not
    for match_id in (r.match_id, r2.match_id):
        for answer in ("AcceptChallenge", "DeclineChallenge"):
            request = getattr(api, f"{answer}Request")(match_id=match_id)
            await refused(grpc.StatusCode.FAILED_PRECONDITION, bob.call(answer, request))
    # the challenger may withdraw its challenge while it waits; nobody else may
    r3 = await alice.create_match(
        first=api.SeatSpec(player_name="alice"), second=api.SeatSpec(player_name="bob")
    )
    carol = await register(client, "carol")
    withdraw = api.DeclineChallengeRequest(match_id=r3.match_id)
    await refused(grpc.StatusCode.FAILED_PRECONDITION, carol.call("DeclineChallenge", withdraw))
    await alice.call("DeclineChallenge", withdraw)
    assert (await operator.get_game(r3.game_id)).state.status == pb.GAME_STATUS_ABORTED


async def test_a_name_is_whole_and_found_whatever_its_case(arbiter, client):
    """``bob\\n`` passed the name check (a regex ``$`` matches before a final newline) and
    printed as bob: a stranger could challenge as a registered player. A name is its
    letters and nothing after them; and a player is seated by its name in any case, as
    names are unique without regard to case."""
    bob, me = await register(client, "bob"), await register(client, "me")
    for name in ("bob\n", "bob\r\n", "\nbob", "b\u043eb", "\uff11bob"):
        request = api.RegisterPlayerRequest(name=name, bot=True)
        await refused(grpc.StatusCode.INVALID_ARGUMENT, client.call("RegisterPlayer", request))
    r = await me.create_match(
        first=api.SeatSpec(player_name="me"), second=api.SeatSpec(player_name="BOB")
    )
    assert r.challenge and [c.match_id for c in await bob.list_challenges()] == [r.match_id]


# -- no rigged results --------------------------------------------------------------------
async def test_a_game_against_a_registered_bot_cannot_be_set_up(arbiter, client, operator):
    await register(client, "bot")
    me = await register(client, "me")
    seats = {"first": api.SeatSpec(player_name="me"), "second": api.SeatSpec(player_name="bot")}
    for rig in (
        {"start_position": WIN_IN_ONE},
        {"dice": [6, 5] * 40},
        {"seed": 7},
        {"first_seat_color": pb.COLOR_WHITE},
    ):
        await refused(grpc.StatusCode.PERMISSION_DENIED, me.create_match(**seats, **rig))
        open_seat = {"first": api.SeatSpec(player_name="me"), "second": api.SeatSpec()}
        await refused(grpc.StatusCode.PERMISSION_DENIED, me.create_match(**open_seat, **rig))
    assert db_count(arbiter, "matches") == 0
    # the operator may set a game up; so may anyone between open seats; neither is rated
    # and every event says so, a custom start included
    for creator, fields in (
        (operator, {**seats, "start_position": WIN_IN_ONE}),
        (client, {"start_position": WIN_IN_ONE}),
    ):
        r = await creator.create_match(**fields)
        assert (await operator.get_game(r.game_id)).state.seeded
        assert not (await operator.get_game(r.game_id)).state.rated
    listed = await client.all_games()
    assert len(listed) == 2 and all(g.seeded and not g.rated for g in listed)


async def test_seeded_dice_come_from_the_documented_keyed_generator(client):
    r = await client.create_match(seed=2**63 - 1, first_seat_color=pb.COLOR_WHITE)
    seats = [client.with_token(t) for t in (r.first_seat_token, r.second_seat_token)]
    async with trio.open_nursery() as n:
        n.start_soon(first_event, seats[1], r.game_id, pb.EVENT_TYPE_TURN_STARTED)
        ev = await first_event(seats[0], r.game_id, pb.EVENT_TYPE_TURN_STARTED)
    key = seeded_server_seed(2**63 - 1, 1)
    assert tuple(ev.state.dice) == (keyed_die(key, (), 0), keyed_die(key, (), 1))
    assert ev.state.seeded and not ev.state.client_seeds  # a public seed takes no client seeds


# -- limits -------------------------------------------------------------------------------
async def test_made_up_tokens_do_not_dodge_the_rate_limit(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "r.db"), rate_per_s=1, rate_burst=10) as srv:
        async with Client(srv.address) as client:
            codes = []
            for _ in range(40):
                liar = (("authorization", f"Bearer {secrets.token_urlsafe(16)}"),)
                try:  # no SDK retries: every call counts
                    client.stub.GetGame(api.GetGameRequest(game_id="none"), metadata=liar)
                except grpc.RpcError as e:
                    codes.append(e.code())
            # keyed on the peer address: at most the burst (and a refill) get through
            assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) >= 25, codes
            # a verified identity has its own budget
            admin = client.with_token(srv.admin_token)
            await refused(grpc.StatusCode.NOT_FOUND, admin.get_game("none"))


async def test_anonymous_callers_cannot_flood_the_server(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "q.db"), players_per_hour=5, open_matches=3) as srv:
        async with Client(srv.address) as client:
            for i in range(5):
                await register(client, f"p{i}")
            await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, register(client, "p5"))
            for _ in range(3):
                await client.create_match()
            await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, client.create_match())
            await refused(
                grpc.StatusCode.INVALID_ARGUMENT,
                client.with_token(srv.admin_token).create_match(start_timeout_ms=2**32 - 1),
            )
            op = client.with_token(srv.admin_token)
            await refused(
                grpc.StatusCode.INVALID_ARGUMENT, client.create_match(start_timeout_ms=600_001)
            )
            assert (await op.create_match(start_timeout_ms=3_600_000)).game_id  # operator
            assert (await op.call("RegisterPlayer", api.RegisterPlayerRequest(name="p5"))).token
            assert db_count(srv, "players") == 6


async def test_a_bot_saying_it_is_ready_again_and_again_is_held_to_a_few_calls_a_minute(
    arbiter, operator
):
    """Each JoinLadder is written: 30 bots saying ready and not ready in turn made about
    1,000 writes a second, and the games' own writes waited behind them (a pair of honest
    bots played 25 games in 30 s instead of 88). Now a few a minute per player; saying it
    is not ready is never refused (a bot that leaves must not be paired)."""
    await operator.create_ladder("flaps", max_games=2, turn_time_ms=5000)
    most = Policy().ladder_joins_per_minute
    async with Client(arbiter.address) as anyone:
        flapper, other = await register(anyone, "flapper"), await register(anyone, "other")

        def join(who: Client, ready: bool):
            return who.call("JoinLadder", lpb.JoinLadderRequest(ladder="flaps", ready=ready))

        for _ in range(most):
            await join(flapper, True)
            await join(flapper, False)  # (not counted: leaving is never refused)
        error = await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, join(flapper, True))
        assert f"at most {most} JoinLadder calls a minute from one player, ready" in (
            error.details()
        )
        await join(flapper, False)
        await join(other, True)  # (another player's calls are its own)
    standings = await operator.standings("flaps")
    assert {r.player.name: r.ready for r in standings.rows} == {"flapper": False, "other": True}


async def test_refused_registrations_leave_nothing_in_memory(tmp_path):
    """An address's refused attempts (a bad name) are not remembered: a stranger cannot
    grow the server's bookkeeping of registrations without registering players."""
    with EmbeddedServer(db=str(tmp_path / "r.db"), players_per_hour=5) as srv:

        def addresses() -> int:
            return srv.call(lambda: len(srv.arbiter.roster.registrations))

        async with Client(srv.address) as client:
            for name in ("", "x" * 41, "no spaces"):
                await refused(grpc.StatusCode.INVALID_ARGUMENT, register(client, name))
            assert await trio.to_thread.run_sync(addresses) == 0
            await register(client, "p0")
            assert await trio.to_thread.run_sync(addresses) == 1


async def test_registrations_at_once_count_against_the_hourly_quota(tmp_path):
    """The quota was checked before a registration was stored and counted after: 1,000
    calls at once from one address registered 87 players on a quota of 30."""
    with EmbeddedServer(db=str(tmp_path / "a.db"), players_per_hour=5) as srv:
        async with Client(srv.address) as client:
            made, codes = [], []

            async def one(n: int) -> None:
                try:
                    made.append(
                        await client.call("RegisterPlayer", api.RegisterPlayerRequest(name=f"s{n}"))
                    )
                except grpc.RpcError as e:
                    codes.append(e.code())

            async with trio.open_nursery() as nursery:
                for n in range(40):
                    nursery.start_soon(one, n)
    assert len(made) == 5
    assert set(codes) == {grpc.StatusCode.RESOURCE_EXHAUSTED}


async def test_seat_tokens_count_as_their_creator_for_limits(tmp_path):
    """Anyone mints seat tokens (a casual match between open seats): were each an identity
    of its own, every limit would be dodged by chaining (a seat token creates matches whose
    seat tokens create more). A seat counts as whoever created its match, after a restart
    too (a stranger's seats share its address's budget)."""
    db = str(tmp_path / "s.db")
    limits = dict(open_matches=2, rate_per_s=0.01, rate_burst=8)
    with EmbeddedServer(db=db, **limits) as srv:
        async with Client(srv.address) as client:
            first = await client.create_match()
            await client.create_match()
            seat = client.with_token(first.first_seat_token)
            await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, seat.create_match())
            assert db_count(srv, "matches") == 2
            admin = srv.admin_token
    with EmbeddedServer(db=db, admin_token=admin, **limits) as srv:
        async with Client(srv.address) as client:
            seat = client.with_token(first.second_seat_token)
            codes = []
            for _ in range(8):  # the seat spends a budget of 8: its creator's
                try:  # no SDK retries: every call counts
                    seat.stub.GetGame(api.GetGameRequest(game_id="none"), metadata=seat.metadata)
                except grpc.RpcError as e:
                    codes.append(e.code())
            assert codes == [grpc.StatusCode.NOT_FOUND] * 8
            await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, client.get_game(first.game_id))


async def test_a_strangers_games_in_progress_count_in_its_quota(tmp_path):
    """Only matches waiting for their seats were counted: a stranger started each of its
    casual matches (both its seats subscribe) and created more, without end. Each game in
    progress lives on the server (~18 KB, a task, a listing, a row replayed at every restart)
    up to 48 h with a 24 h turn time and bank: memory ran out. Its matches count until
    they are over."""
    limits = dict(open_matches=2, match_counted_s=0)  # (the quota of matches not yet over)
    with EmbeddedServer(db=str(tmp_path / "o.db"), **limits) as srv:
        async with Client(srv.address) as client:
            started = []
            for _ in range(2):
                r, seats = await create(client)
                streams = [seat.events(r.game_id) for seat in seats]
                for stream in streams:
                    assert (await anext(stream)).type == pb.EVENT_TYPE_SNAPSHOT
                async for ev in streams[0]:  # both seats are here: it starts
                    if ev.type == pb.EVENT_TYPE_GAME_STARTED:
                        break
                started.append((r, seats, streams))
            await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, client.create_match())
            r, seats, streams = started[0]
            await seats[0].resign(r.game_id)  # one is over: room for another
            for _, _, streams in started:
                for stream in streams:
                    await stream.aclose()
            assert (await client.create_match()).game_id


async def test_matches_called_off_at_once_still_count_in_the_quota(tmp_path):
    """A match that ends at once freed its place in its creator's quota at once: with a
    start timeout of 1 ms a stranger created, stored and listed ~400 matches a second
    (+0.7 MB/s of journal), and the aborted games pushed every finished one out of the
    newest games ListGames reads. A match counts at least 10 s from its creation."""
    with EmbeddedServer(db=str(tmp_path / "q.db"), open_matches=3) as srv:
        async with Client(srv.address) as client:
            for _ in range(3):
                r = await client.create_match(start_timeout_ms=1)
                async for ev in client.events(r.game_id):  # a spectator: nobody came
                    ended = ev.type == pb.EVENT_TYPE_GAME_ABORTED
                    if ended or ev.state.status == pb.GAME_STATUS_ABORTED:
                        break
            error = await refused(grpc.StatusCode.RESOURCE_EXHAUSTED, client.create_match())
            assert "created in the last 10 s" in error.details()
            assert db_count(srv, "matches") == 3
            # nor are they listed where the games played are (GetGame still answers)
            assert not (await client.list_games()).games
            state = (await client.get_game(r.game_id)).state
            assert state.status == pb.GAME_STATUS_ABORTED
    with EmbeddedServer(db=str(tmp_path / "q.db"), open_matches=3) as srv:  # nor after a restart
        async with Client(srv.address) as client:
            assert not (await client.list_games()).games
            assert (await client.get_game(r.game_id)).state.status == pb.GAME_STATUS_ABORTED


async def test_closed_registration_is_for_the_operator(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "c.db"), registration_open=False) as srv:
        async with Client(srv.address) as client:
            await refused(grpc.StatusCode.PERMISSION_DENIED, register(client, "me"))
            await register(client.with_token(srv.admin_token), "me")


async def test_list_games_is_paginated(client, operator):
    for _ in range(12):
        await operator.create_match()
    r = await client.call("ListGames", api.ListGamesRequest(limit=10_000))
    assert len(r.games) == 12 and not r.next_page_token
    seen, token = [], ""
    while True:
        r = await client.call("ListGames", api.ListGamesRequest(limit=5, page_token=token))
        assert len(r.games) <= 5
        seen += [g.game_id for g in r.games]
        token = r.next_page_token
        if not token:
            break
    assert len(seen) == len(set(seen)) == 12
    await refused(
        grpc.StatusCode.INVALID_ARGUMENT,
        client.call("ListGames", api.ListGamesRequest(page_token="x" * 500)),
    )


async def test_errors_quote_little_of_the_request(client):
    e = await refused(grpc.StatusCode.NOT_FOUND, client.get_game("g" * 60_000))
    assert len(e.details()) < 300
    e = await refused(
        grpc.StatusCode.NOT_FOUND,
        client.create_match(first=api.SeatSpec(player_name="n" * 60_000)),
    )
    assert len(e.details()) < 300


async def test_unknown_enums_and_huge_seeds_are_refused_with_nothing_written(arbiter, client):
    bad = (
        {"options": pb.GameOptions(opening=99)},
        {"options": pb.GameOptions(colours=-3)},
        {"first_seat_color": 7},
        {"seed": 2**63},
        {"seed": 2**64 - 1},
        {"dice": [7]},
        # stored with the match for good: 16,000 dice were ~48 KB a row, for anyone
        {"dice": [6] * 1001},
    )
    for fields in bad:
        await refused(grpc.StatusCode.INVALID_ARGUMENT, client.create_match(**fields))
    await refused(
        grpc.StatusCode.INVALID_ARGUMENT,
        client.call("ListGames", api.ListGamesRequest(status=42)),
    )
    assert db_count(arbiter, "matches") == db_count(arbiter, "seat_tokens") == 0


async def test_an_open_seat_cannot_take_a_registered_name(arbiter, client):
    """Nor one that reads the same: with a space around it, or in other Unicode forms
    (fullwidth letters); a staged result under a player's name looked like theirs."""
    champion = await register(client, "Champion")
    for name in ("Champion", "champion", "Champion ", " champion", "Ｃｈａｍｐｉｏｎ"):
        await refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            client.create_match(first=api.SeatSpec(display_name=name)),
        )
    await refused(grpc.StatusCode.ALREADY_EXISTS, register(client, "CHAMPION"))
    assert db_count(arbiter, "matches") == 0
    # one in other letters that look the same (Cyrillic С) is a name of its own; every
    # reader is told it is an open seat's, not a registered player's
    r = await champion.create_match(
        first=api.SeatSpec(player_name="Champion"), second=api.SeatSpec(display_name="Сhampion")
    )
    state = (await client.get_game(r.game_id)).state
    assert state.first_player.name == "Champion" and not state.first_player.open_seat
    assert state.second_player.name == "Сhampion" and state.second_player.open_seat


async def test_the_illegal_play_limit_is_honoured(client):
    r = await client.create_match(
        options=pb.GameOptions(illegal_play_limit=2), first_seat_color=pb.COLOR_WHITE
    )
    white, black = (client.with_token(t) for t in (r.first_seat_token, r.second_seat_token))
    async with trio.open_nursery() as n:
        n.start_soon(first_event, black, r.game_id, pb.EVENT_TYPE_GAME_STARTED)
        ev = await first_event(white, r.game_id, pb.EVENT_TYPE_TURN_STARTED)
    assert ev.state.options.illegal_play_limit == 2
    said = []
    for _ in range(2):
        with pytest.raises(grpc.RpcError) as info:
            await white.submit(r.game_id, ev.state.turn_id, notation="1/off")
        said.append(info.value.details())
    # the refusal that loses the game says so (it said only "illegal play: ...")
    assert "the game is lost" not in said[0]
    assert said[1].startswith("illegal play: ") and "; the game is lost: 2 plays refused" in said[1]
    final = await first_event(white, r.game_id, pb.EVENT_TYPE_GAME_FINISHED, from_start=True)
    assert final.state.result.termination == pb.TERMINATION_ILLEGAL_PLAYS
    assert final.state.result.winner == pb.COLOR_BLACK


async def test_the_operator_voids_games(client, operator):
    r = await client.create_match()
    r2 = await admin_call(operator, "VoidGame", admin_pb.VoidGameRequest(game_id=r.game_id))
    assert r2.status == pb.GAME_STATUS_ABORTED
    assert (await client.get_game(r.game_id)).state.status == pb.GAME_STATUS_ABORTED
    players = await admin_call(operator, "ListPlayers", admin_pb.ListPlayersRequest())
    assert list(players.players) == []


async def test_reflection_v1_and_v1alpha(arbiter):
    from grpc_reflection.v1alpha import reflection_pb2 as refl

    ch = grpc.insecure_channel(arbiter.address)
    try:
        for version in ("v1", "v1alpha"):
            call = ch.stream_stream(
                f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                request_serializer=refl.ServerReflectionRequest.SerializeToString,
                response_deserializer=refl.ServerReflectionResponse.FromString,
            )
            (answer,) = list(call(iter([refl.ServerReflectionRequest(list_services="")])))
            names = {s.name for s in answer.list_services_response.service}
            assert {"nardy.v1.ArbiterService", "nardy.v1.AdminService"} <= names
            assert "grpc.reflection.v1.ServerReflection" in names
    finally:
        ch.close()


async def test_the_operators_token_follows_no_players_stream(operator):
    """The operator holds no seat: its SubscribePlayer stream was opened and said nothing,
    ever (a bot given the operator's token by mistake waited for games that never came)."""
    with pytest.raises(grpc.RpcError) as info:
        await anext(operator.player_events(resume=False))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "holds no seat" in info.value.details()
