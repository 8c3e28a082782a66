"""Made-up tokens are refused cheaply: a stranger hammering the public port with random
tokens makes neither the core nor the store work per request, what the edge remembers of
tokens is bounded, and a token issued after the edge refused it works at once.

The edge holds a filter of every token the server issued (server/issued.py): a token not
in it is refused without the core. One the filter lets through (a false "maybe", or with
several instances, which have no filter) is asked of the core once, then remembered as
unknown (a negative cache). Link calls are counted at the edge, store lookups in the store.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from server.app import EmbeddedServer
from server.core.store import SQLiteStore
from server.edge.callers import UNKNOWN, Identities
from server.issued import Issued
from server.link import link_pb
from tests.server.conftest import count_link_calls

TOKEN_TABLES = ("FROM players", "FROM seat_tokens")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def counting_store(base: type = SQLiteStore):
    """A store class noting each lookup of a token (players, seat tokens), and that list."""
    lookups: list[str] = []

    class Counting(base):
        async def query(self, sql, params=()):
            if any(t in sql for t in TOKEN_TABLES) and "token_hash" in sql:
                lookups.append(sql)
            return await super().query(sql, params)

    return Counting, lookups


def get_game(stub, token: str, game_id: str = "0123456789ab") -> grpc.StatusCode:
    md = (("authorization", f"Bearer {token}"),)
    try:
        stub.GetGame(api.GetGameRequest(game_id=game_id), metadata=md, timeout=10)
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


# -- the pieces ----------------------------------------------------------------------------
def test_the_filter_holds_every_token_added_and_few_others():
    issued = Issued()
    added = [digest(secrets.token_hex(16)) for _ in range(100_000)]  # beyond its first slice
    for d in added:
        issued.add(d)
    assert len(issued.slices) == 2 and len(issued) >= 0.999 * len(added)
    assert all(d in issued for d in added)
    strangers = [digest(secrets.token_hex(16)) for _ in range(100_000)]
    false = sum(d in issued for d in strangers)
    assert false < 200, f"{false} of 100000 made-up tokens pass (at most ~0.1% should)"
    assert issued.nbytes < 6 * len(added)  # 2 bytes a token of capacity, grown by doubling
    again = Issued.load(issued.dump())  # as the edge receives it
    assert all(d in again for d in added[::97]) and len(again) == len(issued)
    again.add(added[0])  # (added twice: counted once)
    assert len(again) == len(issued)
    assert "not a digest" not in issued
    with pytest.raises(ValueError):
        Issued.load(issued.dump()[:-1])


def test_what_the_edge_remembers_of_tokens_is_bounded_lru():
    memory = Identities(most=1000)
    unknown = link_pb.Identity(known=False, final=True)
    first = [digest(str(i)) for i in range(1000)]
    for d in first:
        memory.learn(d, unknown)
    assert memory.get(first[0]) is UNKNOWN  # used: kept
    for i in range(1000, 5000):
        memory.learn(digest(str(i)), unknown)
    assert len(memory) <= 2 * 1000  # known and unknown ones, each capped
    assert memory.get(first[1]) is None  # the oldest went first
    memory.issued(digest("4999"))  # issued since: forgotten, asked again
    assert memory.get(digest("4999")) is None


# -- one arbiter -----------------------------------------------------------------------------
def test_random_tokens_cost_neither_the_core_nor_the_store(tmp_path):
    Counting, lookups = counting_store()
    with (
        EmbeddedServer(db=str(tmp_path / "t.db"), store_factory=Counting) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = api_grpc.ArbiterServiceStub(channel)
        r = stub.CreateMatch(api.CreateMatchRequest())  # seat tokens in memory
        stub.RegisterPlayer(api.RegisterPlayerRequest(name="known"))
        calls = count_link_calls(server)
        lookups.clear()
        codes = [get_game(stub, secrets.token_urlsafe(32)) for _ in range(1000)]
        assert set(codes) == {grpc.StatusCode.UNAUTHENTICATED}
        assert calls == [] and lookups == []  # refused at the edge, each one
        # a real token still works (asked of the core's memory once)
        assert get_game(stub, r.first_seat_token, r.game_id) == grpc.StatusCode.OK
        assert calls == ["Link/Who", "/nardy.v1.ArbiterService/GetGame"] and lookups == []


def test_a_token_the_filter_lets_through_is_asked_once_then_remembered(tmp_path):
    """A false "maybe" of the filter (forced here) is asked of the core once, then refused
    at the edge: repeating it costs nothing."""
    Counting, lookups = counting_store()
    with (
        EmbeddedServer(db=str(tmp_path / "t.db"), store_factory=Counting) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = api_grpc.ArbiterServiceStub(channel)
        liar = secrets.token_urlsafe(32)
        server.edge.gate.issued.add(digest(liar))  # as if the filter were wrong about it
        calls = count_link_calls(server)
        lookups.clear()
        codes = [get_game(stub, liar) for _ in range(200)]
        assert set(codes) == {grpc.StatusCode.UNAUTHENTICATED}
        assert calls == ["Link/Who"]  # asked once (the core's filter: never issued)
        assert lookups == []  # and not looked up in the store


def test_a_token_issued_after_it_was_refused_works_at_once(tmp_path, monkeypatch):
    """Issued tokens are random, so only a guess could be refused before it is issued;
    were one, the edge hears of the issue before anyone is handed the token."""
    chosen = iter(["nardy_" + secrets.token_urlsafe(32) for _ in range(2)])
    tokens = [next(chosen), next(chosen)]
    made = iter(tokens)
    monkeypatch.setattr("server.core.roster.new_token", lambda: next(made))
    with (
        EmbeddedServer(db=str(tmp_path / "t.db")) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        stub = api_grpc.ArbiterServiceStub(channel)
        # refused by the filter, and remembered as unknown by the negative cache
        assert get_game(stub, tokens[0]) == grpc.StatusCode.UNAUTHENTICATED
        server.edge.gate.issued.add(digest(tokens[1]))  # (a false "maybe")
        assert get_game(stub, tokens[1]) == grpc.StatusCode.UNAUTHENTICATED
        assert server.edge.gate.identities.get(digest(tokens[1])) is UNKNOWN
        for name in ("first", "second"):
            got = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name))
            assert got.token in tokens
        for token in tokens:  # both work at once, with no wait
            assert get_game(stub, token) == grpc.StatusCode.NOT_FOUND


def test_the_filter_follows_a_restart_and_a_stored_seat_token(tmp_path):
    """A restart sends the edge every token issued before (the seat tokens of ended
    matches too, which may stay in the store only)."""
    db = str(tmp_path / "t.db")
    with EmbeddedServer(db=db) as server, grpc.insecure_channel(server.address) as channel:
        stub = api_grpc.ArbiterServiceStub(channel)
        r = stub.CreateMatch(api.CreateMatchRequest())
        md = (("authorization", f"Bearer {server.admin_token}"),)
        from nardy.v1 import admin_pb2 as admin_pb
        from nardy.v1 import admin_pb2_grpc

        admin_pb2_grpc.AdminServiceStub(channel).VoidGame(
            admin_pb.VoidGameRequest(game_id=r.game_id), metadata=md
        )
    with EmbeddedServer(db=db) as server, grpc.insecure_channel(server.address) as channel:
        assert digest(r.first_seat_token) in server.edge.gate.issued
        stub = api_grpc.ArbiterServiceStub(channel)
        md = (("authorization", f"Bearer {r.first_seat_token}"),)
        state = stub.GetGame(api.GetGameRequest(game_id=r.game_id), metadata=md).state
        assert state.game_id == r.game_id


# -- several instances: no filter, a budget of lookups per address --------------------------
def test_without_a_filter_made_up_tokens_are_looked_up_within_a_budget(pg_db, monkeypatch):
    from server.core.pgstore import PostgresStore

    Counting, lookups = counting_store(PostgresStore)
    chosen = "nardy_" + secrets.token_urlsafe(32)
    made = iter([chosen])
    monkeypatch.setattr("server.core.roster.new_token", lambda: next(made))
    token = "operator-token-for-the-cluster-tests"
    options = {"admin_token": token, "lease_s": 3.0, "rate_per_s": 5, "rate_burst": 20}
    with (
        EmbeddedServer(db=pg_db, store_factory=Counting, **options) as a,
        EmbeddedServer(db=pg_db, **options) as b,
    ):
        assert a.edge.gate.issued is None  # (others issue tokens too)
        with grpc.insecure_channel(a.address) as ca, grpc.insecure_channel(b.address) as cb:
            stub_a, stub_b = api_grpc.ArbiterServiceStub(ca), api_grpc.ArbiterServiceStub(cb)
            lookups.clear()
            codes = [get_game(stub_a, secrets.token_urlsafe(32)) for _ in range(100)]
            assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) >= 70, codes
            asked = codes.count(grpc.StatusCode.UNAUTHENTICATED)
            assert len(lookups) <= 2 * asked <= 2 * 30  # (players, then seat tokens)
            time.sleep(4)  # the address's budget refills
            # a guess refused by A, then issued by B: A hears of it from B, and forgets
            assert get_game(stub_a, chosen) == grpc.StatusCode.UNAUTHENTICATED
            assert a.edge.gate.identities.get(digest(chosen)) is UNKNOWN
            calls = count_link_calls(a)
            assert get_game(stub_a, chosen) == grpc.StatusCode.UNAUTHENTICATED
            assert calls == []  # remembered: not asked again
            stub_b.RegisterPlayer(api.RegisterPlayerRequest(name="late"))
            heard = threading.Event()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not heard.is_set():
                if a.edge.gate.identities.get(digest(chosen)) is None:
                    heard.set()
                time.sleep(0.01)
            assert heard.is_set(), "instance A never heard the token was issued"
            assert get_game(stub_a, chosen) == grpc.StatusCode.NOT_FOUND
