"""Instances that forward (``nardy serve --forward``): a client that knows one address and
nothing of instances or redirects plays a game another instance runs, over both ways of
playing; refusals come back as the owner made them; a call forwarded once is never
forwarded again; x-real-ip is believed from trusted proxies only.

Real PostgreSQL (NARDY_TEST_PG), two real servers on loopback ports."""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import urllib.request
from functools import partial

import grpc
import pytest
from google.protobuf import json_format

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.edge.callers import client_host, networks, peer_address
from server.edge.calls import ARBITER

TOKEN = "operator-token-for-the-forwarding-tests"
ENDED = (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED)


@pytest.fixture
def pair(pg_db):
    """Two forwarding instances on one database."""
    with (
        EmbeddedServer(db=pg_db, admin_token=TOKEN, lease_s=3.0, forward=True, http_port=0) as a,
        EmbeddedServer(db=pg_db, admin_token=TOKEN, lease_s=3.0, forward=True, http_port=0) as b,
    ):
        yield a, b


def bearer(token: str) -> tuple:
    return (("authorization", f"Bearer {token}"),)


def naive_seat(stub, game_id: str, token: str) -> pb.GameState:
    """A seat as the .proto alone suggests: follow the game, play the first legal play on
    each of its turns; no retries, no redirects (any error fails the test)."""
    state = None
    for ev in stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=game_id, filter=api.EVENT_FILTER_OWN_TURNS),
        metadata=bearer(token),
    ):
        state = ev.state
        if ev.type in ENDED:
            return state
        if state.legal_plays and state.side_to_move == state.your_color:
            stub.SubmitPlay(
                api.SubmitPlayRequest(
                    game_id=game_id,
                    turn_id=state.turn_id,
                    end_position=state.legal_plays[0].end_position,
                ),
                metadata=bearer(token),
            )
    raise AssertionError(f"the stream ended before the game: {state}")


def play_stream_seat(stub, game_id: str, token: str) -> pb.GameState:
    """A seat over the Play stream, likewise naive."""
    outbox: queue.SimpleQueue = queue.SimpleQueue()
    outbox.put(api.PlayRequest(subscribe=api.SubscribeGameRequest(game_id=game_id)))

    def requests():
        while (item := outbox.get()) is not None:
            yield item

    state = None
    try:
        for response in stub.Play(requests(), metadata=bearer(token)):
            if response.WhichOneof("kind") == "refused":
                raise AssertionError(f"refused: {response.refused}")
            if response.WhichOneof("kind") != "event":
                continue
            ev = response.event
            state = ev.state
            if ev.type in ENDED:
                return state
            if state.legal_plays and state.side_to_move == state.your_color:
                play = api.SubmitPlayRequest(
                    game_id=game_id,
                    turn_id=state.turn_id,
                    end_position=state.legal_plays[0].end_position,
                )
                outbox.put(api.PlayRequest(play=play))
    finally:
        outbox.put(None)
    raise AssertionError(f"the stream ended before the game: {state}")


