"""The public calls over HTTP on the web view's port (server/edge/web/api.py), with aiohttp's
client against a real arbiter: the same token checks, limits, stamps and status codes as
on the gRPC port, mapped to HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time

import aiohttp
import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.edge.callers import UNKNOWN
from tests.server.conftest import count_link_calls

ARBITER = "/api/nardy.v1.ArbiterService/"


@pytest.fixture
def server(tmp_path):
    with (
        EmbeddedServer(db=str(tmp_path / "w.db"), http_port=0, heartbeat_s=30.0) as srv,
        grpc.insecure_channel(srv.address) as channel,
    ):
        srv.stub = api_grpc.ArbiterServiceStub(channel)
        yield srv


def run(coro):
    return asyncio.run(coro)


def bearer(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {token}"}


async def post(session, server, method: str, body, token: str | None = None, **options):
    """(status, JSON answer) of one unary call."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **bearer(token), **options.pop("headers", {})}
    async with session.post(
        server.http_url + ARBITER + method, data=data, headers=headers, **options
    ) as r:
        return r.status, await r.json(content_type=None)


async def events(session, server, method: str, body, token=None, until=None):
    """The Server-Sent Events of a stream, as (kind, data), until ``until(data)``."""
    headers = {"Content-Type": "application/json", **bearer(token)}
    out = []
    async with session.post(
        server.http_url + ARBITER + method, data=json.dumps(body), headers=headers
    ) as r:
        assert r.status == 200, await r.text()
        assert r.headers["Content-Type"].startswith("text/event-stream")
        kind, data = "message", ""
        async for raw in r.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
            elif not line and data:
                out.append((kind, json.loads(data)))
                if until is None or until(out[-1][1]):
                    return out
                kind, data = "message", ""
    return out


def game_of(server) -> api.CreateMatchResponse:
    return server.stub.CreateMatch(api.CreateMatchRequest())


def test_no_token_is_401_another_seats_game_403_and_nothing_changes(server):
    mine, other = game_of(server), game_of(server)

    async def main():
        async with aiohttp.ClientSession() as s:
            play = {"gameId": other.game_id, "turnId": 1, "notation": "24/18 18/13"}
            status, body = await post(s, server, "SubmitPlay", play)
            assert (status, body["code"]) == (401, "UNAUTHENTICATED")
            status, body = await post(s, server, "SubmitPlay", play, mine.first_seat_token)
            assert (status, body["code"]) == (403, "PERMISSION_DENIED")
            status, body = await post(
                s, server, "Resign", {"gameId": other.game_id}, mine.first_seat_token
            )
            assert (status, body["code"]) == (403, "PERMISSION_DENIED")
            status, body = await post(
                s, server, "GetGame", {"gameId": mine.game_id}, mine.first_seat_token
            )
            assert status == 200 and body["state"]["gameId"] == mine.game_id
            status, _ = await post(s, server, "GetGame", {"gameId": mine.game_id}, "not-ours")
            assert status == 401
            # a malformed authorization is refused, never read as no token
            status, body = await post(
                s,
                server,
                "GetGame",
                {"gameId": mine.game_id},
                headers={"Authorization": "Basic abc"},
            )
            assert (status, body["code"]) == (401, "UNAUTHENTICATED")

    run(main())
    state = server.stub.GetGame(api.GetGameRequest(game_id=other.game_id)).state
    assert state.turn_id == 0 and not state.white_refused and not state.black_refused


def test_bodies_are_limited_and_must_be_json_of_the_request(server):
    r = game_of(server)

    async def main():
        async with aiohttp.ClientSession() as s:
            big = {"gameId": r.game_id, "turnId": 1, "notation": "x" * 10_000}
            status, body = await post(s, server, "SubmitPlay", big, r.first_seat_token)
            assert (status, body["code"]) == (413, "PAYLOAD_TOO_LARGE")
            status, body = await post(s, server, "SubmitPlay", b"{not json", r.first_seat_token)
            assert (status, body["code"]) == (400, "INVALID_ARGUMENT")
            status, body = await post(s, server, "SubmitPlay", {"noSuchField": 1})
            assert status == 400
            # the token is checked first, as over gRPC: a made-up one says so, whatever the body
            for wrong in (b"{not json", {"noSuchField": 1}):
                status, body = await post(s, server, "SubmitPlay", wrong, "made-up")
                assert (status, body["code"]) == (401, "UNAUTHENTICATED")
            status, body = await post(s, server, "CreateMatch", {}, "made-up")
            assert (status, body["code"]) == (401, "UNAUTHENTICATED")
            deep = b"[" * 2000 + b"]" * 2000  # (within the size: nested past the parser's depth)
            status, body = await post(s, server, "SubmitPlay", deep, r.first_seat_token)
            assert (status, body["code"]) == (400, "INVALID_ARGUMENT")
            status, _ = await post(
                s,
                server,
                "GetGame",
                {"gameId": r.game_id},
                headers={"Content-Type": "text/plain"},
            )
            assert status == 415  # (a form of another site cannot post JSON)
            status, body = await post(s, server, "RegisterPlayer", {"name": "x"})
            assert (status, body["code"]) == (501, "UNIMPLEMENTED")  # not offered here
            status, body = await post(s, server, "ListGames", {})
            assert status == 501
            async with s.get(server.http_url + ARBITER + "GetGame") as got:
                assert got.status == 405  # calls are POSTs

    run(main())


