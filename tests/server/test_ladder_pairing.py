"""A server ladder turns its pairings: a pair's two bots are freed together, often the only
ones free, and were paired again at once (with four bots only two pairings ever met, and
the standings compared little). A pairing now waits a while for a busy bot that met one of
the two fewer times (server/core/ladder.py, Ladder._hold)."""

from __future__ import annotations

from dataclasses import replace

import trio

from nardy import Termination
from nardy.client import Client, serve_games
from server.core.ladder import NEWCOMER_BENCH_S, Ladder, LadderGame, LadderOptions, Member
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
    standings = await operator.standings("four")  # (with what says it pairs no more)
    assert standings.options.max_games == GAMES <= standings.finished_games
    cross = await operator.crosstable("four")
    met = {frozenset((c.player, c.opponent)) for c in cross.cells if c.wins + c.losses}
    # 8 pairs among 4 bots: every bot met at least two others (it was one, always the same)
    for i in range(4):
        assert sum(f"four{i}" in pair for pair in met) >= 2, sorted(map(sorted, met))
    assert len(met) >= 4


def abandoned(pair_id: str, game_id: str, winner: str, loser: str) -> LadderGame:
    """A ladder game ``loser`` lost because its seat never came."""
    return LadderGame(
        pair_id, game_id, winner, loser, winner, 2, "mars", str(Termination.ABANDONMENT),
        False, (0, 0), (0, 0),
    )  # fmt: skip


async def test_the_leader_benches_from_the_stored_records():
    """Several instances: the leader pairs, and its books and members are read back from
    the store at every result; a bench it kept in memory was dropped at each reading, and
    a dead bot was paired again 30 ms after being benched. Its members keep their benches
    across readings; the records new since the last reading bench them, a JoinLadder
    counted in the store brings one back after one missed pair, not after two."""

    async def nothing(*_):
        raise AssertionError("not paired here")

    ladder = Ladder(nothing, nothing, "club", LadderOptions())
    ladder.active = False
    members = lambda joins: [Member.stored("g", "gone", joins), Member.stored("a", "ann", 1)]  # noqa: E731
    # the first reading: what is stored is history (gone came to a game then: a newcomer
    # is benched longer, and ready again does not bring it back)
    history = [replace(abandoned("p0", "g0", "ann", "gone"), termination=str(Termination.NORMAL))]
    ladder.reload(history, members(1), {})
    first = [*history, abandoned("p1", "g1", "ann", "gone"), abandoned("p1", "g2", "ann", "gone")]
    ladder.reload(first, members(1), {})
    gone = ladder.members["g"]
    assert gone.benched == 1 and gone.benched_until > trio.current_time()  # once a pair
    ladder.reload(first, members(2), {})  # it said it is ready again (a restarted engine)
    gone = ladder.members["g"]
    assert gone.benched == 1 and gone.benched_until < trio.current_time()
    second = [*first, abandoned("p2", "g3", "ann", "gone")]
    ladder.reload(second, members(2), {})
    ladder.reload(second, members(3), {})  # ready again: after two missed pairs, no matter
    gone = ladder.members["g"]
    assert gone.benched == 2 and gone.benched_until > trio.current_time() + 100
    # a newcomer that never came to a game here sits its bench out, ready again or not
    # (registering is free: ten newcomers that never came stalled a ladder's bots)
    fresh = Ladder(nothing, nothing, "club", LadderOptions())
    fresh.active = False
    newcomers = lambda joins: [Member.stored("n", "new", joins), Member.stored("a", "ann", 1)]  # noqa: E731
    fresh.reload([], newcomers(1), {})
    missed = [abandoned("p1", "g1", "ann", "new"), abandoned("p1", "g2", "ann", "new")]
    fresh.reload(missed, newcomers(1), {})
    fresh.reload(missed, newcomers(2), {})  # ready again
    new = fresh.members["n"]
    assert new.benched == 1
    assert new.benched_until >= trio.current_time() + NEWCOMER_BENCH_S - 1
