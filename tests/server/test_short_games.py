"""Short nardy end to end over the real server (RULES.md §8-9): games and matches played
by the bundled engines through the SDK, checked move by move by the variant."""

from __future__ import annotations

import trio

from engines.registry import make_engine, sdk_adapter
from nardy import variant, wire
from nardy.client import play_game
from nardy.v1 import game_pb2 as pb
from tests.server.conftest import create

SHORT = variant("short")


async def _play(seats, game_id, names=("greedy", "random")):
    finals = {}

    async def seat(i, c):
        engine = sdk_adapter(make_engine(names[i], seed=i, variant_name="short"))
        finals[i] = await play_game(c, game_id, engine)

    async with trio.open_nursery() as n:
        for i, c in enumerate(seats):
            n.start_soon(seat, i, c)
    return finals


async def _events(client, game_id):
    events = []
    async for ev in client.events(game_id, from_start=True):
        events.append(ev)
        if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
            return events
    return events


async def test_a_full_short_game_over_the_server(client):
    r, seats = await create(client, seed=21, options={"variant": "short"})
    with trio.fail_after(120):
        await _play(seats, r.game_id)
    events = await _events(client, r.game_id)
    first = events[0].state
    assert first.options.variant == "short"
    assert first.options.opening == pb.OPENING_RULE_USE_OPENING_DICE  # §8 default
    assert first.position == SHORT.start().text()
    started = next(e for e in events if e.type == pb.EVENT_TYPE_GAME_STARTED)
    throw = started.opening_throws[-1]
    turn1 = next(e for e in events if e.type == pb.EVENT_TYPE_PLAY_MADE)
    # §8: the two opening dice are white's first roll (never a double)
    assert sorted(turn1.play.dice) == sorted([throw.first_player_die, throw.second_player_die])
    assert turn1.play.dice[0] != turn1.play.dice[1]
    # every play is legal by the variant; the board view carries the bar
    pos = SHORT.start()
    hits = 0
    for e in events:
        if e.type == pb.EVENT_TYPE_PLAY_MADE:
            play = SHORT.match_play(pos, wire.dice_of(e.play.dice), e.play.notation)
            pos = play.end
            assert pos.text() == e.state.position
            board = SHORT.board(pos)
            assert (e.state.board.white_bar, e.state.board.black_bar) == board.bar
            hits += e.play.notation.count("*")
        elif e.type == pb.EVENT_TYPE_TURN_PASSED:
            pos = SHORT.passed(pos)
            assert pos.text() == e.state.position
    final = events[-1].state
    assert final.status == pb.GAME_STATUS_FINISHED
    res = final.result
    expected = SHORT.result(pos)
    assert expected is not None
    assert (wire.color_of(res.winner), wire.kind_name(res.kind), res.points) == (
        expected.winner,
        str(expected.kind),
        expected.points,
    )
    assert wire.kind_name(res.kind) in ("single", "gammon", "backgammon")
    assert hits > 0  # a game between these engines hits (seeded: the same game every run)


async def test_a_short_match_swaps_colours(client):
    r, seats = await create(client, seed=5, target_points=5, options={"variant": "short"})
    game_id, whites, ids = r.game_id, [], []
    with trio.fail_after(300):
        while game_id:
            ids.append(game_id)
            await _play(seats, game_id)
            state = (await client.get_game(game_id)).state
            whites.append(state.white.name)
            game_id = state.next_game_id
    assert len(whites) >= 2
    assert all(a != b for a, b in zip(whites, whites[1:], strict=False))  # §8: colours swap
    for game_id in ids:  # §8: every game's first roll is an opening throw
        events = await _events(client, game_id)
        started = next(e for e in events if e.type == pb.EVENT_TYPE_GAME_STARTED)
        first = next(e for e in events if e.type == pb.EVENT_TYPE_PLAY_MADE)
        throw = started.opening_throws[-1]
        assert sorted(first.play.dice) == sorted([throw.first_player_die, throw.second_player_die])
        assert first.play.dice[0] != first.play.dice[1]


async def test_whites_first_roll_is_never_a_double_when_colours_are_known(client):
    """§2, §8: with the opening dice as white's first roll, a game whose colours were known
    before it (a chosen colour; a match's later games, colours swapped) threw white's first
    roll afresh, a double now and then. The single-die throw is made all the same (ties
    thrown again), white's die first."""
    r, seats = await create(
        client,
        dice=[6, 6, 5, 3],
        first_seat_color=pb.COLOR_BLACK,
        options={"variant": "short"},
    )
    with trio.fail_after(120):
        await _play(seats, r.game_id)
    events = await _events(client, r.game_id)
    started = next(e for e in events if e.type == pb.EVENT_TYPE_GAME_STARTED)
    assert [(t.first_player_die, t.second_player_die) for t in started.opening_throws] == [
        (6, 6),
        (5, 3),
    ]
    first = next(e for e in events if e.type == pb.EVENT_TYPE_PLAY_MADE)
    assert first.play.side == pb.COLOR_WHITE and list(first.play.dice) == [3, 5]


async def test_short_refuses_koks(client):
    import grpc
    import pytest

    with pytest.raises(grpc.RpcError) as e:
        await create(client, options={"variant": "short", "koks": True})
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "koks" in e.value.details()


# Both sides closed out (RULES.md §9): three checkers of each on the bar, each home board
# closed by the other's twelve. Unreachable in play; as a start, no throw moves anyone.
CLOSED_OUT = "w/" + ",".join(["-2"] * 6 + ["0"] * 12 + ["2"] * 6) + "/3,3"


async def test_a_start_where_nobody_can_ever_move_is_refused(arbiter, client):
    """A custom start (anyone's, with open seats) where neither side can ever move: every
    turn passed at once, untimed, forever, each pass journaled (1,750 turns in 5 s, the
    database growing ~640 KB/s, the game's events piling up in memory) for the price of one
    CreateMatch and two subscriptions."""
    import grpc
    import pytest

    with pytest.raises(grpc.RpcError) as e:
        await create(client, options={"variant": "short"}, start_position=CLOSED_OUT)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "never" in e.value.details()


async def test_a_game_where_no_side_can_move_any_more_is_called_off(arbiter, client):
    """White on six points in a row with no black checker ahead of them (RULES.md §3.5), a
    start no game reaches: no play of white's leaves the block, black is stuck behind it
    once there, and both passed for ever (20,000 passes a minute, each journaled). After
    100 turns passed in a row the game is called off (ABORTED, no result)."""
    block = "w/5,2,2,2,2,2,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"
    r, seats = await create(client, start_position=block)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for seat in seats:
                nursery.start_soon(play_game, seat, r.game_id, lambda turn: turn.legal[0])
    state = (await client.get_game(r.game_id)).state
    assert state.status == pb.GAME_STATUS_ABORTED and state.turn_id >= 100