def test_unknown_tokens_are_refused_at_the_edge_and_remembered(server):
    """A made-up token never reaches the core; one the edge's filter lets through (forced
    here) is asked once, then refused from memory."""
    r = game_of(server)
    calls = count_link_calls(server)
    liar = secrets.token_urlsafe(32)
    server.edge.gate.issued.add(hashlib.sha256(liar.encode()).hexdigest())

    async def main():
        async with aiohttp.ClientSession() as s:
            for _ in range(50):
                made_up = secrets.token_urlsafe(32)
                status, _ = await post(s, server, "GetGame", {"gameId": r.game_id}, made_up)
                assert status == 401
            assert calls == []
            for _ in range(50):
                status, _ = await post(s, server, "GetGame", {"gameId": r.game_id}, liar)
                assert status == 401
            assert calls == ["Link/Who"]  # once, then from the edge's memory

    run(main())
    digest = hashlib.sha256(liar.encode()).hexdigest()
    assert server.edge.gate.identities.get(digest) is UNKNOWN


def test_limits_are_the_grpc_ports_keyed_on_the_verified_identity(tmp_path):
    with (
        EmbeddedServer(
            db=str(tmp_path / "w.db"), http_port=0, rate_per_s=1, rate_burst=5, streams_per_caller=2
        ) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = api_grpc.ArbiterServiceStub(channel)
        md = (("authorization", f"Bearer {server.admin_token}"),)
        r = stub.CreateMatch(api.CreateMatchRequest(), metadata=md)
        token = r.first_seat_token  # (the operator's match: the seat counts as itself)

        async def main():
            async with aiohttp.ClientSession() as s:
                codes = []
                for _ in range(8):
                    status, body = await post(s, server, "GetGame", {"gameId": r.game_id}, token)
                    codes.append(status)
                assert codes.count(429) >= 2 and codes[0] == 200, codes
                # the same identity over gRPC shares that budget
                with pytest.raises(grpc.RpcError) as info:
                    stub.GetGame(
                        api.GetGameRequest(game_id=r.game_id),
                        metadata=(("authorization", f"Bearer {token}"),),
                    )
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                # another caller is not limited by it
                status, _ = await post(s, server, "GetGame", {"gameId": r.game_id})
                assert status == 200
                time.sleep(4)  # (refilled)
                # streams: at most two held at once by one caller
                headers = {"Content-Type": "application/json", **bearer(token)}
                mine = {"gameId": r.game_id}
                body = json.dumps(mine)
                url = server.http_url + ARBITER + "SubscribeGame"
                held = [await s.post(url, data=body, headers=headers) for _ in range(2)]
                assert [h.status for h in held] == [200, 200]
                status, answer = await post(
                    s, server, "SubscribeGame", {"gameId": r.game_id}, token
                )
                assert (status, answer["code"]) == (429, "RESOURCE_EXHAUSTED")
                for h in held:
                    h.close()
                for _ in range(100):  # the browser went away: its places are given back
                    if not server.edge.gate.streams._open:
                        break
                    await asyncio.sleep(0.05)
                assert not server.edge.gate.streams._open

        run(main())


def test_a_play_over_http_is_stamped_on_arrival_like_one_over_grpc(server):
    """The seat follows its game over SSE (its turn's send time noted as the event is
    written) and plays over HTTP: the core gets both stamps, as for gRPC."""
    r = server.stub.CreateMatch(
        api.CreateMatchRequest(first_seat_color=pb.COLOR_WHITE),  # (the first seat moves first)
        metadata=(("authorization", f"Bearer {server.admin_token}"),),
    )
    seen: list[tuple[str, float, float]] = []
    core_link = server.edge.core.link
    real = core_link.call

    def call(method, request, caller, **options):
        if method.endswith("/SubmitPlay"):
            seen.append((method, options.get("arrival", 0.0), options.get("sent", 0.0)))
        return real(method, request, caller, **options)

    core_link.call = call
    other = server.stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=r.game_id),
        metadata=(("authorization", f"Bearer {r.second_seat_token}"),),
    )
    next(other)  # (both seats came: the game starts)

    async def main():
        async with aiohttp.ClientSession() as s:
            mine = {"gameId": r.game_id}

            def my_turn(ev):
                st = ev.get("state", {})
                return bool(st.get("legalPlays")) and st.get("sideToMove") == st.get("yourColor")

            got = await events(s, server, "SubscribeGame", mine, r.first_seat_token, my_turn)
            state = got[-1][1]["state"]
            before = time.perf_counter()
            play = {
                "gameId": r.game_id,
                "turnId": state["turnId"],
                "endPosition": state["legalPlays"][0]["endPosition"],
            }
            status, body = await post(s, server, "SubmitPlay", play, r.first_seat_token)
            after = time.perf_counter()
            return status, body, before, after, state

    status, body, before, after, state = run(main())
    other.cancel()
    assert status == 200 and body["endPosition"] == state["legalPlays"][0]["endPosition"]
    ((_, arrival, sent),) = seen
    assert before <= arrival <= after  # stamped as its request was read
    assert 0 < sent < arrival  # the turn's send, as the event was written to the browser


