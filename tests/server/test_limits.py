"""Limits: request rates per caller and message sizes (RESOURCE_EXHAUSTED, not a crash)."""

from __future__ import annotations

import logging
import socket
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from nardy.client import Client
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.edge import limits
from server.edge.callers import peer_address
from server.edge.limits import RateLimiter
from tests.server.conftest import create, resigned


def test_token_bucket():
    limiter = RateLimiter(rate=10, burst=3)
    assert [limiter.allow("a", now=0.0) for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b", now=0.0)  # buckets are per caller
    assert not limiter.allow("a", now=0.05)  # half a token back
    assert limiter.allow("a", now=0.1)  # one token back after 1/rate seconds


async def test_a_flood_is_refused_and_the_server_stays_up(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "l.db"), rate_per_s=1, rate_burst=10) as srv:
        async with Client(srv.address) as client:
            codes = []
            for _ in range(30):
                try:  # one attempt each (the SDK's get_game would back off and retry)
                    await client.call("GetGame", api.GetGameRequest(game_id="none"))
                except grpc.RpcError as e:
                    codes.append(e.code())
            assert codes.count(grpc.StatusCode.NOT_FOUND) <= 11
            assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes
            # another (verified) caller is unaffected
            async with Client(srv.address, srv.admin_token) as other:
                with pytest.raises(grpc.RpcError) as info:
                    await other.get_game("none")
                # refused on its own merits, not by the flooder's limit
                assert info.value.code() == grpc.StatusCode.NOT_FOUND


async def test_oversized_messages_are_refused(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "m.db")) as srv:
        async with Client(srv.address) as client:
            with pytest.raises(grpc.RpcError) as info:
                await client.call("RegisterPlayer", api.RegisterPlayerRequest(name="x" * 100_000))
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            await client.register("fine")  # and the server is still there


def test_health_and_reflection_count_against_the_rate(tmp_path):
    """Health's Check and reflection's answers were not counted at all: one address asked
    2,000 Checks a second, and six reflection streams took 2,500 answers a second (19 MB/s,
    the edge at 69% of a core; an honest game's plays 4 times slower). Each counts as a
    request now, and an answer a request more for each KiB beyond its first."""
    with (
        EmbeddedServer(db=str(tmp_path / "h.db"), rate_per_s=0.01, rate_burst=6) as srv,
        grpc.insecure_channel(srv.address) as channel,
    ):
        health = health_pb2_grpc.HealthStub(channel)
        codes = []
        for _ in range(8):
            try:
                health.Check(health_pb2.HealthCheckRequest(), timeout=10)
                codes.append("ok")
            except grpc.RpcError as e:
                codes.append(e.code())
        assert codes == ["ok"] * 6 + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2, codes

    with (
        EmbeddedServer(db=str(tmp_path / "r.db"), rate_per_s=0.01, rate_burst=40) as srv,
        grpc.insecure_channel(srv.address) as channel,
    ):
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        ask = reflection_pb2.ServerReflectionRequest(
            file_containing_symbol="nardy.v1.ArbiterService"
        )
        answers = reflection.ServerReflectionInfo(iter([ask] * 40))
        sizes = []
        with pytest.raises(grpc.RpcError) as info:
            for answer in answers:
                sizes.append(answer.ByteSize())
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        cost = 1 + sizes[0] // 1024
        assert cost >= 3 and len(sizes) == 39 // cost + 1, (len(sizes), sizes[0])


