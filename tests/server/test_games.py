"""The arbiter over real gRPC: whole games, matches, clocks, resignation (RULES.md §2, §5, §6)."""

from __future__ import annotations

import grpc
import pytest
import trio

from nardy import Position
from nardy.client import play_game
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from tests.server.conftest import create, random_engine, resigned


async def collect(seat, game_id, engine):
    """Play a game with ``engine`` and return every event the seat saw."""
    events = []

    def wrapped(turn):
        return engine(turn)

    async for ev in seat.events(game_id):
        events.append(ev)
        if ev.type == pb.EVENT_TYPE_TURN_STARTED and ev.state.side_to_move == ev.state.your_color:
            await seat.submit(
                game_id, ev.state.turn_id, end_position=wrapped(_Turn(ev.state)).end_position
            )
    return events


class _Turn:
    def __init__(self, state):
        self.legal = list(state.legal_plays)


async def test_full_game_between_two_clients(client):
    r, (a, b) = await create(client, target_points=1, seed=11)
    results = {}

    async def seat(name, c, seed):
        results[name] = await collect(c, r.game_id, random_engine(seed))

    async with trio.open_nursery() as n:
        n.start_soon(seat, "a", a, 1)
        n.start_soon(seat, "b", b, 2)
    for events in results.values():
        skip = (pb.EVENT_TYPE_SNAPSHOT, pb.EVENT_TYPE_HEARTBEAT)
        real = [e for e in events if e.type not in skip]
        assert [e.seq for e in real] == list(range(real[0].seq, real[-1].seq + 1))
        final = events[-1]
        assert final.type == pb.EVENT_TYPE_GAME_FINISHED
        assert final.state.status == pb.GAME_STATUS_FINISHED
        assert final.state.seeded
        res = final.state.result
        assert res.termination == pb.TERMINATION_NORMAL
        pos = Position.parse(final.state.position)
        assert pos.winner is not None
        # §5: mars (2) when the loser bore off nothing, else oin (1).
        loser_off = pos.borne_off(pos.winner.opponent)
        assert res.points == (1 if loser_off else 2)
    # every legal play list the seat got was for its own turn only
    for name, events in results.items():
        for e in events:
            if e.state.legal_plays:
                assert e.state.side_to_move == e.state.your_color, name


@pytest.mark.slow
async def test_three_point_match_alternates_colours(client):
    r, seats = await create(client, target_points=3, options={"auto_play_forced": True})
    game_ids = [r.game_id]
    whites = []
    finals = []

    async def run_seat(c, seed):
        game_id = r.game_id
        engine = random_engine(seed)
        while game_id:
            final = await play_game(c, game_id, engine)
            if c is seats[0]:
                whites.append(final.white.name)
                finals.append(final)
                if final.next_game_id:
                    game_ids.append(final.next_game_id)
            game_id = final.next_game_id

    async with trio.open_nursery() as n:
        n.start_soon(run_seat, seats[0], 3)
        n.start_soon(run_seat, seats[1], 4)
    last = finals[-1]
    assert last.match.over
    assert max(last.match.white_points, last.match.black_points) >= 3
    assert len(finals) == len(game_ids) >= 2
    # §2: colours alternate from game to game after the first throw.
    for prev, nxt in zip(whites, whites[1:], strict=False):
        assert prev != nxt
    # scores add up: the sum of points over games equals the final total
    assert sum(f.result.points for f in finals) == last.match.white_points + last.match.black_points
    assert [f.game_number for f in finals] == list(range(1, len(finals) + 1))


async def _first_turn(seat, game_id):
    async for ev in seat.events(game_id):
        if ev.type == pb.EVENT_TYPE_TURN_STARTED:
            return ev


async def test_timeout_loses_by_mars_when_nothing_borne_off(client):
    r, (a, b) = await create(client, seed=5, options={"turn_time_ms": 300})
    async with trio.open_nursery() as n:  # both seats present, nobody plays
        n.start_soon(_drain, a, r.game_id)
        final = await _last_event(b, r.game_id)
    assert final.type == pb.EVENT_TYPE_GAME_FINISHED
    res = final.state.result
    assert res.termination == pb.TERMINATION_TIMEOUT
    assert res.kind == pb.RESULT_KIND_MARS and res.points == 2  # §5 / §6
    assert res.winner == pb.COLOR_BLACK  # white was to move and ran out of time
    # the loser's clock reads nothing left (it read the whole turn time again), in the
    # last event and in the game read back afterwards
    for state in (final.state, (await client.get_game(r.game_id)).state):
        clock = state.white_clock
        assert (clock.remaining_ms, clock.bank_ms) == (0, 0), state
        assert state.black_clock.remaining_ms == 300
    # a play that comes too late is told how the game ended
    with pytest.raises(grpc.RpcError) as late:
        await a.submit(r.game_id, 1, notation="24/18 18/13")
    assert late.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert late.value.details() == "the game is over: black wins mars (2) by timeout"


async def test_timeout_is_oin_when_loser_bore_off(client):
    # white home and one checker off; black home with one off: whoever times out loses oin.
    start = "w/0,0,0,0,0,0,-14,0,0,0,0,0,0,0,0,0,0,0,14,0,0,0,0,0"
    r, (a, b) = await create(client, seed=5, start_position=start, options={"turn_time_ms": 300})
    async with trio.open_nursery() as n:
        n.start_soon(_drain, a, r.game_id)
        final = await _last_event(b, r.game_id)
    res = final.state.result
    assert res.termination == pb.TERMINATION_TIMEOUT
    assert res.kind == pb.RESULT_KIND_OIN and res.points == 1


