"""Fair clocks with the core held up, on a real server on loopback: plays of several games
arrive together while the core's trio thread is blocked, and are judged only after their
deadlines have passed. Each was stamped as the edge read it, so none is refused for time
and each side is charged up to its arrival, not to the judging. And with the server
stopped, its core or its edge: nobody is charged for the stop."""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from tests.server.conftest import held_core, the_play_is_made
from tests.server.test_recovery import free_port, start_server

GAMES = 8
TURN_MS = 2000  # long enough for the set-up of all games on a busy machine


def _md(token: str):
    return (("authorization", f"Bearer {token}"),)


def subscribe(stub, game) -> tuple[tuple[str, str], list]:
    """Both seats subscribe (the game starts); returns their tokens and streams."""
    tokens = (game.first_seat_token, game.second_seat_token)
    streams = [
        stub.SubscribeGame(api.SubscribeGameRequest(game_id=game.game_id), metadata=_md(t))
        for t in tokens
    ]
    return tokens, streams


def first_turn(tokens, streams) -> tuple[str, pb.GameState]:
    """The mover's token and its first TURN_STARTED state."""
    while True:
        for token, stream in zip(tokens, streams, strict=True):
            st = next(stream).state
            if st.legal_plays and st.side_to_move == st.your_color and st.turn_id:
                return token, st


def test_plays_that_arrived_in_time_are_accepted_however_late_the_core_judges_them():
    with EmbeddedServer() as srv:
        ch = grpc.insecure_channel(srv.address)
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        admin = _md(srv.admin_token)
        games = [
            stub.CreateMatch(
                api.CreateMatchRequest(seed=n, options=pb.GameOptions(turn_time_ms=TURN_MS)),
                metadata=admin,
                timeout=30,
            )
            for n in range(GAMES)
        ]
        seated = [(game.game_id, *subscribe(stub, game)) for game in games]  # all start
        turns = [
            (game_id, *first_turn(tokens, streams), streams) for game_id, tokens, streams in seated
        ]

        link = srv.edge.core.link
        call, written, all_written = link.call, [], threading.Event()

        def counting_call(method, *args, **options):  # the edge writes a call to the core
            future = call(method, *args, **options)
            if method.endswith("/SubmitPlay"):
                written.append(time.perf_counter())  # (after its stamp)
                if len(written) == GAMES:
                    all_written.set()
            return future

        link.call = counting_call
        with held_core(srv):
            answers = [
                stub.SubmitPlay.future(
                    api.SubmitPlayRequest(
                        game_id=game_id,
                        turn_id=st.turn_id,
                        end_position=st.legal_plays[0].end_position,
                    ),
                    metadata=_md(token),
                    timeout=60,
                )
                for game_id, token, st, _ in turns
            ]
            assert all_written.wait(60)  # every play stamped and written, the core is held
            # hold the core until every turn's deadline has passed (a turn's clock runs
            # from when it was sent, before its play was stamped)
            until = max(written) + TURN_MS / 1000
            while time.perf_counter() < until:
                time.sleep(until - time.perf_counter())  # time passes, held
        used = [a.result().used_ms for a in answers]  # none refused for time
        assert all(0 <= ms < TURN_MS for ms in used)
        for _, _, _, streams in turns:  # and no game was lost on time
            the_play_is_made(streams)
        ch.close()


# (turn time ms, stop s): a long stop, and one only a little longer than the turn (a stop
# of 1.0-1.25 s went unseen: only its part past the last tick was counted, under a second)
STOPS = [(1500, 3.0), (1000, 1.2)]


def play_after_a_stop(
    stub, admin_token: str, stopped: AbstractContextManager, turn_ms: int, still_s: float
) -> None:
    """A game whose server is ``stopped`` (a context manager) for ``still_s`` from its first
    turn, past the deadline: the turns' clocks stand still with it, so the mover who plays
    once the server is back does not lose on time and is charged its own time only."""
    game = stub.CreateMatch(
        api.CreateMatchRequest(seed=1, options=pb.GameOptions(turn_time_ms=turn_ms)),
        metadata=_md(admin_token),
        timeout=30,
    )
    token, st = first_turn(*(seated := subscribe(stub, game)))
    until = time.perf_counter() + still_s
    with stopped:
        while time.perf_counter() < until:
            time.sleep(until - time.perf_counter())  # the outage itself
    answer = stub.SubmitPlay(
        api.SubmitPlayRequest(
            game_id=game.game_id, turn_id=st.turn_id, end_position=st.legal_plays[0].end_position
        ),
        metadata=_md(token),
        timeout=60,
    )
    assert answer.used_ms < turn_ms  # not refused for time, the outage not charged
    the_play_is_made(seated[1])


@contextmanager
def process_stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize(("turn_ms", "still_s"), STOPS)
def test_no_clock_is_charged_while_the_server_stands_still(turn_ms, still_s):
    """The core stopped (kill -STOP of the server, a suspended machine) past every turn's
    deadline: no clock is charged for it (every mover lost on time)."""
    with EmbeddedServer() as srv, grpc.insecure_channel(srv.address) as ch:
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        play_after_a_stop(stub, srv.admin_token, held_core(srv), turn_ms, still_s)


@pytest.mark.parametrize(("turn_ms", "still_s"), STOPS)
def test_no_clock_is_charged_while_the_edge_stands_still(tmp_path, turn_ms, still_s):
    """`nardy serve`'s edge process stopped (kill -STOP), its core running on: the edge
    tells the core of the stop before its fence's answer, so no clock is charged for it
    (the mover lost on time: the core judged the turn when the edge answered)."""
    port, admin = free_port(), "op-token-edge-stop"
    edge = start_server(port, str(tmp_path / "edge.db"), admin_token=admin)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
            play_after_a_stop(stub, admin, process_stopped(edge.pid), turn_ms, still_s)
    finally:
        edge.terminate()
        edge.wait()


def test_a_loss_on_time_is_logged_with_what_tells_a_slow_bot_from_a_slow_server(caplog):
    """The operator reads when the mover's stream was sent the turn and how late the loss
    was decided (a pair lost on time under load said neither)."""
    caplog.set_level(logging.INFO, logger="nardy.server")
    with EmbeddedServer() as srv:
        ch = grpc.insecure_channel(srv.address)
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        game = stub.CreateMatch(
            api.CreateMatchRequest(seed=1, options=pb.GameOptions(turn_time_ms=300)),
            metadata=_md(srv.admin_token),
            timeout=30,
        )
        _, st = first_turn(*(seated := subscribe(stub, game)))
        for ev in seated[1][0]:  # nobody plays
            if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                break
        ch.close()
    lost = [r.getMessage() for r in caplog.records if "lost on time" in r.getMessage()]
    assert len(lost) == 1, lost
    line = lost[0]
    assert f"(timeout): turn {st.turn_id} of 300 ms, sent to its stream " in line, line
    assert re.search(r"stream \d+ ms after it began, no play stamped, decided -?\d+ ms", line)
