"""What callers do at a game: watch it (as a seat or a spectator), play, resign, and the
operator's void. Each finds the game (server.core.tables) and checks the caller's seat."""

from __future__ import annotations

import logging
from collections.abc import Callable

from nardy import GameResult
from nardy.dice import check_client_seed
from server.core import statements
from server.core.audience import Sink
from server.core.clock import Arrival
from server.core.journal import Status
from server.core.judge import Accepted
from server.core.ladders import Ladders
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.session import GameSession
from server.core.store import LeaseLost
from server.core.tables import Tables
from server.errors import ArbiterError, Code

log = logging.getLogger("nardy.server")


class Actions:
    def __init__(self, runtime: Runtime, roster: Roster, tables: Tables, ladders: Ladders) -> None:
        self.runtime = runtime
        self.roster = roster
        self.tables = tables
        self.ladders = ladders

    async def _seated(self, digest: str | None, game_id: str) -> tuple[GameSession, int]:
        principal = self.roster.authenticate(digest)
        game = await self.tables.game(game_id)
        seat = game.match.seat_in(principal)
        if seat is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "you hold no seat in this game")
        return game, seat

    async def viewer(
        self, digest: str | None, game_id: str, *, read: bool = False
    ) -> tuple[GameSession, int | None]:
        """Whose view of a game a caller gets: (game, seat), seat None for a spectator
        (``read``: a game another instance runs is read from the store, for GetGame).

        No token: a spectator. A token must hold a seat in the game: a bot that sent the
        wrong token is told so instead of silently getting a spectator's view, which never
        carries legal plays.
        """
        principal = self.roster.authenticate(digest, required=False)  # (first)
        game = await self.tables.game(game_id, read=read)
        seat = game.match.seat_in(principal)
        if principal is not None and seat is None and not principal.admin:
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "your token holds no seat in this game; send no token to watch it",
            )
        return game, seat

    async def subscribe(
        self,
        digest: str | None,
        game_id: str,
        after_seq: int,
        from_start: bool,
        sink_for: Callable[[GameSession, int | None, bool], Sink],
        client_seed: str = "",
        own_turns: bool = False,
    ) -> tuple[GameSession, int | None, list, bool]:
        """Subscribe the sink of the caller's view (``sink_for(game, seat or None, own
        turns)``): (game, seat or None, events to send first, whether live).

        A seat may add its ``client_seed`` to the game's dice until the game starts, and
        ask for its ``own_turns`` only (EVENT_FILTER_OWN_TURNS).
        """
        try:
            check_client_seed(client_seed)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, str(e)) from None
        game, seat = await self.viewer(digest, game_id)
        if own_turns and seat is None and digest:  # (the operator's token)
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "your token holds no seat in this game: Play and EVENT_FILTER_OWN_TURNS are "
                "a seat's",
            )
        if own_turns and seat is None:  # (a spectator's)
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "EVENT_FILTER_OWN_TURNS is for a seat's stream (its token)"
            )
        if self.runtime.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        if seat is not None:
            game.offer_client_seed(seat, client_seed)
        sink = sink_for(game, seat, own_turns)
        backlog, live = await game.subscribe(sink, seat, after_seq, from_start, own_turns)
        return game, seat, backlog, live

    def unsubscribe(self, game_id: str, sink: Sink, seat: int | None, *, last: bool = True) -> None:
        game = self.tables.games.get(game_id)
        if game is not None:
            game.audience.unsubscribe(sink, seat, last=last)

    async def submit_play(
        self,
        digest: str | None,
        game_id: str,
        turn_id: int,
        notation: str | None,
        end: str | None,
        arrival: Arrival | None = None,
    ) -> Accepted:
        """Judge a play that reached the edge at ``arrival`` (see server.core.clock);
        answered once it is durable."""
        try:
            game, seat = await self._seated(digest, game_id)
            try:
                return await game.submit(seat, turn_id, notation, end, arrival)
            except LeaseLost:
                await self._lost_while_acting(game)
                raise
        finally:
            if arrival is not None and self.runtime.arrivals.settle(arrival):
                self.arrival_settled(arrival)

    def turn_sent(self, game_id: str, turn_id: int, at: float) -> None:
        """The edge handed a seat's stream its turn at ``at`` (server.core.clock)."""
        game = self.tables.games.get(game_id)
        if game is not None:
            game.turn_sent(turn_id, at)

    def arrival_settled(self, arrival: Arrival) -> None:
        """A stamped play was judged or dropped while its game's turn, past its deadline,
        was waiting for it: let the turn decide."""
        game = self.tables.games.get(arrival.game_id)
        if game is not None:
            game.arrival_settled()

    async def resign(self, digest: str | None, game_id: str) -> GameResult:
        game, seat = await self._seated(digest, game_id)
        try:
            return await game.resign(seat)
        except LeaseLost:
            await self._lost_while_acting(game)
            raise

    async def _lost_while_acting(self, game: GameSession) -> None:
        """A play or resignation met the fence: the game was taken over. Stop it here and
        answer with where it lives now (Elsewhere), if that is known yet."""
        self.tables.lose(game.match.id)
        await self.tables.game(game.id)

    async def void_game(self, digest: str | None, game_id: str) -> GameSession:
        """Void a game: it ends (or stays ended) without a result that counts anywhere. A
        finished game of a match voids the match: every game of it (the one being played
        is called off), since its score, and every game played on that score, stood on it."""
        self.roster.require_operator(digest)
        tables = self.tables
        game = await tables.game(game_id)
        match = game.match
        games = match.games or [game]  # (every game of a match is held while one is)
        if games[-1].status in (Status.WAITING, Status.IN_PROGRESS):
            await match.call_off("voided by the operator")
        voided = [] if game.status is Status.ABORTED else games  # (void already)
        finished = [g for g in voided if g.status is Status.FINISHED]
        writes = []
        for g in finished:
            g.status = Status.ABORTED
            writes += [statements.update_game(g), *await self.ladders.voided(g)]
        if writes:  # the match's games voided together, in one transaction
            await self.runtime.writer.commit(*writes)
        for g in finished:
            if g.id not in tables.games:  # counted among the ended ones already
                tables.ended_counts[Status.FINISHED] -= 1
                tables.ended_counts[Status.ABORTED] += 1
            tables.publish(g)
        log.info("game %s voided by the operator", game.id)
        return game
