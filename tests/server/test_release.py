"""An ended game keeps no per-turn state in memory: its events
and the answers to its plays are read back from the journal, so an idempotent re-send of
the last play still gets its answer (marked duplicate) after the game is over."""

from __future__ import annotations

import pytest
import trio.testing

from server.core.journal import EventType, Status
from server.errors import ArbiterError
from tests.server.test_clock import mover_token, started_game

# White to move with one checker left on its 1-point: any throw ends the game (§4.6).
LAST_CHECKER = "w/0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,1"


async def test_resend_of_the_last_play_after_the_game_ended(nursery, tmp_path):
    arbiter, game, tokens, inbox = await started_game(
        nursery, tmp_path, spec={"start_position": LAST_CHECKER, "first_seat_white": True}
    )
    turn = await inbox.next(EventType.TURN_STARTED)
    token = mover_token(game, tokens)
    end = turn.snapshot.legal[0].end.text()
    first = await arbiter.actions.submit_play(token, game.id, game.turn_id, None, end)
    await inbox.next(EventType.GAME_FINISHED)
    await trio.testing.wait_all_tasks_blocked()
    assert game.status is Status.FINISHED and game.judge.accepted == {} and game.legal == ()
    again = await arbiter.actions.submit_play(token, game.id, turn.snapshot.turn_id, None, end)
    assert again.duplicate and (again.notation, again.end_position) == (
        first.notation,
        first.end_position,
    )
    with pytest.raises(ArbiterError, match="already played"):
        await arbiter.actions.submit_play(token, game.id, turn.snapshot.turn_id, "-", None)
    with pytest.raises(ArbiterError, match="over"):
        await arbiter.actions.submit_play(token, game.id, turn.snapshot.turn_id + 1, None, end)
