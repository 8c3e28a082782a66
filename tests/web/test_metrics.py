"""``/metrics`` scraped during a game: games by status, turns, latencies, streams, refusals."""

from __future__ import annotations

import urllib.request

import grpc
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from nardy.client import Client, my_turn
from nardy.v1 import game_pb2 as pb

pytestmark = pytest.mark.arbiter(http_port=0)  # /metrics on a port of its own


async def scrape(server) -> dict[tuple[str, tuple], float]:
    def get() -> str:
        with urllib.request.urlopen(server.http_url + "/metrics", timeout=10) as r:
            assert r.headers["Content-Type"].startswith("text/plain")
            return r.read().decode()

    text = await trio.to_thread.run_sync(get)
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


async def test_metrics_scraped_during_a_game(arbiter):
    async with Client(arbiter.address) as client:
        r = await client.create_match(
            options=pb.GameOptions(turn_time_ms=60_000, auto_play_forced=False), seed=3
        )
        seats = [client.with_token(r.first_seat_token), client.with_token(r.second_seat_token)]
        plays = 0
        mid_game: dict = {}
        refused = trio.Event()

        async def seat(c: Client) -> None:
            nonlocal plays
            async for ev in c.events(r.game_id):
                if not my_turn(ev):
                    continue
                if plays == 6 and not mid_game:
                    mid_game.update(await scrape(arbiter))
                    with pytest.raises(grpc.RpcError) as e:
                        await c.submit(r.game_id, ev.state.turn_id, notation="24/1")
                    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    refused.set()
                    await c.resign(r.game_id)
                    return
                plays += 1
                await c.submit(
                    r.game_id, ev.state.turn_id, end_position=ev.state.legal_plays[0].end_position
                )

        async with trio.open_nursery() as nursery:
            for c in seats:
                nursery.start_soon(seat, c)
        after = await scrape(arbiter)

    m = mid_game
    assert m["nardy_games", (("status", "in_progress"),)] == 1
    assert m["nardy_games", (("status", "finished"),)] == 0
    played = m["nardy_turns_total", (("how", "played"),)]
    passed = m["nardy_turns_total", (("how", "passed"),)]
    assert played + passed >= 6 and played == 6
    assert m["nardy_turn_latency_seconds_count", ()] == played
    assert m["nardy_open_streams", (("kind", "game"),)] == 2  # both seats are following
    assert m["nardy_journal_commit_seconds_count", ()] >= 8  # started, turns, plays...
    assert m.get(("nardy_refusals_total", (("code", "INVALID_ARGUMENT"),)), 0) == 0
    # after the game: the refusal counted, the game finished, the streams closed
    assert after["nardy_refusals_total", (("code", "INVALID_ARGUMENT"),)] == 1
    assert after["nardy_games", (("status", "finished"),)] == 1
    assert after["nardy_games", (("status", "in_progress"),)] == 0


async def test_a_clock_running_out_is_measured(arbiter):
    async with Client(arbiter.address) as client:
        r = await client.create_match(options=pb.GameOptions(turn_time_ms=300), seed=1)
        seats = [client.with_token(r.first_seat_token), client.with_token(r.second_seat_token)]

        async def sit(c: Client) -> None:  # connected, never plays: the clock runs out
            async for ev in c.events(r.game_id):
                if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                    return

        async with trio.open_nursery() as nursery:
            for c in seats:
                nursery.start_soon(sit, c)
        m = await scrape(arbiter)
    assert m["nardy_clock_lateness_seconds_count", ()] == 1
    assert m["nardy_clock_lateness_seconds_sum", ()] < 1.0
    assert m["nardy_games", (("status", "finished"),)] == 1
