"""A restart: players and their tokens, ladders and their books, and the matches a restart
must rebuild from the journal (those not over, and their duplicate pairs); the newest
ended ones are listed from their games' last entries, the rest stays in the store (read
back when asked for), so that a restart costs the same after a year of games as after a
day."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from server.core.journal import Status
from server.core.ladders import Ladders
from server.core.lockstep import Lockstep
from server.core.match import MatchSession
from server.core.ownership import Sole
from server.core.principals import Player
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.store import StoreError
from server.core.tables import Tables


@dataclass(frozen=True)
class Parts:
    """What a restart fills."""

    runtime: Runtime
    roster: Roster
    ladders: Ladders
    tables: Tables
    owner: Sole


async def restore(core: Parts) -> None:
    """Load what outlives a restart: players and their tokens, ladders and results,
    matches and games (in progress ones go on). A damaged store stops the server with
    a StoreError rather than half-loading it."""
    try:
        await _restore(core)
    except (ValueError, KeyError, TypeError, IndexError, AssertionError) as e:
        raise StoreError(
            f"{core.runtime.store.name}: the journal is damaged ({e!r}); refusing to start from it"
        ) from None


async def _restore(core: Parts) -> None:
    read, tables = core.runtime.reader, core.tables
    for player_id, name, bot, digest, owner in await read.players():
        core.roster.add(Player(player_id, name, bool(bot), owner), digest)
    await core.ladders.restore()
    pairs: dict[str, Lockstep] = {}
    leased = await core.owner.leased()  # unfinished, run by whoever holds their lease
    live = await read.live_games()
    replay = await _replayed(core, {match_id for match_id, _ in live} | leased)
    newest = await read.newest_matches(core.runtime.catalogue.window)
    listed = {row["id"] for _, row in newest}
    rows = newest + await read.matches_by_id(replay - listed)
    rows.sort(key=lambda order_row: order_row[0])  # the order ListGames lists them in
    for match_id, seat, digest, creator in await read.seat_tokens(replay):
        core.roster.add_seat_token(match_id, seat, digest, creator)
    for digest in await read.seat_token_hashes():  # the others: in the filter of issued ones
        core.roster.issued.add(digest)
    sizes = Counter(row["options"].get("pair_id", "") for _, row in rows if row["id"] in replay)
    ends = await read.ends_of([row["id"] for _, row in rows if row["id"] not in replay])
    stale = {game_id for _, game_id in live}
    over: list[MatchSession] = []
    for _, row in rows:
        if row["id"] not in replay:  # ended: listed from each game's last entry
            tables.list_ended(row, ends.get(row["id"], []))
            continue
        match = await tables.read_match(row, pairs, sizes)
        if row["id"] in leased:
            for game in match.games:  # ListGames shows it; its owner runs it
                tables.publish(game, new=True, tell=False)
            continue
        await tables.settle_ended(match, stale)
        if not await tables.install(match):
            over.append(match)
    for match in over:  # once every pair is whole: an ended game's partner may run on
        tables.match_over(match)
    counts = await read.status_counts() - await read.status_counts(replay)
    tables.ended_counts.update({Status(status): n for status, n in counts.items()})


async def _replayed(core: Parts, live: set[str]) -> set[str]:
    """The matches a restart rebuilds from their journals: any with a game not over
    (``live``), any with a ladder game not yet in the books, and the whole duplicate pair
    of each. The others stay in the store (read back when asked for)."""
    read = core.runtime.reader
    replay = live | set(await read.uncounted_ladder_games())
    return await read.pair_partners(replay)
