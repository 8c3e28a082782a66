"""The tables: every match and game this core holds, as the Host they run under (their
journal, their start and end), from creation to the bounded cache of ended games; a game
found by id (live, ended, or read back from the store); a match run, ended, restored or
stopped here."""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict

import trio

from nardy.v1 import arbiter_pb2 as api
from nardy.variant import Variant
from server.core import statements
from server.core.journal import Event, EventType, Status
from server.core.ladders import Ladders
from server.core.lockstep import Lockstep
from server.core.match import MatchSession
from server.core.notes import Note
from server.core.notices import Notices
from server.core.ownership import Sole
from server.core.principals import new_id
from server.core.recovery import restore_match
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.session import GameSession
from server.core.store import LeaseLost, StoredGame
from server.core.views import summary_pb
from server.core.writer import Commit
from server.errors import ArbiterError, Code, quote
from server.link import STILL_TICK_S, a_stop

log = logging.getLogger("nardy.server")

BOARDS_EACH = 3  # the web view's live boards showing one player's games, at most
ENDED_GAMES = 64  # ended games kept in memory (newest used); the others are read back
LOOKED_AT_S = 1.0  # a game another instance runs, read from the store, is shown this long


class Tables:
    """The matches and games of this core (the Host of server.core.match)."""

    def __init__(
        self, runtime: Runtime, roster: Roster, notices: Notices, ladders: Ladders, owner: Sole
    ) -> None:
        self.runtime = runtime
        self.roster = roster
        self.notices = notices
        self.ladders = ladders
        self.owner = owner
        self.arrivals = runtime.arrivals  # (for the sessions: plays stamped at the edge)
        self.metrics = runtime.metrics
        # Live matches and games. An ended match leaves them (once its duplicate pair is
        # over too: until then its seed must stay secret, see ``held``) for the bounded
        # ``ended`` cache; beyond that its games are read back from the store on demand.
        self.matches: dict[str, MatchSession] = {}
        self.games: dict[str, GameSession] = {}
        self.ended: OrderedDict[str, GameSession] = OrderedDict()
        self.held: dict[str, list[MatchSession]] = {}  # pair id -> its ended matches
        self.ended_counts: Counter[Status] = Counter()  # games that left ``games``
        # games other instances run, as last read from the store (newest used)
        self.looked_at: OrderedDict[str, tuple[float, GameSession]] = OrderedDict()
        self._still_until = trio.current_time()  # the end of the last stop (stood_still)

    # -- running matches ------------------------------------------------------------------
    def run(self, match: MatchSession) -> None:
        """Run a new match (stored already)."""
        self.matches[match.id] = match
        self._game_added(match.current)
        self.runtime.spawn(self._run_match, match)

    async def mind_stillness(self) -> None:
        """Nobody loses on time while the server could not serve: when the core wakes
        STOOD_STILL_S or more after it last ran (a kill -STOP, a suspended machine), it has
        stood still for that long (:meth:`stood_still`). Its timeouts wait for the edge's fence,
        which answers after this has run; a play read from the transport after the stop is
        stamped then, and charged as if the stop had not been. (The edge minds its own
        stops and tells them over the link, before its next frame.)"""
        ran = trio.current_time()
        while True:
            await trio.sleep_until(ran + STILL_TICK_S)
            now = trio.current_time()
            gap, ran = now - ran, now
            if a_stop(gap, log, "core"):
                self.stood_still(gap)

    def stood_still(self, seconds: float) -> None:
        """The core or the edge stood still for ``seconds`` until now: every running
        turn's clock moves on by that long. A time both stood still through (a suspended
        machine) counts once, and no stop counts from before this core's start."""
        now = trio.current_time()
        seconds = min(seconds, now - self._still_until)
        self._still_until = now
        if seconds > 0:  # (False for a NaN too)
            for game in self.games.values():
                game.stood_still(seconds)

    async def _run_match(self, match: MatchSession) -> None:
        try:
            await match.run()
            if match.called_off:
                await match.settled.wait()  # its abort is written before its end
            if not self.owner.owns(match.id):
                return  # taken over by another instance: it writes the rest
            await self._end_match(match)
        except LeaseLost:
            self.lose(match.id)
        except ArbiterError as e:
            # The journal cannot be written: stop this match where its journal ends; a
            # restart on a healthy store resumes it from there. (Stopping, the journal
            # closes under the matches still going: that is no error.)
            say = log.info if self.runtime.closing else log.error
            say("match %s stopped: %s", match.id, e.message)
            match.current.close_streams(EventType.SERVER_SHUTDOWN)

    async def _finish_ended(self, match: MatchSession) -> None:
        """A match taken over after its last game ended: only its end is left to write."""
        try:
            await self._end_match(match)
        except LeaseLost:
            self.lose(match.id)
        except ArbiterError as e:
            log.error("match %s: its end not written: %s", match.id, e.message)

    async def _end_match(self, match: MatchSession) -> None:
        """The match is over: its scores, and its lease given up."""
        owner = self.owner
        writes = [statements.update_match(match), *owner.release(match.id)]
        await self.runtime.writer.commit(*writes, fence=owner.fence(match))
        owner.ended(match.id)

    def lose(self, match_id: str, why: str = "another instance took it over") -> None:
        """Stop a match here at once, writing nothing more (``why``: another instance
        runs it now); its streams end (SERVER_SHUTDOWN), so clients come back and are
        sent there."""
        self.owner.ended(match_id)
        match = self.matches.pop(match_id, None)
        if match is None:
            return
        match.halt()
        for game in match.games:
            self.games.pop(game.id, None)
            game.close_streams(EventType.SERVER_SHUTDOWN)
        log.info("match %s: %s; stopped here", match_id, why)

    async def install(self, match: MatchSession) -> bool:
        """Run a match restored from the journal here (after a restart, or taken over);
        False if it is over."""
        self.matches[match.id] = match
        for game in match.games:
            self.games[game.id] = game
            self.publish(game, new=True, tell=False)
        await self.ladders.restore_games(match)
        if not match.match.over and match.current.status in (Status.WAITING, Status.IN_PROGRESS):
            self.runtime.spawn(self._run_match, match)
            log.info("match %s restored (game %s)", match.id, match.current.id)
            return True
        if self.owner.holds(match.id):  # it ended just before its owner stopped
            self.runtime.spawn(self._finish_ended, match)
        return False

    async def settle_ended(self, match: MatchSession, stale: set[str] | None = None) -> None:
        """Store the status of the games of a restored match whose journal ended after
        the games table last said (the server stopped between a game's last event and its
        end: ``stale``, the ids the table still calls live; None: any), so that it is
        counted, listed and archived as ended."""
        games = [
            g
            for g in match.games
            if g.status in (Status.FINISHED, Status.ABORTED) and (stale is None or g.id in stale)
        ]
        if games:
            fence = self.owner.fence(match) if self.owner.holds(match.id) else None
            await self.runtime.writer.commit(*map(statements.update_game, games), fence=fence)

    def list_ended(self, row: dict, games: list[StoredGame]) -> None:
        """An ended match as ListGames lists it, from each game's last journal entry
        (``games``: Reader.match_ends): a restart's newest matches. One whose first game
        was called off before it began is not listed, as it was not once it ended."""
        journaled = [entry[:2] for entry in games[0][3]] if len(games) == 1 else None
        if journaled in ([], [(1, EventType.GAME_ABORTED)]):  # (nothing but its end)
            return
        pair_id = row["options"].get("pair_id", "")
        pair = Lockstep(pair_id, 1) if pair_id else None  # (its pair is over: not replayed)
        match = restore_match(self, row, games, new_id, pair)
        for game in match.games:
            self.publish(game, new=True, tell=False)
        match.release()

    # -- finding games --------------------------------------------------------------------
    async def game(self, game_id: str, *, read: bool = False) -> GameSession:
        """A game by id: live, recently ended, or read back from the store. A game another
        instance runs is answered with where it lives (Elsewhere), or (``read``: only to
        look at it) read from the store as it is now, or was at most a second ago."""
        game = self.games.get(game_id)
        if game is not None:
            return game
        game = self.ended.get(game_id)
        if game is not None:
            self.ended.move_to_end(game_id)
            return game
        held = self.looked_at.get(game_id) if read else None
        if held is not None and held[0] + LOOKED_AT_S > trio.current_time():
            return held[1]
        game = await self.owner.running_elsewhere(game_id, read=read)
        if game is not None:
            return game
        return await self._load_ended(game_id)

    async def read_match(
        self, row: dict, pairs: dict[str, Lockstep], sizes: Counter | None = None
    ) -> MatchSession:
        """A match as its journal has it (not yet running). ``sizes``: how many journaled
        matches each pair has, so no game of a pair throws before its partner is back."""
        games = await self.runtime.reader.match_games(row["id"])
        pair_id = row["options"].get("pair_id", "")
        size = sizes[pair_id] if sizes else 1
        pair = pairs.setdefault(pair_id, Lockstep(pair_id, size)) if pair_id else None
        return restore_match(self, row, games, new_id, pair)

    async def read_game(self, match_id: str, game_id: str) -> GameSession | None:
        """A game of a match another instance runs, as the store has it now (to look at;
        kept a second: its spectators, and anyone's GetGame, share one read)."""
        row = await self.runtime.reader.match(match_id)
        if row is None:
            return None
        alone = await self._read_alone(row)
        match = await self.read_match(row, {alone.pair_id: alone} if alone else {})
        game = next(g for g in match.games if g.id == game_id)
        self.looked_at[game_id] = (trio.current_time(), game)
        self.looked_at.move_to_end(game_id)
        while len(self.looked_at) > ENDED_GAMES:
            self.looked_at.popitem(last=False)
        return game

    def played_last(self, n: int) -> list[GameSession]:
        """The ``n`` games in progress here whose last event came last, at most
        BOARDS_EACH of any one player's (an open seat's: its match's creator's), the
        newest first: the web view's live boards. Games started and left, a day's turn
        each, give way to those being played, however new they are, and one player
        playing many games at once fills a few boards, not all; the boards keep their
        order as their games go on."""
        playing = (g for g in self.games.values() if g.status is Status.IN_PROGRESS)
        told = [g for g in playing if g.audience.events]
        told.sort(key=lambda g: g.audience.events[-1].time, reverse=True)
        chosen: list[GameSession] = []
        shown: Counter[str] = Counter()
        for game in told:
            if len(chosen) == n:
                break
            seats = game.match.seats
            players = {f"player:{s.player_id}" for s in seats if s.player_id is not None}
            players |= self.roster.seat_keys(game.match.id)
            if all(shown[p] < BOARDS_EACH for p in players):
                chosen.append(game)
                shown.update(players)
        return sorted(chosen, key=lambda g: g.audience.events[0].time, reverse=True)

    async def glance(self, summaries: list[api.GameSummary]) -> list[GameSession]:
        """Games other instances run, as their journals' last entries have them now: boards
        to look at (the web view's front page), in two store reads."""
        numbers = {s.game_id: (s.game_number, s.status) for s in summaries}
        out = []
        for game_id, row, entries in await self.runtime.reader.glances(list(numbers)):
            number, status = numbers[game_id]
            match = restore_match(self, row, [(game_id, number, "", entries, status)], new_id)
            out.append(match.games[0])
        return out

    async def _load_ended(self, game_id: str) -> GameSession:
        """An ended game's match, read back from the store into the ``ended`` cache."""
        reader = self.runtime.reader
        missing = ArbiterError(Code.NOT_FOUND, f"no game {quote(game_id)}")
        if len(game_id) > 64:
            raise missing
        match_id = await reader.match_of(game_id)
        row = await reader.match(match_id) if match_id is not None else None
        if row is None:
            raise missing
        # each game's last entry only: its state (a replay reads its events on demand)
        games = await reader.match_ends(match_id)
        found = self.games.get(game_id) or self.ended.get(game_id)  # loaded meanwhile
        if found is not None:
            return found
        pair = await self._read_alone(row)
        match = restore_match(self, row, games, new_id, pair)
        if any(g.status not in (Status.FINISHED, Status.ABORTED) for g in match.games):
            raise missing  # not ended, and not run here
        if pair is None or pair.over:  # (else read again once its partner has ended)
            for g in match.games:
                self._keep_ended(g)
        return next(g for g in match.games if g.id == game_id)

    async def _read_alone(self, row: dict) -> Lockstep | None:
        """The pair of a ladder match read back alone, to be looked at (None: no pair).
        While the pair's other match still plays on another instance the pair waits for
        it and is never over, so its seed stays secret: it would tell every coming throw
        of the other game. (Alone on its store, a pair's ended match stays in memory until
        the pair is over, see _match_over: one read back here has no partner playing.)"""
        pair_id = row["options"].get("pair_id", "")
        if not pair_id:
            return None
        playing = await self.owner.pair_playing(pair_id)
        return Lockstep(pair_id, 2 if playing else 1)

    def _keep_ended(self, game: GameSession) -> None:
        self.ended[game.id] = game
        self.ended.move_to_end(game.id)
        while len(self.ended) > ENDED_GAMES:
            _, old = self.ended.popitem(last=False)
            if not any(g.id in self.ended for g in old.match.games):
                old.match.release()

    def match_over(self, match: MatchSession) -> None:
        """The match's last game has ended: it leaves memory for the bounded caches (with
        the other match of its duplicate pair, once that has ended too)."""
        if match.pair is not None and not match.pair.over:
            self.held.setdefault(match.pair_id, []).append(match)
            return
        for ended in (*self.held.pop(match.pair_id, ()), match):
            self.matches.pop(ended.id, None)
            self.roster.match_ended(ended.id)
            for game in ended.games:
                if self.games.pop(game.id, None) is not None:
                    self.ended_counts[game.status] += 1
                self._keep_ended(game)

    def publish(self, game: GameSession, *, new: bool = False, tell: bool = True) -> None:
        """Show the game's (``new``: a new game's) summary to ListGames (see catalogue),
        here and (``tell``) on the other instances."""
        summary = summary_pb(game.card, game.snapshot())
        catalogue = self.runtime.catalogue
        if new:
            catalogue.add(game.id, summary)
        else:
            catalogue.publish(game.id, summary)
        if tell:
            self.owner.tell_summary(game.id, summary, new)

    def game_counts(self) -> dict[str, int]:
        """How many games are in each status (for /metrics)."""
        counts = {s.name.lower(): self.ended_counts[s] for s in Status}
        for game in self.games.values():
            counts[game.status.name.lower()] += 1
        return counts

    def shutdown(self) -> None:
        """Every game stream ends with SERVER_SHUTDOWN."""
        for game in self.games.values():
            game.close_streams(EventType.SERVER_SHUTDOWN)

    # -- the Host of sessions ---------------------------------------------------------------
    def journal(self, game: GameSession, *events: Event) -> Commit:
        writes = [statements.append_event(game, event) for event in events]
        return self.runtime.writer.submit(*writes, fence=self.owner.fence(game.match))

    async def load_events(self, game_id: str, rules: Variant, tail: int = 0) -> list[Event]:
        return await self.runtime.reader.events(game_id, rules, tail)

    async def game_created(self, game: GameSession) -> None:
        fence = self.owner.fence(game.match)
        await self.runtime.writer.commit(statements.add_game(game), fence=fence)
        self._game_added(game)

    def _game_added(self, game: GameSession) -> None:
        self.games[game.id] = game
        self.publish(game, new=True)
        self.notices.notify(game, Note.GAME_ASSIGNED)

    def game_started(self, game: GameSession) -> None:
        self.publish(game)

    async def game_over(self, game: GameSession) -> None:
        writes = [statements.update_game(game), *self.ladders.game_over(game)]
        await self.runtime.writer.commit(*writes, fence=self.owner.fence(game.match))
        self.publish(game)
        self.notices.notify(game, Note.GAME_OVER)
        self.ladders.counted(game)
        if game is game.match.current:  # the match is over
            self.match_over(game.match)
