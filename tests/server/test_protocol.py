"""Protocol discipline over real gRPC: status codes, idempotent plays, resume, health,
reflection, and many games at once."""

from __future__ import annotations

import grpc
import pytest
import trio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from nardy.client import Client, play_game
from nardy.v1 import game_pb2 as pb
from tests.server.conftest import create, random_engine


async def _turn_for(seats, game_id):
    """Subscribe both seats; return (seat to move, other seat, TURN_STARTED event, streams)."""
    first = None
    async for ev in seats[0].events(game_id):
        if ev.type == pb.EVENT_TYPE_TURN_STARTED:
            first = ev
            break
    mover = seats[0] if first.state.your_color == first.state.side_to_move else seats[1]
    other = seats[1] if mover is seats[0] else seats[0]
    return mover, other, first


async def _code(coro) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        await coro
    return info.value.code()


async def _started(client, seats, **fields):
    r, seats = await create(client, seed=21, **fields)
    async with trio.open_nursery() as n:
        n.start_soon(_first_event, seats[1], r.game_id)
        mover, other, ev = await _turn_for(seats, r.game_id)
    return r, mover, other, ev


async def _first_event(seat, game_id):
    async for _ in seat.events(game_id):
        return


async def test_refusals_have_the_right_status_codes(client):
    r, mover, other, ev = await _started(client, None)
    gid, turn = r.game_id, ev.state.turn_id
    # illegal play: INVALID_ARGUMENT with the reason
    with pytest.raises(grpc.RpcError) as info:
        await mover.submit(gid, turn, notation="24/12")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "illegal play" in info.value.details()
    assert (
        await _code(mover.submit(gid, turn, notation="nonsense"))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        await _code(mover.submit(gid, turn, end_position="w/1,2,3"))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    # out of turn: FAILED_PRECONDITION
    legal = ev.state.legal_plays or None
    assert (
        await _code(other.submit(gid, turn, notation="24/18"))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    # wrong turn id
    assert (
        await _code(mover.submit(gid, turn + 5, notation="24/18"))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    # unknown game, missing token, bad token, a seat that is not yours
    assert await _code(mover.submit("nope", turn, notation="24/18")) == grpc.StatusCode.NOT_FOUND
    anon = Client(mover.address, "")
    assert await _code(anon.submit(gid, turn, notation="24/18")) == grpc.StatusCode.UNAUTHENTICATED
    assert (
        await _code(anon.with_token("forged").submit(gid, turn, notation="24/18"))
        == grpc.StatusCode.UNAUTHENTICATED
    )
    r2, (x, _) = await create(client)
    assert await _code(x.submit(gid, turn, notation="24/18")) == grpc.StatusCode.PERMISSION_DENIED
    anon.close()
    # the server is unhurt: the right play goes through
    async for e in mover.events(gid):
        if e.type == pb.EVENT_TYPE_SNAPSHOT:
            legal = e.state.legal_plays
            break
    resp = await mover.submit(gid, turn, end_position=legal[0].end_position)
    assert not resp.duplicate
    # idempotent: the same play again gives the same answer, marked duplicate
    again = await mover.submit(gid, turn, end_position=legal[0].end_position)
    assert again.duplicate and again.end_position == resp.end_position
    again = await mover.submit(gid, turn, notation=legal[0].notation)
    assert again.duplicate
    # a different play for the played turn is refused
    if len(legal) > 1:
        assert (
            await _code(mover.submit(gid, turn, end_position=legal[1].end_position))
            == grpc.StatusCode.FAILED_PRECONDITION
        )
    # after the game is over
    await other.resign(gid) if (await client.get_game(gid)).state.side_to_move else None
    state = (await client.get_game(gid)).state
    assert state.status == pb.GAME_STATUS_FINISHED
    assert (
        await _code(mover.submit(gid, state.turn_id, notation="24/18"))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    assert await _code(mover.resign(gid)) == grpc.StatusCode.FAILED_PRECONDITION
    assert await _code(client.get_game("missing")) == grpc.StatusCode.NOT_FOUND


async def test_resubscribe_with_last_seq_misses_nothing(client):
    r, seats = await create(client, seed=3, options={"auto_play_forced": True})
    gid = r.game_id
    seen: list[int] = []

    async def player(seat, seed, drop_every):
        engine = random_engine(seed)
        last = 0
        while True:
            got = 0
            done = False
            async for ev in seat.events(gid, after_seq=last, resume=False):
                if ev.type in (pb.EVENT_TYPE_SNAPSHOT, pb.EVENT_TYPE_HEARTBEAT):
                    pass
                else:
                    if seat is seats[0]:
                        seen.append(ev.seq)
                    last = ev.seq
                    got += 1
                st = ev.state
                if st.legal_plays and st.side_to_move == st.your_color:
                    try:
                        await seat.submit(gid, st.turn_id, end_position=engine(_T(st)).end_position)
                    except grpc.RpcError as e:
                        assert e.code() == grpc.StatusCode.FAILED_PRECONDITION
                if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                    done = True
                    break
                if drop_every and got >= drop_every:
                    break  # drop the stream on purpose
            if done:
                return

    async with trio.open_nursery() as n:
        n.start_soon(player, seats[0], 1, 7)
        n.start_soon(player, seats[1], 2, 0)
    total = (await client.get_game(gid)).last_seq
    assert seen == list(range(1, total + 1))


class _T:
    def __init__(self, state):
        self.legal = list(state.legal_plays)


async def test_health_and_reflection(arbiter):
    ch = grpc.insecure_channel(arbiter.address)
    try:
        health = health_pb2_grpc.HealthStub(ch)
        for name in ("", "nardy.v1.ArbiterService"):
            resp = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(ch)
        reqs = iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        names = {
            s.name
            for r in refl.ServerReflectionInfo(reqs, timeout=5)
            for s in r.list_services_response.service
        }
        assert {"nardy.v1.ArbiterService", "grpc.health.v1.Health"} <= names
    finally:
        ch.close()


RACE = "w/0,0,0,0,0,0,-3,-3,-3,-2,-2,-2,0,0,0,0,0,0,3,3,3,2,2,2"


@pytest.mark.slow
async def test_two_hundred_concurrent_games(operator):
    """200 games at once to completion; they start from a bear-off race to keep CI short.
    (The operator creates them: anonymous callers may keep only a few matches waiting.)"""
    games = []
    for i in range(200):
        r, seats = await create(
            operator, seed=1000 + i, start_position=RACE, options={"auto_play_forced": True}
        )
        games.append((r.game_id, seats))
    finals = {}

    async def seat(gid, c, seed):
        finals.setdefault(gid, []).append(await play_game(c, gid, random_engine(seed)))

    async with trio.open_nursery() as n:
        for i, (gid, (a, b)) in enumerate(games):
            n.start_soon(seat, gid, a, 2 * i)
            n.start_soon(seat, gid, b, 2 * i + 1)
    assert len(finals) == 200
    for states in finals.values():
        assert all(s.status == pb.GAME_STATUS_FINISHED for s in states)
        assert all(s.result.termination == pb.TERMINATION_NORMAL for s in states)
