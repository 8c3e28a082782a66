"""The bidirectional ``Play`` stream: a seat's game on one stream,
turns down, plays up. Real servers on loopback, blocking gRPC clients in threads: a whole
game played over two streams, a refused play that does not end the stream, an idempotent
re-send; the first message must subscribe; a token without a seat, and a play for another
game, are refused."""

from __future__ import annotations

import queue
import threading
from collections import Counter

import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer

INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT.value[0]


def md(token: str):
    return (("authorization", f"Bearer {token}"),) if token else ()


def new_game(srv: EmbeddedServer) -> api.CreateMatchResponse:
    with grpc.insecure_channel(srv.address) as ch:
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        return stub.CreateMatch(api.CreateMatchRequest(), metadata=md(srv.admin_token))


class Seat:
    """One Play stream: ``send`` requests, iterate ``responses``."""

    def __init__(self, srv: EmbeddedServer, token: str, game_id: str) -> None:
        self.channel = grpc.insecure_channel(srv.address)
        self.requests: queue.Queue = queue.Queue()
        stub = arbiter_pb2_grpc.ArbiterServiceStub(self.channel)
        self.responses = stub.Play(iter(self.requests.get, None), metadata=md(token))
        self.game_id = game_id

    def send(self, **kind) -> None:
        self.requests.put(api.PlayRequest(**kind))

    def play(self, turn_id: int, end: str, game_id: str | None = None) -> None:
        game = self.game_id if game_id is None else game_id
        self.send(play=api.SubmitPlayRequest(game_id=game, turn_id=turn_id, end_position=end))

    def close(self) -> None:
        self.requests.put(None)
        self.channel.close()


def ended_at_once(srv: EmbeddedServer, token: str, game) -> grpc.StatusCode:
    """The status a Play stream subscribing to ``game`` with ``token`` ends with at once."""
    seat = Seat(srv, token, game.game_id)
    try:
        seat.send(subscribe=api.SubscribeGameRequest(game_id=game.game_id))
        with pytest.raises(grpc.RpcError) as info:
            next(seat.responses)
        return info.value.code()
    finally:
        seat.close()


def play_out(seat: Seat, seen: Counter, testing: bool) -> None:
    """Play the first legal play of every own turn until the game ends; on its first turn
    (``testing``) first an illegal play and then, after the real one, the same again."""
    seat.send(subscribe=api.SubscribeGameRequest(game_id=seat.game_id))
    first = testing
    for response in seat.responses:
        kind = response.WhichOneof("kind")
        seen[kind] += 1
        if kind == "refused":
            assert response.refused.code == INVALID_ARGUMENT, response
            seen["refused " + response.refused.message] += 1
        elif kind == "played":
            seen["duplicate"] += response.played.duplicate
        else:
            event = response.event
            seen[pb.EventType.Name(event.type)] += 1
            if event.type == pb.EVENT_TYPE_GAME_FINISHED:
                return
            state = event.state
            if event.type == pb.EVENT_TYPE_TURN_STARTED and state.legal_plays:
                assert state.side_to_move == state.your_color  # own turns only
                end = state.legal_plays[0].end_position
                if first:
                    seat.play(state.turn_id, "not a position")
                seat.play(state.turn_id, end)
                if first:
                    seat.play(state.turn_id, end)  # again: answered as a duplicate
                    first = False


