"""The core's ladders: creating and joining them, their books kept with every game's result
(and void), restored after a restart, and read back from the store when several instances
share it (the leader pairs; every instance answers the standings alike)."""

from __future__ import annotations

import logging
import math

import trio

from nardy.variant import variant
from server.core import statements
from server.core.journal import Status
from server.core.ladder import CreatePair, Ladder, LadderGame, LadderOptions, Member
from server.core.match import MatchSession
from server.core.ownership import Sole
from server.core.policy import MAX_TURN_TIME_MS
from server.core.recent import Recent
from server.core.roster import NAME, Roster
from server.core.runtime import Runtime
from server.core.session import GameSession
from server.core.store import StoreError, Write
from server.core.writer import Commit
from server.errors import ArbiterError, Code, clip

log = logging.getLogger("nardy.server")

RELOAD_S = 1.0  # several instances: standings read a ladder's books back this often at most


class Ladders:
    def __init__(
        self, runtime: Runtime, roster: Roster, owner: Sole, create_pair: CreatePair
    ) -> None:
        self.runtime = runtime
        self.roster = roster
        self.owner = owner
        self.create_pair = create_pair  # (server.core.seating's)
        self.by_name: dict[str, Ladder] = {}
        self._reload_due = False
        self._reloaded: dict[str, float] = {}  # ladder -> when its books were read back
        self._kept: dict[str, int] = {}  # ladder -> its books (Ladder.books) as last stored
        self.joins = Recent(60)  # players' JoinLadder calls in the last minute

    def ladder(self, name: str) -> Ladder:
        if name not in self.by_name:
            raise ArbiterError(Code.NOT_FOUND, f"no ladder {name!r}")
        return self.by_name[name]

    async def create(
        self, digest: str | None, name: str, options: LadderOptions
    ) -> tuple[Ladder, bool]:
        """The ladder ``name``, created with ``options`` if it does not exist yet (operator)."""
        self.roster.require_operator(digest)
        if not NAME.fullmatch(name):
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a ladder name is 1-40 letters, digits, '.', '_' or '-'"
            )
        if name in self.by_name:
            return self.by_name[name], False
        try:
            variant(options.variant)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None
        if not 0 < options.turn_time_ms <= MAX_TURN_TIME_MS:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, f"a ladder's turn_time_ms is 1..{MAX_TURN_TIME_MS}"
            )
        if options.time_bank_ms > MAX_TURN_TIME_MS:  # (every pairing would be refused)
            raise ArbiterError(
                Code.INVALID_ARGUMENT, f"a ladder's time_bank_ms is 0..{MAX_TURN_TIME_MS}"
            )
        if options.max_games_per_bot < 2:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "max_games_per_bot must leave room for a pair (2 games)"
            )
        await self.runtime.writer.commit(statements.add_ladder(name, options))
        if name in self.by_name:  # created meanwhile by the same request from elsewhere
            return self.by_name[name], False
        ladder = self.open(name, options)
        self.owner.tell("ladder", l=name)
        log.info("ladder created name=%s %s", name, options)
        return ladder, True

    def open(self, name: str, options: LadderOptions) -> Ladder:
        ladder = Ladder(self.create_pair, self.owner.place_pair, name, options)
        self.by_name[name] = ladder
        ladder.active = self.owner.leading
        self.runtime.spawn(ladder.run)
        return ladder

    async def join(self, digest: str | None, name: str, ready: bool) -> None:
        """A bot ready in a ladder (a few times a minute at most, each call being written:
        a bot saying it again and again would take the journal's writes from the games),
        or no longer (never refused: a bot that leaves must not be paired; written only
        when it was ready, but with several instances, where another may have been told)."""
        player = self.roster.require_player(digest, "joining a ladder")
        if name not in self.by_name and self.owner.books_shared:
            await self.reload(name)  # created on another instance
        ladder = self.ladder(name)
        if ready:
            most = self.roster.policy.ladder_joins_per_minute
            if self.joins.count(player.id) >= most:
                raise ArbiterError(
                    Code.RESOURCE_EXHAUSTED,
                    f"at most {most} JoinLadder calls a minute from one player, ready; "
                    "try again later",
                )
            self.joins.add(player.id)
        else:
            member = ladder.members.get(player.id)
            if not self.owner.books_shared and (member is None or not member.ready):
                return  # (not ready already: nothing to write)
        await self.runtime.writer.commit(statements.set_ladder_member(name, player.id, ready))
        ladder.join(player.id, player.name, ready)
        self.owner.tell("ladder", l=name)

    # -- the books ----------------------------------------------------------------------
    def game_over(self, game: GameSession) -> list[Write]:
        """What a game's end adds to its ladder's books (written with its end)."""
        ladder = self.by_name.get(game.match.ladder)
        if ladder is None:
            return []
        record = ladder.game_over(game, bench=not self.owner.books_shared)
        return [statements.add_ladder_game(game.match.ladder, record)]

    def counted(self, game: GameSession) -> None:
        """A ladder game's end is written: the leader counts it (several instances)."""
        if game.match.ladder in self.by_name and self.owner.books_shared:
            self.owner.tell("ladder", l=game.match.ladder)
            self.reload_soon()

    async def voided(self, game: GameSession) -> list[Write]:
        """What voiding an ended game changes in its ladder's books (and the stored books,
        which counted it, are dropped)."""
        ladder = self.by_name.get(game.match.ladder)
        if ladder is None:
            return []
        stored = await self.runtime.reader.ladder_games(ladder.name)
        record = ladder.void(game.id, [LadderGame(**r) for r in stored])
        if record is None:
            return []
        self._kept.pop(ladder.name, None)
        return [
            statements.add_ladder_game(ladder.name, record),
            statements.drop_ladder_books(ladder.name),
        ]

    async def restore(self) -> None:
        """Every ladder with its books and members, after a restart: the books as last
        stored (alone on the store) and the records after them."""
        read = self.runtime.reader
        players = self.roster.players
        for name, options in await read.ladders():
            ladder = self.open(name, LadderOptions(**options))
            loaded = 0 if self.owner.books_shared else await self._load_books(ladder)
            for record in await read.ladder_games(name, after=loaded):
                ladder.restore(LadderGame(**record))
            for player_id, ready in await read.ladder_members(name):
                if player_id in players:
                    ladder.members[player_id] = Member.stored(
                        player_id, players[player_id].name, ready
                    )

    async def _load_books(self, ladder: Ladder) -> int:
        """Load the ladder's stored books if they are those of its records as stored: how
        many records they count (0: none loaded, every record is to be counted)."""
        read = self.runtime.reader
        stored = await read.ladder_books(ladder.name)
        if stored is None:
            return 0
        counted, last, books = stored
        if counted < 1 or await read.ladder_game_at(ladder.name, counted) != last:
            log.warning("ladder %s: its stored books do not match its results", ladder.name)
            return 0
        try:
            ladder.load_books(books)
        except (KeyError, TypeError, ValueError) as e:
            log.warning("ladder %s: its stored books are damaged (%r)", ladder.name, e)
            return 0
        self._kept[ladder.name] = ladder.books
        return counted

    def keep_books(self) -> list[Commit]:
        """Store each ladder's books that changed since they were last stored (alone on
        the store; several instances' books are the store's), so that a restart counts only
        the results after them. The writes follow those of the results counted."""
        if self.owner.books_shared:
            return []
        commits = []
        for name, ladder in self.by_name.items():
            if ladder.recent and self._kept.get(name) != ladder.books:
                books, last = ladder.books_state(), ladder.recent[-1].game_id
                write = statements.set_ladder_books(name, ladder.counted, last, books)
                commits.append(self.runtime.writer.submit(write))
                self._kept[name] = ladder.books
        return commits

    async def restore_games(self, match: MatchSession) -> None:
        """Put a restored ladder match's games back in its ladder's books."""
        ladder = self.by_name.get(match.ladder)
        if ladder is None:
            return
        counted = await self.runtime.reader.counted_games([game.id for game in match.games])
        for game in match.games:
            if game.id in counted:
                continue
            if game.status in (Status.FINISHED, Status.ABORTED):
                # ended just before the restart, not yet counted
                record = ladder.game_over(game)
                await self.runtime.writer.commit(
                    statements.add_ladder_game(ladder.name, record),
                    fence=self.owner.fence(match),
                )
                continue
            if self.owner.books_shared:
                continue  # the leader's books come from the store (reload)
            ladder.in_progress.add(game.id)
            for seat in match.seats:
                member = ladder.members.get(seat.player_id or "")
                if member is not None:
                    member.playing += 1

    # -- several instances: the books as the store has them ------------------------------
    async def reload(self, only: str = "") -> None:
        """Ladders, members, results and games in progress as the store has them (every
        instance writes there), so standings read the same from every instance."""
        read = self.runtime.reader
        for name, options in await read.ladders():
            if name not in self.by_name:
                self.open(name, LadderOptions(**options))
        for name, ladder in self.by_name.items():
            if only and name != only:
                continue
            async with ladder.lock:  # not in the middle of a pairing
                records = [LadderGame(**record) for record in await read.ladder_games(name)]
                members = []
                for player_id, ready in await read.ladder_members(name):
                    player = await self.roster.player(player_id)
                    if player is not None:
                        members.append(Member.stored(player_id, player.name, ready))
                live = {
                    game_id: [seat["player_id"] for seat in row["seats"]]
                    for game_id, row in await read.unfinished_games()
                    if row["options"].get("ladder") == name
                }
                ladder.reload(records, members, live)

    def reload_soon(self) -> None:
        """Reload the ladders in a moment (news of a result or a member; leader only)."""
        if self.owner.leading and not self._reload_due:
            self._reload_due = True
            self.runtime.spawn(self._reload)

    async def _reload(self) -> None:
        self._reload_due = False
        try:
            await self.reload()
        except StoreError as e:
            log.warning("ladders not reloaded: %s", e.message)
        except Exception:  # a refresh in the background: the next one may do
            log.exception("ladders not reloaded")

    async def fresh_books(self, name: str) -> None:
        """Several instances: the ladder's books as the store has them, the same on every
        instance; read back at most every RELOAD_S per ladder (anyone may ask, and it
        reads every result of the ladder)."""
        if not self.owner.books_shared:
            return
        now = trio.current_time()
        if now < self._reloaded.get(name, -math.inf) + RELOAD_S:
            return
        if name in self.by_name:  # (a name unknown here: asked each time)
            self._reloaded[name] = now
        await self.reload(name)

    def news(self, name: str) -> None:
        """Another instance changed ladder ``name`` (created it, a member, a result)."""
        if name not in self.by_name:
            self.runtime.spawn(self._reload)
        self.reload_soon()

    async def lead(self, leading: bool) -> None:
        """This instance leads the ladders now (pairs their games), or no longer does."""
        if leading:
            await self.reload()
        for ladder in self.by_name.values():
            ladder.active = leading
            ladder.wake()
