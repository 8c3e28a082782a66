"""What the benches' clients share: the operator's credential and the instant bot.

The benches' servers are started with ``$NARDY_ADMIN_TOKEN`` (:data:`ADMIN_ENV`) as their
operator token, so a bench creates matches as the operator (no quota on matches waiting
for their seats); :func:`instant_seat` is a bot that plays the first legal play at once.
"""

from __future__ import annotations

import contextlib

import grpc

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

ADMIN_ENV = "NARDY_ADMIN_TOKEN"  # read by `nardy serve` and by the benches' clients
PLAYED = [0]  # plays the instant seats of this process made


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token``."""
    return (("authorization", f"Bearer {token}"),)


async def instant_seat(stub, game_id: str, token: str, own_turns: bool = False) -> None:
    """A bot that plays the first legal play at once, until the game ends (``own_turns``:
    its stream filtered to its own turns, EVENT_FILTER_OWN_TURNS)."""
    which = api.EVENT_FILTER_OWN_TURNS if own_turns else api.EVENT_FILTER_UNSPECIFIED
    async for ev in stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=game_id, filter=which), metadata=bearer(token)
    ):
        st = ev.state
        if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
            return
        if (
            ev.type == pb.EVENT_TYPE_TURN_STARTED
            and st.legal_plays
            and st.side_to_move == st.your_color
        ):
            with contextlib.suppress(grpc.RpcError):  # e.g. the game ended meanwhile
                PLAYED[0] += 1
                await stub.SubmitPlay(
                    api.SubmitPlayRequest(
                        game_id=game_id,
                        turn_id=st.turn_id,
                        end_position=st.legal_plays[0].end_position,
                    ),
                    metadata=bearer(token),
                )