@pytest.mark.slow
def test_a_game_is_played_over_two_play_streams(arbiter):
    game = new_game(arbiter)
    seats = [
        Seat(arbiter, game.first_seat_token, game.game_id),
        Seat(arbiter, game.second_seat_token, game.game_id),
    ]
    seen = [Counter(), Counter()]
    threads = [
        threading.Thread(target=play_out, args=(seat, c, i == 0))
        for i, (seat, c) in enumerate(zip(seats, seen, strict=True))
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        for seat in seats:
            seat.close()
    first, second = seen
    for c in seen:
        assert c["EVENT_TYPE_GAME_FINISHED"] == 1, c
        assert c["played"] >= 10 and c["EVENT_TYPE_PLAY_MADE"] == 0, c  # own turns only
    assert first["refused"] == 1 and second["refused"] == 0
    assert first["duplicate"] == 1 and second["duplicate"] == 0
    assert any(k.startswith("refused illegal play") for k in first), first
    with grpc.insecure_channel(arbiter.address) as ch:
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        state = stub.GetGame(api.GetGameRequest(game_id=game.game_id)).state
    assert state.status == pb.GAME_STATUS_FINISHED
    turns = [c["played"] - c["duplicate"] for c in seen]
    assert state.turn_id >= sum(turns)  # (passes take a turn with no play)


def test_the_first_message_must_subscribe(arbiter):
    game = new_game(arbiter)
    seat = Seat(arbiter, game.first_seat_token, game.game_id)
    try:
        seat.play(1, "W/15")
        with pytest.raises(grpc.RpcError) as info:
            next(seat.responses)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        seat.close()


def test_a_token_without_a_seat_cannot_play_and_a_seat_plays_only_its_game(arbiter):
    game, other = new_game(arbiter), new_game(arbiter)
    # no token: the stream needs a seat's, as SubmitPlay does (it once said the filter was
    # for a seat, which the caller never set)
    assert ended_at_once(arbiter, "", game) == grpc.StatusCode.UNAUTHENTICATED
    # a seat of another game
    assert ended_at_once(arbiter, other.first_seat_token, game) == grpc.StatusCode.PERMISSION_DENIED
    # the operator's token holds no seat (it was told the filter it never set was wrong)
    assert ended_at_once(arbiter, arbiter.admin_token, game) == grpc.StatusCode.PERMISSION_DENIED
    seat = Seat(arbiter, game.first_seat_token, game.game_id)
    try:
        seat.send(subscribe=api.SubscribeGameRequest(game_id=game.game_id))
        assert next(seat.responses).event.type == pb.EVENT_TYPE_SNAPSHOT
        seat.play(1, "W/15", game_id=other.game_id)
        refused = next(seat.responses).refused
        assert refused.code == INVALID_ARGUMENT and "its own game" in refused.message
        seat.send(subscribe=api.SubscribeGameRequest(game_id=game.game_id))
        refused = next(seat.responses).refused
        assert refused.code == INVALID_ARGUMENT and "plays only" in refused.message
    finally:
        seat.close()


def test_a_message_that_is_not_protobuf_is_refused_on_the_stream(arbiter):
    game = new_game(arbiter)
    with grpc.insecure_channel(arbiter.address) as ch:
        play = ch.stream_stream("/nardy.v1.ArbiterService/Play")  # raw bytes both ways
        subscribe = api.PlayRequest(subscribe=api.SubscribeGameRequest(game_id=game.game_id))
        sent: queue.Queue = queue.Queue()
        responses = play(iter(sent.get, None), metadata=md(game.first_seat_token))
        sent.put(subscribe.SerializeToString())
        first = api.PlayResponse.FromString(next(responses))
        assert first.event.type == pb.EVENT_TYPE_SNAPSHOT
        sent.put(b"\xff\xff\xff")
        refused = api.PlayResponse.FromString(next(responses)).refused
        assert refused.code == INVALID_ARGUMENT and "not a valid protobuf" in refused.message
        sent.put(None)
        responses.cancel()
    game = new_game(arbiter)
    with grpc.insecure_channel(arbiter.address) as ch:
        play = ch.stream_stream("/nardy.v1.ArbiterService/Play")
        responses = play(iter([b"\xff\xff\xff"]), metadata=md(game.first_seat_token))
        with pytest.raises(grpc.RpcError) as info:
            next(responses)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_an_idle_play_stream_is_sent_heartbeats_as_events(tmp_path):
    """A heartbeat on a Play stream is a PlayResponse's ``event`` (HEARTBEAT, the game's
    state), like every event on it: it was written bare, and read as an empty ``refused``."""
    with EmbeddedServer(db=str(tmp_path / "h.db"), heartbeat_s=0.2) as server:
        game = new_game(server)
        seat = Seat(server, game.first_seat_token, game.game_id)  # the other seat never comes
        try:
            seat.send(subscribe=api.SubscribeGameRequest(game_id=game.game_id))
            first = next(seat.responses)
            assert first.WhichOneof("kind") == "event"
            beat = next(seat.responses)
            assert beat.WhichOneof("kind") == "event", beat
            assert beat.event.type == pb.EVENT_TYPE_HEARTBEAT
            assert beat.event.state.game_id == game.game_id
            assert beat.event.seq == first.event.seq
        finally:
            seat.close()
