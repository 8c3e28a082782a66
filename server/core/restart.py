"""A restart: players and their tokens, ladders and their books, and the matches a restart
must rebuild from the journal (the rest stays in the store, read back when asked for), so
that a restart costs the same after a year of games as after a day."""

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
    counted = await core.ladders.restore()  # ladder games in the books
    pairs: dict[str, Lockstep] = {}
    leased = await core.owner.leased()  # unfinished, run by whoever holds their lease
    over: list[MatchSession] = []
    rows = await read.matches()
    replay = await _replayed(core, rows, leased, counted)
    for match_id, seat, digest, creator in await read.seat_tokens():
        if match_id in replay:  # the others are looked up in the store when asked for
            core.roster.add_seat_token(match_id, seat, digest, creator)
        else:
            core.roster.issued.add(digest)
    sizes = Counter(row["options"].get("pair_id", "") for row in rows)
    for row in rows:
        if row["id"] not in replay:
            continue
        match = await tables.read_match(row, pairs, sizes)
        if row["id"] in leased:
            for game in match.games:  # ListGames shows it; its owner runs it
                tables.publish(game, new=True, tell=False)
            continue
        if not await tables.install(match, counted):
            over.append(match)
    for match in over:  # once every pair is whole: an ended game's partner may run on
        tables.match_over(match)


async def _replayed(core: Parts, rows: list[dict], leased: set[str], counted: set[str]) -> set[str]:
    """The matches (of ``rows``) a restart rebuilds from their journals: the newest ones,
    which ListGames lists (catalogue window), any with a game not over, any with a ladder
    game not yet in the books (``counted``), and the whole duplicate pair of each. The
    others stay in the store (read back when asked for). Their games count for /metrics."""
    replay = {row["id"] for row in rows[-core.runtime.catalogue.window :]} | leased
    ladders = core.ladders.by_name
    ladder = {row["id"] for row in rows if row["options"].get("ladder") in ladders}
    ended: list[tuple[str, int]] = []
    for match_id, game_id, status in await core.runtime.reader.game_statuses():
        if status in (Status.WAITING, Status.IN_PROGRESS) or (
            match_id in ladder and game_id not in counted
        ):
            replay.add(match_id)
        else:
            ended.append((match_id, status))
    pairs = {row["options"].get("pair_id") for row in rows if row["id"] in replay}
    replay |= {row["id"] for row in rows if row["options"].get("pair_id") in pairs - {None, ""}}
    core.tables.ended_counts.update(
        Status(status) for match_id, status in ended if match_id not in replay
    )
    return replay
