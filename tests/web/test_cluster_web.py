"""The web view of one instance shows every instance's games (several instances on one
PostgreSQL: server/core/shared.py): the front page's live boards, a game's page, the
finished games; and a crowd on a page costs the core one question a second."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.core.pgstore import PostgresStore
from server.link import INDEX
from tests.server.conftest import news_cut

TOKEN = "operator-token-for-the-cluster-tests"


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def games(server) -> dict:
    return json.loads(get(server.http_url + "/api/games"))


def until(check, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.fixture
def pair(pg_db):
    reads: list[str] = []  # the first instance's reads of a match row

    class Counting(PostgresStore):
        async def query(self, sql, params=()):
            if "FROM matches WHERE id=" in sql:
                reads.append(params[0])
            return await super().query(sql, params)

    with (
        EmbeddedServer(
            db=pg_db, admin_token=TOKEN, lease_s=3.0, http_port=0, store_factory=Counting
        ) as a,
        EmbeddedServer(db=pg_db, admin_token=TOKEN, lease_s=3.0, http_port=0) as b,
    ):
        a.match_reads = reads
        yield a, b


def started(server) -> tuple[api.CreateMatchResponse, list]:
    """A game created on (and run by) ``server``, both seats following it: in progress."""
    channel = grpc.insecure_channel(server.address)
    stub = api_grpc.ArbiterServiceStub(channel)
    r = stub.CreateMatch(api.CreateMatchRequest())
    streams = [
        stub.SubscribeGame(
            api.SubscribeGameRequest(game_id=r.game_id),
            metadata=(("authorization", f"Bearer {token}"),),
        )
        for token in (r.first_seat_token, r.second_seat_token)
    ]
    for stream in streams:
        for ev in stream:
            if ev.type == pb.EVENT_TYPE_TURN_STARTED:
                break
    return r, [channel, stub, streams]


def test_every_instances_games_are_on_each_instances_web_view(pair):
    a, b = pair
    ours, held_a = started(a)
    theirs, held_b = started(b)
    for server in (a, b):  # each lists both games in progress, with their boards
        listed = until(
            lambda s=server: (
                {g["gameId"]: g for g in games(s)["in_progress"]}
                if len(games(s)["in_progress"]) == 2
                else None
            ),
            f"{server.address} lists both games",
        )
        assert set(listed) == {ours.game_id, theirs.game_id}
        for state in listed.values():
            assert state["position"] and state["turnId"] and state["dice"]
        front = get(server.http_url + "/")
        for r in (ours, theirs):
            assert f'data-game="{r.game_id}"' in front
        # the other instance's game has its page, with its board, here too
        other = theirs if server is a else ours
        page = get(f"{server.http_url}/game/{other.game_id}")
        assert 'class="nardy-board"' in page and "to play" in page

    # a seat's calls for it on this instance's web port: sent to the instance that runs it
    call = urllib.request.Request(
        a.http_url + "/api/nardy.v1.ArbiterService/SubscribeGame",
        data=json.dumps({"gameId": theirs.game_id}).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {theirs.first_seat_token}",
        },
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(call, timeout=30)
    assert refused.value.code == 503
    answer = json.loads(refused.value.read())
    assert answer["code"] == "UNAVAILABLE" and answer["instance"] == b.address

    # its spectators share one read of it a second (the page refreshes once a second)
    a.match_reads.clear()
    started_at = time.monotonic()
    for _ in range(20):
        get(f"{a.http_url}/fragment/game/{theirs.game_id}")
    took = time.monotonic() - started_at
    assert a.match_reads.count(theirs.match_id) <= 1 + took, (a.match_reads, took)

    # both resign: the finished games are listed everywhere
    for r, (_, stub, streams) in ((ours, held_a), (theirs, held_b)):
        stub.Resign(
            api.ResignRequest(game_id=r.game_id),
            metadata=(("authorization", f"Bearer {r.first_seat_token}"),),
        )
        for stream in streams:
            stream.cancel()
    for server in (a, b):
        until(
            lambda s=server: (
                {g["gameId"] for g in games(s)["finished"]} == {ours.game_id, theirs.game_id}
            ),
            f"{server.address} lists both finished games",
        )
    for channel, _, _ in (held_a, held_b):
        channel.close()


def test_a_game_told_while_an_instance_was_not_listening_is_listed_there(pair, pg_db):
    """News sent while an instance's news connection is down is not lost on it: once it
    listens again it says so, and the others tell it their games again."""
    a, b = pair
    with news_cut(pg_db):
        theirs, held = started(b)  # told while nobody listens
    listed = until(
        lambda: {g["gameId"] for g in games(a)["in_progress"]} >= {theirs.game_id},
        f"{a.address} lists the game {b.address} started while it was not listening",
    )
    assert listed
    page = get(f"{a.http_url}/game/{theirs.game_id}")
    assert 'class="nardy-board"' in page and "to play" in page


def test_a_crowd_on_the_front_page_asks_the_core_once_a_second(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "c.db"), http_port=0) as server:
        asked: list[str] = []
        core_link = server.edge.core.link
        real = core_link.call
        core_link.call = lambda method, *a, **k: asked.append(method) or real(method, *a, **k)
        with ThreadPoolExecutor(8) as pool:
            pages = list(pool.map(lambda _: get(server.http_url + "/"), range(40)))
        assert all("Games in progress" in p for p in pages)
        assert 1 <= asked.count(INDEX) <= 3  # (the crowd took more than a second: 2 or 3)
