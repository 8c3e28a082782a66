"""CreateMatch reads every option of the request (defaults in one place: nardy/wire.py)."""

from __future__ import annotations

import grpc
import pytest
import trio

from nardy.v1 import game_pb2 as pb
from tests.server.conftest import create


async def _drain(seat, game_id):
    async for _ in seat.events(game_id):
        pass


async def _refuse_twice(a, b, game_id):
    """The mover sends two illegal plays; returns the GAME_FINISHED event."""
    async with trio.open_nursery() as n:
        n.start_soon(_drain, b, game_id)
        async for ev in a.events(game_id):
            if ev.type == pb.EVENT_TYPE_TURN_STARTED:
                mover = a if ev.state.side_to_move == ev.state.your_color else b
                for _ in range(2):
                    with pytest.raises(grpc.RpcError) as e:
                        await mover.submit(game_id, ev.state.turn_id, notation="1/off")
                    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                n.cancel_scope.cancel()
                return ev


async def test_illegal_play_limit_of_create_match_is_kept_and_enforced(client):
    """A seat whose plays are refused `illegal_play_limit` times loses the game (§5 scoring)."""
    r, (a, b) = await create(client, seed=3, options={"illegal_play_limit": 2})
    state = (await client.get_game(r.game_id)).state
    assert state.options.illegal_play_limit == 2
    assert state.options.turn_time_ms == 120_000  # the default (RULES.md §6)
    with trio.fail_after(30):  # a lost limit would leave the game waiting for a play
        ev = await _refuse_twice(a, b, r.game_id)
    res = ev.state.result
    assert res.termination == pb.TERMINATION_ILLEGAL_PLAYS
    assert res.kind == pb.RESULT_KIND_MARS and res.points == 2  # nothing borne off
    assert ev.state.white_refused + ev.state.black_refused == 2


async def test_options_come_back_as_asked(client):
    opts = {"turn_time_ms": 5000, "time_bank_ms": 700, "auto_play_forced": True, "koks": True}
    r, _ = await create(client, options=opts)
    o = (await client.get_game(r.game_id)).state.options
    assert (o.variant, o.koks, o.turn_time_ms, o.time_bank_ms, o.auto_play_forced) == (
        "long",
        True,
        5000,
        700,
        True,
    )
    assert o.illegal_play_limit == 0  # no limit unless asked


@pytest.mark.parametrize("field", ["turn_time_ms", "time_bank_ms"])
async def test_a_clock_option_out_of_range_is_refused_by_its_own_name(client, field):
    """Both are at most 24 h (docs/PROTOCOL.md, Limits); the refusal names the field sent."""
    with pytest.raises(grpc.RpcError) as info:
        await create(client, options={field: 24 * 3600 * 1000 + 1})
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith(field)