async def test_one_caller_cannot_hold_every_stream(tmp_path):
    """grpc refuses every new call, anyone's, once the server holds maximum_concurrent_rpcs:
    one stranger's idle streams must not fill it. A caller (a token, or an address without
    one; the seats of the matches it created count as it) holds at most ``--streams``, its
    health Watch and reflection streams included."""
    with EmbeddedServer(
        db=str(tmp_path / "s.db"), max_concurrent_rpcs=40, streams_per_caller=8
    ) as srv:
        async with Client(srv.address) as stranger:
            player = stranger.with_token(await Client(srv.address).register("someone"))
            r = await stranger.create_match()
            watch = api.SubscribeGameRequest(game_id=r.game_id)
            streams = []
            for _ in range(8):
                streams.append(stranger.stub.SubscribeGame(watch))
                assert next(streams[-1]).type == pb.EVENT_TYPE_SNAPSHOT  # open
            health = health_pb2_grpc.HealthStub(stranger.channel)
            reflection = reflection_pb2_grpc.ServerReflectionStub(stranger.channel)
            more = [  # its seats count as the stranger, and so do its other streams
                stranger.stub.SubscribeGame(watch),
                stranger.stub.SubscribeGame(watch, metadata=bearer(r.first_seat_token)),
                health.Watch(health_pb2.HealthCheckRequest()),
                reflection.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")])
                ),
            ]
            for stream in more:
                with pytest.raises(grpc.RpcError) as info:
                    next(stream)
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # so are its calls (they hold a place while they wait)
            with pytest.raises(grpc.RpcError) as info:
                await stranger.call("GetGame", api.GetGameRequest(game_id=r.game_id))
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # the others are served, streams and calls alike
            mine = player.stub.SubscribePlayer(
                api.SubscribePlayerRequest(), metadata=player.metadata
            )
            op = stranger.with_token(srv.admin_token)
            assert (await op.get_game(r.game_id)).state.game_id == r.game_id
            mine.cancel()
            # streams that end give their place back
            void = admin_pb2_grpc.AdminServiceStub(stranger.channel).VoidGame
            void(admin_pb.VoidGameRequest(game_id=r.game_id), metadata=op.metadata)
            for stream in streams:
                assert [ev.type for ev in stream][-1] == pb.EVENT_TYPE_GAME_ABORTED
            r = await stranger.create_match()
            again = stranger.stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id))
            assert next(again).type == pb.EVENT_TYPE_SNAPSHOT
            again.cancel()


async def test_many_callers_at_their_quota_leave_room_for_others(tmp_path):
    """Two hundred tokens at 100 streams each would fill grpc's maximum_concurrent_rpcs and
    shut everyone out. Once the callers' streams fill three quarters of it, a caller that
    holds CROWDED streams opens no more: a newcomer still opens its few and is served."""
    with EmbeddedServer(
        db=str(tmp_path / "s.db"), max_concurrent_rpcs=40, streams_per_caller=8
    ) as srv:  # a budget of 30 streams for the callers
        async with Client(srv.address) as anyone:
            r = await anyone.create_match()
            watch = api.SubscribeGameRequest(game_id=r.game_id)

            async def player(name: str) -> Client:
                return anyone.with_token(await Client(srv.address).register(name))

            async def open_streams(client: Client, n: int) -> list:
                """``n`` streams of ``client``'s (a seat of a match it made counts as it)."""
                streams = []
                for _ in range(n):
                    m = await client.create_match()
                    seat = bearer(m.first_seat_token)
                    game = api.SubscribeGameRequest(game_id=m.game_id)
                    streams.append(client.stub.SubscribeGame(game, metadata=seat))
                    assert next(streams[-1]).type == pb.EVENT_TYPE_SNAPSHOT  # open
                return streams

            def refused(client: Client) -> str:
                stream = client.stub.SubscribeGame(watch, metadata=client.metadata)
                with pytest.raises(grpc.RpcError) as info:
                    next(stream)
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                return info.value.details()

            held = []
            for name in ("p1", "p2", "p3"):
                held += await open_streams(await player(name), 8)  # each at its quota: 24
            p4 = await player("p4")
            held += await open_streams(p4, 6)  # 30: the budget is full
            assert "at most 4 per caller" in refused(p4)
            newcomer = await player("p5")
            held += await open_streams(newcomer, 4)
            assert "at most 4 per caller" in refused(newcomer)
            late = await player("p6")  # calls and a few streams still fit under grpc's 40
            mine = await late.create_match()
            seat = late.with_token(mine.first_seat_token)
            assert (await seat.get_game(mine.game_id)).state.game_id == mine.game_id
            held += await open_streams(late, 4)
            for stream in held:
                stream.cancel()


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


