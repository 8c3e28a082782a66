"""Limits: request rates per caller and message sizes (RESOURCE_EXHAUSTED, not a crash)."""

from __future__ import annotations

import grpc
import pytest

from nardy.client import Client
from nardy.v1 import arbiter_pb2 as api
from server.app import EmbeddedServer
from server.limits import RateLimiter


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