def test_only_a_player_creates_a_match_here_and_only_a_challenge(tmp_path):
    """CreateMatch over HTTP: a registered player challenging another by name, with the
    gRPC port's checks and quota (here two matches not yet over); nobody else creates."""
    with (
        EmbeddedServer(
            db=str(tmp_path / "c.db"), http_port=0, open_matches=2, match_counted_s=0
        ) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = api_grpc.ArbiterServiceStub(channel)
        alice, bob = (
            stub.RegisterPlayer(api.RegisterPlayerRequest(name=n, bot=b)).token
            for n, b in (("alice", False), ("bob", True))
        )
        stub.RegisterPlayer(api.RegisterPlayerRequest(name="carol"))
        seat = stub.CreateMatch(api.CreateMatchRequest()).first_seat_token

        def challenge(first="alice", second="bob", **options):
            return {
                "first": {"playerName": first},
                "second": {"playerName": second},
                "targetPoints": 3,
                "options": {"variant": "long", "turnTimeMs": 30000, **options},
            }

        async def main():
            async with aiohttp.ClientSession() as s:

                async def create(body, token):
                    return await post(s, server, "CreateMatch", body, token)

                refused = [
                    (await create(challenge(), None), 401),  # a stranger
                    (await create(challenge(), secrets.token_urlsafe(32)), 401),
                    (await create(challenge(), seat), 403),  # a seat token
                    (await create(challenge(), server.admin_token), 403),  # not here
                    (await create(challenge("bob", "carol"), alice), 403),  # others seated
                    (await create({"first": {"playerName": "alice"}}, alice), 400),  # open seat
                    (await create(challenge(variant="backgammon"), alice), 400),
                    (await create(challenge(turnTimeMs=100_000_000), alice), 400),  # over 24 h
                    (await create(challenge(second="nobody"), alice), 404),
                ]
                for (status, body), expected in refused:
                    assert status == expected, body
                assert refused[0][0][1]["code"] == "UNAUTHENTICATED"
                assert refused[2][0][1]["code"] == "PERMISSION_DENIED"
                status, made = await create(challenge(), alice)
                assert status == 200 and made["challenge"] is True
                assert "firstSeatToken" not in made and "secondSeatToken" not in made
                status, listed = await post(s, server, "ListChallenges", {}, bob)
                (c,) = listed["challenges"]
                assert c["matchId"] == made["matchId"] and c["challenger"]["name"] == "alice"
                assert c["targetPoints"] == 3 and c["options"]["turnTimeMs"] == 30000
                status, _ = await create(challenge(), alice)
                assert status == 200
                status, body = await create(challenge(), alice)  # a third not yet over
                assert (status, body["code"]) == (429, "RESOURCE_EXHAUSTED")
                # declined: no longer counted
                status, _ = await post(
                    s, server, "DeclineChallenge", {"matchId": c["matchId"]}, bob
                )
                assert status == 200
                status, _ = await create(challenge(), alice)
                assert status == 200

        run(main())
