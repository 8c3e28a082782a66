"""A server ladder turns its pairings: a pair's two bots are freed together, often the only
ones free, and were paired again at once (with four bots only two pairings ever met, and
the standings compared little). A pairing now waits a while for a busy bot that met one of
the two fewer times (server/core/ladder.py, Ladder._hold)."""

from __future__ import annotations

import trio

from nardy.client import Client, serve_games
from tests.server.conftest import random_engine

GAMES = 16


async def test_four_bots_of_a_ladder_meet_each_other(arbiter, operator):
    await operator.create_ladder("four", max_games=GAMES, turn_time_ms=5000)
    async with trio.open_nursery() as nursery:
        for i in range(4):
            bot = Client(arbiter.address)
            await bot.register(f"four{i}")
            await bot.join_ladder("four")
            nursery.start_soon(serve_games, bot, random_engine(i))
        with trio.fail_after(120):
            while (await operator.standings("four")).finished_games < GAMES:
                await trio.sleep(0.1)  # (the ladder's progress, polled)
        nursery.cancel_scope.cancel()
    cross = await operator.crosstable("four")
    met = {frozenset((c.player, c.opponent)) for c in cross.cells if c.wins + c.losses}
    # 8 pairs among 4 bots: every bot met at least two others (it was one, always the same)
    for i in range(4):
        assert sum(f"four{i}" in pair for pair in met) >= 2, sorted(map(sorted, met))
    assert len(met) >= 4