async def test_resignation(client):
    r, (a, b) = await create(client, seed=8)
    async with trio.open_nursery() as n:
        n.start_soon(_drain, b, r.game_id)
        ev = await _first_turn(a, r.game_id)
        loser = a if ev.state.your_color == pb.COLOR_WHITE else b
        resp = await loser.resign(r.game_id)
    assert resp.result.termination == pb.TERMINATION_RESIGNATION
    assert resp.result.kind == pb.RESULT_KIND_MARS
    assert resp.result.winner == pb.COLOR_BLACK


async def test_abandonment_when_the_seat_is_gone(client):
    r, (a, b) = await create(client, seed=5, options={"turn_time_ms": 400})
    # white's seat is decided by the opening throw; both subscribe, then both leave except one
    async with trio.open_nursery() as n:
        n.start_soon(_drain, b, r.game_id)
        ev = await _first_turn(a, r.game_id)  # a leaves its stream after the first turn
    white_is_a = ev.state.your_color == pb.COLOR_WHITE
    state = (await client.get_game(r.game_id)).state
    while state.status != pb.GAME_STATUS_FINISHED:
        await trio.sleep(0.05)
        state = (await client.get_game(r.game_id)).state
    res = state.result
    if white_is_a:  # a (white, to move) had no stream when its clock ran out
        assert res.termination == pb.TERMINATION_ABANDONMENT
    else:
        assert res.termination in (pb.TERMINATION_TIMEOUT, pb.TERMINATION_ABANDONMENT)


async def _drain(seat, game_id):
    async for _ in seat.events(game_id):
        pass


async def _last_event(seat, game_id):
    last = None
    async for ev in seat.events(game_id):
        last = ev
    return last


async def test_registered_players_play_under_their_names_and_owners(client, operator):
    tokens = {}
    for name in ("alpha", "beta"):
        req = api.RegisterPlayerRequest(name=name, bot=True, owner=f"team-{name}")
        tokens[name] = (await client.call("RegisterPlayer", req)).token
    r = await operator.create_match(
        first=api.SeatSpec(player_name="alpha"), second=api.SeatSpec(player_name="beta"), seed=2
    )
    a, b = client.with_token(tokens["alpha"]), client.with_token(tokens["beta"])
    async with trio.open_nursery() as n:
        n.start_soon(_drain, b, r.game_id)
        ev = await _first_turn(a, r.game_id)
        await (a if ev.state.your_color == ev.state.side_to_move else b).resign(r.game_id)
    state = (await client.get_game(r.game_id)).state
    assert {state.white.name, state.black.name} == {"alpha", "beta"}
    assert {state.white.owner, state.black.owner} == {"team-alpha", "team-beta"}
    assert state.white.bot and state.black.bot


async def test_a_seat_that_stays_away_from_a_matchs_next_game_loses_it(client):
    """§5: leaving loses. A seat that did not come to a match's second game had the game
    and the match called off: the player behind escaped the match. It loses the game by
    abandonment (a mars: nothing borne off), and the match goes on to its end."""
    r, seats = await create(client, target_points=3, start_timeout_ms=1000)
    second = await resigned(seats, r.game_id)  # the first seat resigns: 0-2
    assert second
    scores = []
    game_id = second
    while game_id:  # only the first seat comes to the next games
        async for ev in seats[0].events(game_id):
            if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
                break
        st = ev.state
        assert ev.type == pb.EVENT_TYPE_GAME_FINISHED, st
        assert st.result.termination == pb.TERMINATION_ABANDONMENT
        assert st.result.kind == pb.RESULT_KIND_MARS and st.result.points == 2
        assert st.result.winner == st.your_color  # the seat that came
        scores.append((st.match.white_points, st.match.black_points))
        game_id = st.next_game_id
    assert st.match.over and len(scores) == 2  # 2-2, then 4-2 for the seat that came
    assert sorted(scores[-1]) == [2, 4]


async def test_voiding_a_finished_game_of_a_match_voids_the_match(client, operator):
    """A voided game never counts (PROTOCOL.md): the match's score kept its points, and the
    match went on to a "3-0" it had not won. Voiding a finished game of a match voids the
    match: every game of it, the next one called off."""
    from nardy.v1 import admin_pb2 as admin_pb
    from tests.server.test_trust import admin_call

    r, seats = await create(client, target_points=3)
    second = await resigned(seats, r.game_id)  # 0-2 for the second seat
    void = admin_pb.VoidGameRequest(game_id=r.game_id)
    assert (await admin_call(operator, "VoidGame", void)).status == pb.GAME_STATUS_ABORTED
    for game_id in (r.game_id, second):
        assert (await client.get_game(game_id)).state.status == pb.GAME_STATUS_ABORTED
    listed = {g.game_id: g.status for g in (await client.list_games(limit=10)).games}
    assert listed == {r.game_id: pb.GAME_STATUS_ABORTED, second: pb.GAME_STATUS_ABORTED}


async def test_an_ended_games_state_keeps_the_match_score_it_left(client):
    """GetGame of a match's first game read the match's score now (0-4, over) once the
    match had gone on: an ended game's state is as its last event left it (0-2)."""
    r, seats = await create(client, target_points=3)
    second = await resigned(seats, r.game_id)
    assert await resigned(seats, second) == ""  # 0-4: the match is over
    first = (await client.get_game(r.game_id)).state
    assert (first.match.white_points + first.match.black_points, first.match.over) == (2, False)
    last = (await client.get_game(second)).state
    assert (last.match.white_points + last.match.black_points, last.match.over) == (4, True)
    async for ev in seats[0].events(r.game_id):  # a SNAPSHOT of it too
        assert ev.type == pb.EVENT_TYPE_SNAPSHOT
        assert (ev.state.match.white_points + ev.state.match.black_points) == 2
        break
