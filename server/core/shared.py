"""Several arbiter instances on one PostgreSQL, as the core's owner (server.core.ownership):
leases and their fences on every journal write, taking over the matches of instances that
stopped, sending callers where a game runs, news between instances, the players and games
other instances hold, and the leader that pairs ladder games (the store's side of it:
server/core/cluster.py)."""

from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import trio

from nardy.v1 import arbiter_pb2 as api
from server.core.journal import Status
from server.core.ladders import Ladders
from server.core.lockstep import Lockstep
from server.core.notes import Note, PlayerNote, RemoteCard, colour, seats_of
from server.core.notices import Notices
from server.core.ownership import Sole
from server.core.principals import Player, Principal
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.store import StoreError, Write
from server.core.tables import Tables
from server.errors import ArbiterError, Code, Elsewhere

if TYPE_CHECKING:
    from server.core.cluster import Beat, Cluster, Place
    from server.core.match import MatchSession
    from server.core.session import GameSession

log = logging.getLogger("nardy.server")

UNFINISHED_KEPT_S = 1.0  # the games not yet over, read once for every caller this long


class Shared(Sole):
    """One of several instances on one PostgreSQL (server/core/cluster.py)."""

    books_shared = True
    issues_every_token = False  # the others issue tokens too
    settings_shared = True  # another instance may store a retention schedule

    def __init__(self, runtime: Runtime, cluster: Cluster) -> None:
        super().__init__(runtime)
        self.cluster = cluster
        self.leases: dict[str, int] = {}  # match id -> epoch of the lease held
        self.leading = False
        self._creating: set[str] = set()  # matches being created here
        self._to_adopt: set[str] = set()  # leases taken, their matches not yet running
        self._beat_now = trio.Event()  # an early heartbeat: a match was handed to us
        self._players_missed = False  # news missed: a token reissued elsewhere, maybe
        self._unfinished: tuple[float, list[tuple[str, dict]]] | None = None  # (read at, games)

    def bind(self, roster: Roster, tables: Tables, ladders: Ladders, notices: Notices) -> None:
        """The parts this owner acts on (made after it: each of them asks it)."""
        self.roster, self.tables, self.ladders, self.notices = roster, tables, ladders, notices

    @property
    def id(self) -> str:
        return self.cluster.id

    # -- leases -----------------------------------------------------------------------
    def fence(self, match: MatchSession) -> Write | None:
        return self.cluster.fence(match.id, self.leases.get(match.id, -1))

    def claim(self, match_id: str, group: str) -> list[Write]:
        return [self.cluster.lease(match_id, group)]

    def release(self, match_id: str) -> list[Write]:
        return [self.cluster.release(match_id)]

    def opened(self, match_id: str) -> None:
        self.leases[match_id] = 1

    def ended(self, match_id: str) -> None:
        self.leases.pop(match_id, None)

    def owns(self, match_id: str) -> bool:
        return match_id in self.leases

    def holds(self, match_id: str) -> bool:
        return match_id in self.leases

    @contextlib.contextmanager
    def creating(self, match_ids: set[str]) -> Iterator[None]:
        self._creating |= match_ids
        try:
            yield
        finally:
            self._creating -= match_ids

    async def leased(self) -> set[str]:
        return {row[0] for row in await self.runtime.store.query("SELECT match_id FROM leases")}

    # -- what other instances hold --------------------------------------------------------
    async def learn_players(self, condition: str, *params) -> list[Player]:
        roster = self.roster
        found = []
        for player_id, name, bot, digest, owner in await self.runtime.reader.players_where(
            condition, *params
        ):
            if roster.tokens.get(digest) != Principal(player_id=player_id):
                roster.forget_tokens(player_id)  # its token was reissued elsewhere
                roster.add(Player(player_id, name, bool(bot), owner), digest)
            found.append(roster.players[player_id])
        return found

    async def _place(self, sql: str, key: str) -> Place | None:
        return self.cluster.place(await self.runtime.store.query(sql, (key,)))

    async def running_elsewhere(self, game_id: str, *, read: bool) -> GameSession | None:
        if len(game_id) > 64:
            return None
        place = await self._place(self.cluster.PLACE_OF_GAME, game_id)
        if place is None or place.owner is None:
            return None  # over (or unknown): read back as an ended game
        if not read:
            self._elsewhere(place)
        return await self.tables.read_game(place.match_id, game_id)

    async def match_elsewhere(self, match_id: str) -> None:
        place = await self._place(self.cluster.PLACE_OF_MATCH, match_id)
        if place is not None and place.owner is not None and not self._ended_here(place):
            self._elsewhere(place)

    def _ended_here(self, place: Place) -> bool:
        """A match that has just ended here: out of the tables, its lease given up by the
        write of its end, not yet made."""
        return place.owner == self.cluster.id and self.holds(place.match_id)

    def _elsewhere(self, place: Place) -> None:
        if place.owner == self.cluster.id or not place.live or not place.address:
            raise ArbiterError(
                Code.UNAVAILABLE,
                "this game's instance stopped and another is taking it over; retry in a moment",
            )
        raise Elsewhere(
            place.address, f"this game is run by the instance at {place.address}; call it there"
        )

    async def pair_playing(self, pair_id: str) -> bool:
        return await self.runtime.reader.pair_playing(pair_id)

    async def _unfinished_games(self) -> list[tuple[str, dict]]:
        """Every game not yet over with its match row, read at most once a second for all
        callers (player streams and challenge lists, on any instance, ask it), and afresh
        after news of a new game."""
        now = trio.current_time()
        if self._unfinished is None or now - self._unfinished[0] >= UNFINISHED_KEPT_S:
            self._unfinished = (now, await self.runtime.reader.unfinished_games())
        return self._unfinished[1]

    async def games_elsewhere(self, principal: Principal) -> list[PlayerNote]:
        notes = []
        for game_id, row in await self._unfinished_games():
            if game_id in self.tables.games:
                continue
            seats = seats_of(row["seats"])
            card = RemoteCard(game_id, row["id"], seats)
            challenged = row["options"].get("challenged")
            if principal.match_id is not None:
                if principal.match_id == row["id"] and principal.seat is not None:
                    notes.append(PlayerNote(Note.GAME_ASSIGNED, card, principal.seat))
                continue
            for seat in seats:
                if seat.player_id and seat.player_id == principal.player_id:
                    kind = Note.CHALLENGE if seat.player_id == challenged else Note.GAME_ASSIGNED
                    notes.append(PlayerNote(kind, card, seat.index))
        return notes

    async def challenges_elsewhere(self, principal: Principal) -> list[MatchSession]:
        out = []
        for note in await self.games_elsewhere(principal):
            if note.type is not Note.CHALLENGE:
                continue
            card = note.game
            game = await self.tables.read_game(card.match_id, card.game_id)  # (as it is now)
            waiting = game is not None and game.status is Status.WAITING
            if waiting and game.match.challenged == principal.player_id:
                out.append(game.match)
        return out

    # -- telling the others -----------------------------------------------------------------
    def tell(self, kind: str, **fields) -> None:
        self.runtime.writer.submit(self.cluster.news(kind, **fields))

    def tell_note(self, game: GameSession, kind: Note) -> None:
        seats = [
            {"name": s.name, "bot": s.bot, "player_id": s.player_id, "owner": s.owner}
            for s in game.match.seats
        ]
        self.tell(
            "note",
            n=int(kind),
            g=game.id,
            m=game.match.id,
            seats=seats,
            w=game.known_white,
            c=game.match.challenged,
        )

    def tell_summary(self, game_id: str, summary: api.GameSummary, new: bool) -> None:
        data = base64.b64encode(summary.SerializeToString()).decode()
        self.tell("summary", g=game_id, s=data, new=new)

    async def place_pair(self, pair_id: str, match_ids: list[str]) -> None:
        try:
            rows = await self.runtime.store.query(self.cluster.LEAST_LOADED)
            if not rows or rows[0][0] == self.cluster.id:
                return
            await self.runtime.writer.commit(self.cluster.hand_over(pair_id, rows[0][0]))
        except StoreError as e:
            log.warning("pair %s stays here: %s", pair_id, e.message)
            return
        for match_id in match_ids:
            self.tables.lose(match_id, f"handed to instance {rows[0][0]}")
        self.tell("adopt", to=rows[0][0])

    def _news(self, news: dict) -> None:
        """News from another instance (see Cluster.listen)."""
        kind = news.get("k")
        if (kind == "summary" and news.get("new")) or (
            kind == "note" and Note(news["n"]) is not Note.GAME_OVER
        ):
            self._unfinished = None  # (a game new to the lists, or its seats told of it)
        if kind == "summary":
            summary = api.GameSummary.FromString(base64.b64decode(news["s"]))
            if news["g"] not in self.tables.games:
                if news.get("new"):
                    self.runtime.catalogue.add(news["g"], summary)
                else:
                    self.runtime.catalogue.publish(news["g"], summary)
        elif kind == "note":
            seats = seats_of(news["seats"])
            card = RemoteCard(news["g"], news["m"], seats)
            note = Note(news["n"])
            if note is Note.CHALLENGE:
                index = next(s.index for s in seats if s.player_id == news["c"])
                self.notices.to_player(
                    news["c"], PlayerNote(note, card, index, colour(index, news["w"]))
                )
            else:
                self.notices.deliver(news["m"], seats, news["c"], note, card=card, white=news["w"])
        elif kind == "ladder":
            self.ladders.news(news["l"])
        elif kind == "token":
            self.roster.forget_tokens(news["p"])
        elif kind == "issued":
            self.roster.heard_issued(news["d"])
        elif kind == "adopt" and news["to"] == self.cluster.id:
            self._beat_now.set()  # a match was handed to us: take it now
        elif kind == "listening":  # (news missed until now; and the others may have too)
            self.tell("hello")
            self._tell_games()
            self.ladders.reload_soon()  # (the leader: members and results missed)
            self._players_missed = True  # (read again at once, by the heartbeat)
            self._beat_now.set()
        elif kind == "hello":  # an instance that may have missed news
            self._tell_games()

    def _tell_games(self) -> None:
        """Tell the other instances the games running here, as if new, and again the
        players of those waiting for them (news missed may have been their only word)."""
        for game in list(self.tables.games.values()):
            if game.status in (Status.WAITING, Status.IN_PROGRESS):
                self.tables.publish(game, new=True)
            if game.status is Status.WAITING:
                self.tell_note(game, Note.GAME_ASSIGNED)
                if game.match.challenged is not None:
                    self.tell_note(game, Note.CHALLENGE)

    # -- the heartbeat ------------------------------------------------------------------
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Renew this instance's lease, take over the matches of instances that stopped,
        stop the matches it lost, lead the ladders while it holds the lock."""
        cluster = self.cluster
        cluster.listen(self._news)
        first = True
        while not cluster.closed:
            before = dict(self.leases)
            try:
                beat = await cluster.beat(claim=not self.runtime.closing)
            except StoreError as e:
                log.warning("%s", e.message)
            else:
                await self._after_beat(beat, before)
            if self._players_missed:
                await self._players_again()
            if first:  # started once the games orphaned by a stopped instance run here
                task_status.started()
                first = False
            with trio.move_on_after(cluster.interval_s):
                await self._beat_now.wait()
            self._beat_now = trio.Event()

    async def _players_again(self) -> None:
        """Every player read again from the store after news may have been missed: a token
        reissued on another instance meanwhile stops working here too (learn_players)."""
        try:
            await self.learn_players("TRUE")
        except StoreError as e:
            log.warning("players not read again yet: %s", e.message)
        else:
            self._players_missed = False

    async def _after_beat(self, beat: Beat, before: dict[str, int]) -> None:
        tables = self.tables
        for match_id, epoch in before.items():
            if beat.held.get(match_id) != epoch and self.leases.get(match_id) == epoch:
                tables.lose(match_id)
        for match_id, epoch in beat.held.items():  # claimed now, or handed to us
            new = match_id not in before and match_id not in self.leases
            if new and match_id not in self._creating and match_id not in tables.matches:
                self.leases[match_id] = epoch
                self._to_adopt.add(match_id)
                log.info("match %s: lease taken (epoch %d)", match_id, epoch)
        todo = [m for m in self._to_adopt if m in self.leases and m not in tables.matches]
        self._to_adopt = set(todo)  # kept until adopted (a failed read is tried again)
        try:
            await self._adopt(todo)
        except (StoreError, ValueError, KeyError, TypeError, IndexError) as e:
            log.error("matches not taken over yet: %r", e)
        else:
            self._to_adopt.difference_update(todo)
        if beat.leader != self.leading:
            self.leading = beat.leader
            log.info(
                "instance %s %s the ladders",
                self.cluster.id,
                "leads" if beat.leader else "no longer leads",
            )
            await self.ladders.lead(self.leading)

    async def _adopt(self, match_ids: list[str]) -> None:
        """Run matches whose leases this instance just took, from their journal. All are
        read before any runs: a duplicate pair's two games throw in lockstep, so neither
        may start throwing before the other is there."""
        pairs: dict[str, Lockstep] = {}
        read = []
        for match_id in match_ids:
            row = await self.runtime.reader.match(match_id)
            if row is not None:
                read.append(await self.tables.read_match(row, pairs))
        for match in read:
            if match.ladder and match.ladder not in self.ladders.by_name:
                await self.ladders.reload(match.ladder)  # its result is counted here
            if match.id in self.leases and match.id not in self.tables.matches:
                await self.tables.settle_ended(match)
                await self.tables.install(match)
                if match.ladder:
                    self.ladders.reload_soon()