async def test_a_replay_counts_its_messages_against_the_rate_limit(tmp_path):
    """A replay (``from_start``, or a resume far back) of an ended game reads its journal
    back, decodes it and encodes every event: ~37 ms of server CPU for a 190-event game,
    26 GetGames' worth, so a caller within its 1000 calls/s kept the server busy. Each
    message of a stream's backlog counts against the caller's rate like a request."""
    with EmbeddedServer(db=str(tmp_path / "r.db"), rate_per_s=0.01, rate_burst=8) as srv:
        async with Client(srv.address, srv.admin_token) as op:
            r, seats = await create(op)  # the operator's seats: budgets of their own
            assert not await resigned(seats, r.game_id)
            replay = api.SubscribeGameRequest(game_id=r.game_id, from_start=True)
            events = list(op.stub.SubscribeGame(replay, metadata=op.metadata))
            assert len(events) >= 3
            codes = []
            for _ in range(8):  # a stranger's budget of 8 requests
                try:
                    codes.append(len(list(op.stub.SubscribeGame(replay))))
                except grpc.RpcError as e:
                    codes.append(e.code())
            served = codes.count(len(events))  # each cost len(events) of the 8
            assert 0 < served <= 8 // (len(events) - 1), codes
            assert codes[served:] == [grpc.StatusCode.RESOURCE_EXHAUSTED] * (8 - served), codes


async def test_a_big_answer_counts_a_request_for_each_kib(tmp_path):
    """A page of 500 games (about 50 KB) cost one request, as a GetGame does: a caller
    within its rate asked for 55-112 a second, and the time charged to honest bots grew
    (p99 46 -> 142-178 ms). An answer counts a request more for each KiB it holds."""
    with EmbeddedServer(db=str(tmp_path / "r.db"), rate_per_s=0.01, rate_burst=40) as srv:
        async with Client(srv.address, srv.admin_token) as op:
            for n in range(24):
                first, second = (api.SeatSpec(display_name=f"{n:02}{side}" * 13) for side in "ab")
                await op.create_match(first=first, second=second)
            page = api.ListGamesRequest(limit=500)
            size = (await op.call("ListGames", page)).ByteSize()
        cost = 1 + size // limits.ANSWER_BYTES
        assert cost >= 3, size
        served = 0
        async with Client(srv.address) as stranger:  # (a budget of 40 requests)
            for _ in range(40):
                try:
                    assert len((await stranger.call("ListGames", page)).games) == 24
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                    break
                served += 1
        assert served == 39 // cost + 1, (served, cost)


async def test_replays_asked_for_at_once_are_paid_for_one_by_one(tmp_path):
    """A replay was charged once it had been built: a caller sending a hundred at once had
    every one built, each within the budget it had when it arrived (8 players with 100
    replays each held the server for 13 s). A caller's streams are now opened one at a
    time, each refused while the caller still owes for the last: here one replay of the
    stranger's 8 is built, where the old code built 2 (its whole budget of 2 requests)."""
    with EmbeddedServer(db=str(tmp_path / "r.db"), rate_per_s=0.01, rate_burst=2) as srv:
        async with Client(srv.address, srv.admin_token) as op:
            r, seats = await create(op)
            assert not await resigned(seats, r.game_id)
            replay = api.SubscribeGameRequest(game_id=r.game_id, from_start=True)
            events = list(op.stub.SubscribeGame(replay, metadata=op.metadata))
            assert len(events) >= 3  # a replay costs the stranger's whole budget
            calls = [op.stub.SubscribeGame(replay) for _ in range(8)]  # sent at once
            outcomes = []
            for call in calls:
                try:
                    outcomes.append(len(list(call)))
                except grpc.RpcError as e:
                    outcomes.append(e.code())
            assert outcomes.count(len(events)) == 1, outcomes
            assert outcomes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 7, outcomes


