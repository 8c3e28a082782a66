"""A seat's own-turns stream (SubscribeGameRequest.filter = EVENT_FILTER_OWN_TURNS), over
real gRPC: exactly the events a seat needs to play, resume across its seq gaps, whole
games with both seats filtered, and refusals."""

from __future__ import annotations

import grpc
import pytest
import trio

from nardy.client import play_game
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from tests.server.conftest import create, random_engine

NOT_RECORDED = (pb.EVENT_TYPE_SNAPSHOT, pb.EVENT_TYPE_HEARTBEAT)
KEPT = (pb.EVENT_TYPE_GAME_STARTED, pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED)


class _Turn:
    def __init__(self, state):
        self.legal = list(state.legal_plays)


async def _play(seat, game_id: str, seed: int, own_turns: bool) -> list:
    """Play the game with a random engine from this seat's stream; every event it saw."""
    engine, seen = random_engine(seed), []
    async for ev in seat.events(game_id, own_turns=own_turns):
        seen.append(ev)
        st = ev.state
        if st.legal_plays and st.side_to_move == st.your_color:
            play = engine(_Turn(st))
            await seat.submit(game_id, st.turn_id, end_position=play.end_position, attempts=3)
    return seen


def _concerns(ev, color) -> bool:
    """The filter as arbiter.proto specifies it, for the reference stream's events."""
    if ev.type == pb.EVENT_TYPE_TURN_STARTED:
        return ev.state.side_to_move == color
    return ev.type in KEPT


@pytest.mark.slow
async def test_a_filtered_seat_receives_exactly_its_own_turns(client):
    r, (a, b) = await create(client, seed=5)
    seen = {}

    async def seat(name, c, seed, own_turns):
        seen[name] = await _play(c, r.game_id, seed, own_turns)

    async with trio.open_nursery() as n:
        n.start_soon(seat, "a", a, 1, True)
        n.start_soon(seat, "b", b, 2, False)
    full = [e for e in seen["b"] if e.type not in NOT_RECORDED]
    assert [e.seq for e in full] == list(range(1, full[-1].seq + 1))  # unfiltered: no gaps
    got = [e for e in seen["a"] if e.type not in NOT_RECORDED]
    color = got[-1].state.your_color
    assert color != pb.COLOR_UNSPECIFIED
    assert [(e.seq, e.type) for e in got] == [(e.seq, e.type) for e in full if _concerns(e, color)]
    turns = [e for e in got if e.type == pb.EVENT_TYPE_TURN_STARTED]
    assert len(turns) > 10 and all(e.state.legal_plays for e in turns)
    assert not any(e.type == pb.EVENT_TYPE_PLAY_MADE for e in got)
    # what the opponent did shows in the next TURN_STARTED: the position after its play
    by_seq = {e.seq: e for e in full}
    for e in turns[1:]:
        before = by_seq[e.seq - 1]
        assert before.type in (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED)
        assert e.state.position == before.state.position
    assert got[-1].type == pb.EVENT_TYPE_GAME_FINISHED and got[-1].state.server_seed
    assert got[-1].state.position == full[-1].state.position
    # the same filter on a replay of the ended game: the same events, no legal plays
    replay = [ev async for ev in a.events(r.game_id, from_start=True, own_turns=True)]
    assert [(e.seq, e.type) for e in replay] == [(e.seq, e.type) for e in got]
    assert not any(e.state.legal_plays for e in replay)


