"""The blocking SDK client plays a whole game against the trio one, over real gRPC."""

from __future__ import annotations

import random
import threading

import grpc
import pytest

from nardy.client import Consent, SimpleClient, run_engine
from nardy.record import dumps, loads, replay
from nardy.v1 import game_pb2 as pb
from nardy.verify import verify
from nardy.wire import result_of
from server.app import EmbeddedServer


def test_simple_clients_play_a_game(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "s.db")) as srv:
        with SimpleClient(srv.address) as admin:
            r = admin.create_match(seed=3)
        finals = {}

        def seat(name, token, seed):
            rng = random.Random(seed)
            with SimpleClient(srv.address, token) as c:
                finals[name] = c.play(r.game_id, lambda turn: rng.choice(turn.legal))

        threads = [
            threading.Thread(target=seat, args=("a", r.first_seat_token, 1)),
            threading.Thread(target=seat, args=("b", r.second_seat_token, 2)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert finals["a"].status == pb.GAME_STATUS_FINISHED
        assert finals["a"].result == finals["b"].result

        with SimpleClient(srv.address) as anyone:
            assert [g.game_id for g in anyone.all_games()] == [r.game_id]
            record = anyone.record(r.game_id)
            seat = anyone.with_token(r.first_seat_token)  # another identity, one connection
            assert (seat.token, anyone.token) == (r.first_seat_token, None)
            seat.close()  # leaves the connection and its loop to `anyone`
            assert anyone.register("recorder") == anyone.token
        [again] = loads(dumps([record]))
        assert again.result == record.result == result_of(finals["a"].result, record.rules)
        assert len(replay(again)) == len(record.turns) + 1  # every play is legal in order
        verdict = verify(again)  # the match's public seed (3) gave every die
        assert verdict.fair and verdict.chosen and "match that seed" in verdict.message


def test_run_engine_refuses_what_cannot_work_and_raises_plainly(tmp_path):
    """`run_engine` refuses at once an engine it could never call (a coroutine function:
    every turn failed, silently played for) and a consent without variants (refused only
    once connected); what stops it comes out as itself, not inside trio's exception groups,
    so that `except grpc.RpcError` (or KeyboardInterrupt, Unreachable) catches it."""

    async def coroutine_engine(turn):
        return turn.legal[0]

    with pytest.raises(TypeError, match="plain function"):
        run_engine(coroutine_engine, address="127.0.0.1:1", token="t")
    with pytest.raises(ValueError, match="variants"):
        run_engine(lambda turn: turn.legal[0], address="127.0.0.1:1", accept_challenges=Consent())
    with (
        EmbeddedServer(db=str(tmp_path / "e.db")) as srv,
        pytest.raises(grpc.RpcError) as refused,
    ):
        run_engine(lambda turn: turn.legal[0], address=srv.address, token="made-up")
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