def web_seat(url: str, game_id: str, token: str) -> pb.GameState:
    """A seat as a person on a web view's /play page is one: the game's Server-Sent Events,
    a SubmitPlay of the first legal play on each of its turns (no redirects either)."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}

    def post(method: str, body: dict):
        data = json.dumps(body).encode()
        request = urllib.request.Request(f"{url}/api/{ARBITER}/{method}", data, headers)
        return urllib.request.urlopen(request, timeout=60)

    state = None
    with post("SubscribeGame", {"gameId": game_id}) as events:
        for line in events:
            assert not line.startswith(b"event: error"), next(events)
            if not line.startswith(b"data: "):
                continue
            ev = json_format.Parse(line[len(b"data: ") :], pb.GameEvent())
            state = ev.state
            if ev.type in ENDED:
                return state
            if state.legal_plays and state.side_to_move == state.your_color:
                play = {
                    "gameId": game_id,
                    "turnId": str(state.turn_id),
                    "endPosition": state.legal_plays[0].end_position,
                }
                with post("SubmitPlay", play) as answer:
                    json.load(answer)
    raise AssertionError(f"the stream ended before the game: {state}")


def both_seats(seats, r: api.CreateMatchResponse) -> list[pb.GameState]:
    """Each of ``seats`` (a function of the game id and a seat token) plays its seat."""
    out: list = [None, None]

    def run(i: int, token: str) -> None:
        try:
            out[i] = seats[i](r.game_id, token)
        except BaseException as e:  # (reported below)
            out[i] = e

    threads = [
        threading.Thread(target=run, args=(i, t))
        for i, t in enumerate((r.first_seat_token, r.second_seat_token))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for result in out:
        if isinstance(result, BaseException):
            raise result
    return out


@pytest.mark.parametrize("seat", [naive_seat, play_stream_seat], ids=["unary", "play-stream"])
def test_a_client_of_one_instance_plays_a_game_another_runs(pair, seat):
    a, b = pair
    with grpc.insecure_channel(a.address) as at_a, grpc.insecure_channel(b.address) as at_b:
        r = api_grpc.ArbiterServiceStub(at_a).CreateMatch(
            api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=30_000))
        )
        stub = api_grpc.ArbiterServiceStub(at_b)  # b does not run the game: a does
        final = both_seats((partial(seat, stub),) * 2, r)
        assert all(s.status == pb.GAME_STATUS_FINISHED for s in final)
        assert final[0].result == final[1].result
        assert stub.GetGame(api.GetGameRequest(game_id=r.game_id)).state.result == final[0].result


def test_a_person_on_one_instances_web_view_plays_a_game_another_runs(pair):
    """The web view forwards too: a person's page at one instance plays a game the other
    runs (its stream and its plays), against a bot playing over gRPC."""
    a, b = pair
    with grpc.insecure_channel(a.address) as at_a, grpc.insecure_channel(b.address) as at_b:
        r = api_grpc.ArbiterServiceStub(at_a).CreateMatch(
            api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=30_000))
        )
        bot = partial(naive_seat, api_grpc.ArbiterServiceStub(at_b))
        final = both_seats((partial(web_seat, b.http_url), bot), r)
        assert all(s.status == pb.GAME_STATUS_FINISHED for s in final)
        assert final[0].result == final[1].result


def test_refusals_come_back_as_the_owner_made_them_without_its_address(pair):
    a, b = pair
    with grpc.insecure_channel(a.address) as at_a, grpc.insecure_channel(b.address) as at_b:
        r = api_grpc.ArbiterServiceStub(at_a).CreateMatch(
            api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=30_000))
        )
        stub = api_grpc.ArbiterServiceStub(at_b)
        turns: queue.SimpleQueue = queue.SimpleQueue()
        seats = []  # both seats come (and stay) through b: the game starts

        def follow(token: str) -> None:
            request = api.SubscribeGameRequest(game_id=r.game_id, filter=api.EVENT_FILTER_OWN_TURNS)
            seats.append(stub.SubscribeGame(request, metadata=bearer(token)))
            with contextlib.suppress(grpc.RpcError):  # (cancelled at the end)
                for ev in seats[-1]:
                    if ev.state.legal_plays:
                        turns.put((token, ev.state))

        for token in (r.first_seat_token, r.second_seat_token):
            threading.Thread(target=follow, args=(token,), daemon=True).start()
        mover, state = turns.get(timeout=30)  # (the game's GetGame elsewhere has no legal plays)
        bad = api.SubmitPlayRequest(game_id=r.game_id, turn_id=state.turn_id, notation="1/2")
        with pytest.raises(grpc.RpcError) as info:
            stub.SubmitPlay(bad, metadata=bearer(mover))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details().startswith("illegal play")  # a's words
        assert "nardy-instance" not in dict(info.value.trailing_metadata() or ())
        # a call already forwarded once is not forwarded again: the redirect, as before
        with pytest.raises(grpc.RpcError) as info:
            stub.Resign(
                api.ResignRequest(game_id=r.game_id),
                metadata=(*bearer(mover), ("nardy-forwarded", "1")),
            )
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert ("nardy-instance", a.address) in tuple(info.value.trailing_metadata())
        # resigning through b ends the game at a
        stub.Resign(api.ResignRequest(game_id=r.game_id), metadata=bearer(mover))
        ended = api_grpc.ArbiterServiceStub(at_a).GetGame(api.GetGameRequest(game_id=r.game_id))
        assert ended.state.result.termination == pb.TERMINATION_RESIGNATION
        for seat in seats:
            seat.cancel()


class Peer:
    """A call's context as far as the address functions read it."""

    def __init__(self, peer: str, metadata=()) -> None:
        self._peer, self._metadata = peer, metadata

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self):
        return self._metadata


def test_x_real_ip_names_the_client_only_when_a_trusted_proxy_sends_it():
    trusted = networks(["127.0.0.1", "10.1.0.0/16"])
    sent = (("x-real-ip", "203.0.113.9"),)
    assert client_host(Peer("ipv4:127.0.0.1:40000", sent), trusted) == "203.0.113.9"
    assert client_host(Peer("ipv4:10.1.2.3:40000", sent), trusted) == "203.0.113.9"
    assert client_host(Peer("ipv6:[::ffff:10.1.2.3]:40000", sent), trusted) == "203.0.113.9"
    # a stranger cannot name another address; nor can anyone without --trusted-proxy
    assert client_host(Peer("ipv4:198.51.100.4:40000", sent), trusted) == "198.51.100.4"
    assert client_host(Peer("ipv4:127.0.0.1:40000", sent)) == "127.0.0.1"
    # what a trusted proxy sends must be an address; an IPv6 client counts by its /64
    junk = (("x-real-ip", "not an address"),)
    assert client_host(Peer("ipv4:127.0.0.1:40000", junk), trusted) == "127.0.0.1"
    v6 = (("x-real-ip", "2001:db8:1:2::7"),)
    assert peer_address(Peer("ipv4:127.0.0.1:40000", v6), trusted) == "2001:db8:1:2::/64"
    with pytest.raises(ValueError, match="--trusted-proxy"):
        networks(["nginx.example"])