class Peer:
    """A call's context as far as ``peer_address`` reads it."""

    def __init__(self, peer: str) -> None:
        self._peer = peer

    def peer(self) -> str:
        return self._peer


def test_an_ipv6_peer_counts_by_its_64():
    """Limits without a valid token are counted per address: a host given an IPv6 /64 (any
    VPS, most home lines) has 2^64 addresses, each with a budget and a registration quota
    of its own. An IPv6 peer counts by its /64; an IPv4 one (mapped too) by its address."""
    one = {peer_address(Peer(f"ipv6:[2001:db8:1:2::{n:x}]:{5000 + n}")) for n in range(1, 99)}
    other = peer_address(Peer("ipv6:[2001:db8:1:3::1]:5000"))
    assert len(one) == 1 and other not in one
    assert peer_address(Peer("ipv6:%5B2001:db8:1:2:ffff::1%5D:5000")) in one  # (quoted)
    assert peer_address(Peer("ipv4:192.0.2.7:5000")) == "192.0.2.7"
    assert peer_address(Peer("ipv6:[::ffff:192.0.2.7]:5000")) == "192.0.2.7"
    assert peer_address(Peer("unix:/tmp/x")) == "unix:/tmp/x"


def _never_reading(address: str, calls: int, request: bytes) -> socket.socket:
    """A raw HTTP/2 connection that says it can take no data (a receive window of 0) and
    then asks ``calls`` GetGame calls without a token: their answers cannot be sent."""
    host, port = address.rsplit(":", 1)
    conn = socket.create_connection((host, int(port)))

    def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        return (
            len(payload).to_bytes(3, "big")
            + bytes([kind, flags])
            + stream.to_bytes(4, "big")
            + payload
        )

    def field(name: str, value: str) -> bytes:  # HPACK: a literal, not indexed, plain
        return bytes([0, len(name)]) + name.encode() + bytes([len(value)]) + value.encode()

    settings = (4).to_bytes(2, "big") + (0).to_bytes(4, "big")  # INITIAL_WINDOW_SIZE 0
    out = [b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", frame(4, 0, 0, settings)]
    head = b"".join(
        field(k, v)
        for k, v in (
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/nardy.v1.ArbiterService/GetGame"),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        )
    )
    message = b"\x00" + len(request).to_bytes(4, "big") + request
    for n in range(calls):
        stream = 2 * n + 1
        out += [frame(1, 4, stream, head), frame(0, 1, stream, message)]  # END_HEADERS; END_STREAM
    conn.sendall(b"".join(out))
    return conn


def test_calls_whose_answers_cannot_be_sent_count_against_their_caller(tmp_path, caplog):
    """A caller that never reads (an HTTP/2 receive window of 0) had every answered unary
    call kept by gRPC until sent: one anonymous connection piled up 18,000 of them, 1 GiB
    of the edge's memory, and then gRPC refused everyone's calls ("Concurrent RPC limit
    exceeded"). A unary call holds a place in its caller's quota until its answer has gone,
    so the caller (here its address) is refused beyond its quota, and gets its places back
    when it goes."""
    with (
        EmbeddedServer(db=str(tmp_path / "w.db"), streams_per_caller=20) as srv,
        grpc.insecure_channel(srv.address) as ch,
    ):
        stub = api_grpc.ArbiterServiceStub(ch)
        game = stub.CreateMatch(api.CreateMatchRequest()).game_id
        request = api.GetGameRequest(game_id=game)
        held = _never_reading(srv.address, 60, request.SerializeToString())
        try:

            def refused() -> bool:
                try:
                    stub.GetGame(request, timeout=10)
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
                    assert "waiting calls per caller" in e.details()
                    return True
                return False

            deadline = time.monotonic() + 30
            while not refused():  # the same address: refused once 20 answers wait
                assert time.monotonic() < deadline, "never refused"
        finally:
            held.close()
        deadline = time.monotonic() + 30
        while refused():  # the connection gone, its places are given back
            assert time.monotonic() < deadline, "its places were never given back"
    # the answers it never took are not errors with tracebacks in the server's log
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
