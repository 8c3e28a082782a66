"""Lists answered without the trio thread (issue 10): with the core held up, the web view's
front page (its live boards and finished games) and ListGames still answer, from the
catalogue and the games' told events."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import grpc
import trio

from nardy.client import Client, play_game
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc
from nardy.v1 import game_pb2 as pb
from server import web
from server.app import EmbeddedServer
from tests.server.conftest import create, held_core, random_engine

RACE = "w/0,0,0,0,0,0,-3,-3,-3,-2,-2,-2,0,0,0,0,0,0,3,3,3,2,2,2"


def seat_play_one_turn(stub, game_id: str, tokens: tuple[str, str]) -> None:
    """Both seats arrive; the side to move plays once (so the game has a last play)."""
    streams = [
        stub.SubscribeGame(
            api.SubscribeGameRequest(game_id=game_id),
            metadata=(("authorization", f"Bearer {t}"),),
        )
        for t in tokens
    ]
    played = False
    while not played:
        for token, stream in zip(tokens, streams, strict=True):
            ev = next(stream)
            st = ev.state
            if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.legal_plays:
                stub.SubmitPlay(
                    api.SubmitPlayRequest(
                        game_id=game_id,
                        turn_id=st.turn_id,
                        end_position=st.legal_plays[0].end_position,
                    ),
                    metadata=(("authorization", f"Bearer {token}"),),
                    timeout=30,
                )
                played = True
                break
    for s in streams:
        s.cancel()


def test_the_front_page_and_list_games_answer_while_the_core_is_held_up():
    with EmbeddedServer(http_port=0) as srv:
        ch = grpc.insecure_channel(srv.address)
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        admin = (("authorization", f"Bearer {srv.admin_token}"),)
        finished = stub.CreateMatch(
            api.CreateMatchRequest(start_position=RACE), metadata=admin, timeout=30
        )
        live = stub.CreateMatch(
            api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=600_000)),
            metadata=admin,
            timeout=30,
        )
        seat_play_one_turn(stub, live.game_id, (live.first_seat_token, live.second_seat_token))
        seat_play_one_turn(
            stub, finished.game_id, (finished.first_seat_token, finished.second_seat_token)
        )
        white = (("authorization", f"Bearer {finished.first_seat_token}"),)
        stub.Resign(api.ResignRequest(game_id=finished.game_id), metadata=white, timeout=30)
        ended = api.ListGamesRequest(status=pb.GAME_STATUS_FINISHED)
        for _ in range(10_000):  # the game is listed as finished just after its last event
            if stub.ListGames(ended, timeout=30).games:
                break

        with held_core(srv):
            with urllib.request.urlopen(srv.http_url + "/api/games", timeout=30) as r:
                index = json.load(r)
            with urllib.request.urlopen(srv.http_url + "/", timeout=30) as r:
                page = r.read().decode()
            listed = stub.ListGames(api.ListGamesRequest(limit=10), timeout=30)
        assert [g["gameId"] for g in index["in_progress"]] == [live.game_id]
        assert index["in_progress"][0]["status"] == "GAME_STATUS_IN_PROGRESS"
        assert [g["gameId"] for g in index["finished"]] == [finished.game_id]
        assert live.game_id in page and finished.game_id in page
        assert {g.game_id for g in listed.games} == {live.game_id, finished.game_id}
        ch.close()


async def test_replays_read_back_from_the_store_count_their_events(monkeypatch):
    """A game page of an ended game out of the view's cache reads the game's journal back
    and builds every event in the trio thread (~25 ms of server CPU a page, at 50 pages/s
    per address): each event then counts against the address's rate like a request."""
    monkeypatch.setattr(web, "REPLAY_CACHE", 0)  # every replay read back
    with EmbeddedServer(http_port=0) as srv:
        async with Client(srv.address, srv.admin_token) as op:
            r, seats = await create(op, start_position=RACE)
            async with trio.open_nursery() as n:
                for seat in seats:
                    n.start_soon(play_game, seat, r.game_id, random_engine())
            events = (await op.get_game(r.game_id)).last_seq
        assert events > 20

        def pages() -> list[int]:
            codes = []
            for _ in range(10):
                try:
                    with urllib.request.urlopen(f"{srv.http_url}/api/game/{r.game_id}") as page:
                        codes.append(page.status)
                except urllib.error.HTTPError as e:
                    codes.append(e.code)
            return codes

        codes = await trio.to_thread.run_sync(pages)
    # a budget of 100 requests: a few replays, then refused while it refills
    assert codes.count(200) <= 100 // events + 1 and 429 in codes, codes