async def test_resume_across_the_gaps_of_a_filtered_stream(client):
    """A filtered seat that drops on its waiting turn is offered it again (a SNAPSHOT);
    one that drops after its play gets, on resuming, its next TURN_STARTED only."""
    r, seats = await create(client, seed=8)
    gid = r.game_id
    # the first seat's stream, filtered: SNAPSHOT (waiting), then GAME_STARTED
    first = seats[0].events(gid, own_turns=True, resume=False)
    assert (await first.__anext__()).type == pb.EVENT_TYPE_SNAPSHOT
    await first.aclose()
    reference: list = []  # the second seat's stream, unfiltered
    opponent_played = trio.Event()
    heard = [trio.Event()]  # set at each event the second seat's stream brings
    async with trio.open_nursery() as n:

        async def other() -> None:
            async for ev in seats[1].events(gid):
                reference.append(ev)
                heard[0].set()
                heard[0] = trio.Event()
                st = ev.state
                if st.legal_plays and st.side_to_move == st.your_color:
                    await seats[1].submit(
                        gid, st.turn_id, end_position=st.legal_plays[0].end_position
                    )
                    opponent_played.set()

        n.start_soon(other)
        me = None
        async for ev in seats[0].events(gid, own_turns=True, resume=False):
            if ev.type == pb.EVENT_TYPE_TURN_STARTED:
                me = ev
                break  # drop the stream on my waiting turn
        assert me is not None and me.state.legal_plays
        # resume after it: the waiting turn is announced again
        async for ev in seats[0].events(gid, after_seq=me.seq, own_turns=True, resume=False):
            assert ev.type == pb.EVENT_TYPE_SNAPSHOT
            assert (ev.seq, ev.state.turn_id) == (me.seq, me.state.turn_id)
            assert [p.end_position for p in ev.state.legal_plays] == [
                p.end_position for p in me.state.legal_plays
            ]
            break
        opponent_played = trio.Event()
        await seats[0].submit(
            gid, me.state.turn_id, end_position=me.state.legal_plays[0].end_position
        )
        await opponent_played.wait()  # its answer comes once my next turn is told
        # resume after my old turn: the plays and the opponent's turn are skipped
        async for ev in seats[0].events(gid, after_seq=me.seq, own_turns=True, resume=False):
            nxt = ev
            break
        assert nxt.type == pb.EVENT_TYPE_TURN_STARTED
        assert nxt.state.turn_id == me.state.turn_id + 2 and nxt.state.legal_plays
        assert nxt.seq == me.seq + 4  # my PLAY_MADE, its TURN_STARTED and PLAY_MADE skipped
        while reference[-1].seq < nxt.seq - 1:  # (the other stream may be behind this one)
            await heard[0].wait()
        assert [e.type for e in reference if me.seq < e.seq < nxt.seq] == [
            pb.EVENT_TYPE_PLAY_MADE,
            pb.EVENT_TYPE_TURN_STARTED,
            pb.EVENT_TYPE_PLAY_MADE,
        ]
        # resuming at the latest seq with my turn waiting: a SNAPSHOT again
        async for ev in seats[0].events(gid, after_seq=nxt.seq, own_turns=True, resume=False):
            assert ev.type == pb.EVENT_TYPE_SNAPSHOT and ev.state.turn_id == nxt.state.turn_id
            break
        await seats[0].resign(gid)
        ends = [ev.type async for ev in seats[0].events(gid, after_seq=nxt.seq, own_turns=True)]
        assert ends == [pb.EVENT_TYPE_GAME_FINISHED]


@pytest.mark.slow
async def test_a_match_plays_to_the_end_with_both_seats_filtered(client):
    """The SDK's bot loop follows its own turns only: two of them play a whole match, the
    fair dice revealed at the end."""
    r, seats = await create(client, target_points=3)
    finals = {}

    async def seat(i: int) -> None:
        gid = r.game_id
        while True:
            final = finals[i, gid] = await play_game(seats[i], gid, random_engine(i))
            if not final.next_game_id:
                return
            gid = final.next_game_id

    async with trio.open_nursery() as n:
        n.start_soon(seat, 0)
        n.start_soon(seat, 1)
    last = [state for (i, _), state in finals.items() if not state.next_game_id]
    assert len(last) == 2 and all(s.match.over for s in last)
    for state in finals.values():
        assert state.status == pb.GAME_STATUS_FINISHED
        assert state.server_seed and state.result.points >= 1


def _first_or_code(stub, request, md):
    """The first event of a SubscribeGame stream, or the status code it ended with."""
    stream = stub.SubscribeGame(request, metadata=md, timeout=30)
    try:
        return next(stream)
    except grpc.RpcError as e:
        return e.code()
    finally:
        stream.cancel()


@pytest.mark.slow
async def test_filter_refusals(arbiter, client):
    """The rule for enums (a value this server does not know is INVALID_ARGUMENT)
    and no own-turns stream for a spectator; the seat is served afterwards."""
    r, _ = await create(client)
    seat = (("authorization", f"Bearer {r.first_seat_token}"),)
    own = api.EVENT_FILTER_OWN_TURNS
    with grpc.insecure_channel(arbiter.address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        for request, md in (
            (api.SubscribeGameRequest(game_id=r.game_id, filter=7), seat),
            (api.SubscribeGameRequest(game_id=r.game_id, filter=-1), seat),
            (api.SubscribeGameRequest(game_id=r.game_id, filter=own), ()),
        ):
            got = await trio.to_thread.run_sync(_first_or_code, stub, request, md)
            assert got == grpc.StatusCode.INVALID_ARGUMENT, request
        request = api.SubscribeGameRequest(game_id=r.game_id, filter=own)
        got = await trio.to_thread.run_sync(_first_or_code, stub, request, seat)
        assert got.type == pb.EVENT_TYPE_SNAPSHOT
