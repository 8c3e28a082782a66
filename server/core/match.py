"""One match as a trio task: its games one after another, to ``target`` points, from
the seats' arrival to the last game's end; the call-off and the stop when another instance
takes it over. Here too: its two Seats, what CreateMatch asks for (MatchSpec), and what a
match needs from the server that runs it (Host)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import trio

from nardy import Match, opening_throw
from nardy.dice import Dice, seeded_server_seed
from nardy.match import GameOptions, Opening
from nardy.variant import Variant
from nardy.wire import DEFAULT_START_TIMEOUT_MS, Terms
from server.core.clock import Arrivals, Clock
from server.core.game import GameCard
from server.core.journal import Event, Status
from server.core.lockstep import Lockstep
from server.core.metrics import Metrics
from server.core.principals import Principal
from server.core.session import GameSession
from server.core.writer import Commit


@dataclass(frozen=True)
class Seat:
    """One of a match's two players."""

    index: int  # 0: first player, 1: second player (CreateMatch order)
    name: str
    bot: bool = False
    player_id: str | None = None  # a registered player, or None for an open seat
    owner: str = ""


class Host(Protocol):
    """What a match needs from the server that runs it (the arbiter implements it)."""

    arrivals: Arrivals  # plays stamped at the edge, not yet judged
    metrics: Metrics  # turns, turn latency, clock lateness

    def journal(self, game: GameSession, *events: Event) -> Commit:
        """Queue ``events`` for the journal (one group: all durable or none); the commit
        says when."""
        ...

    async def load_events(self, game_id: str, rules: Variant, tail: int = 0) -> list[Event]:
        """The journaled events of a game, in order (``tail``: the last ones only)."""
        ...

    async def game_created(self, game: GameSession) -> None:
        """A new game of a match exists (store it, tell the seats)."""

    def game_started(self, game: GameSession) -> None:
        """A game's GAME_STARTED is told: its colours may be shown."""

    async def game_over(self, game: GameSession) -> None:
        """A game ended (store its result, tell the seats and its ladder)."""


@dataclass(frozen=True)
class MatchSpec:
    """What CreateMatch asks for, already read from the request."""

    options: GameOptions
    target: int
    first: tuple[str, str]  # (registered player name or "", display name)
    second: tuple[str, str]
    seed: int | None = None
    terms: Terms = Terms()  # clocks, forced plays, the illegal-play limit
    start_timeout_ms: int = DEFAULT_START_TIMEOUT_MS
    start_position: str = ""
    dice_script: tuple[int, ...] = ()
    ladder: str = ""
    pair_id: str = ""
    first_seat_white: bool | None = None  # None: the opening throw decides
    server_seed: bytes | None = None  # a duplicate pair's shared seed (None: a fresh one)
    pair: Lockstep | None = None  # the pair whose games throw in lockstep


class MatchSession:
    """A match of games between two seats, to ``target`` points."""

    def __init__(
        self,
        host: Host,
        match_id: str,
        options: GameOptions,
        target: int,
        seats: tuple[Seat, Seat],
        *,
        turn_time_ms: int,
        time_bank_ms: int,
        auto_play_forced: bool,
        illegal_play_limit: int = 0,
        ladder: str = "",
        pair_id: str = "",
        first_seat_white: bool | None = None,
        challenged: str | None = None,
        seed: int | None = None,
        script: tuple[int, ...] = (),
        server_seed: bytes | None = None,
        pair: Lockstep | None = None,
        start: Any,  # a position of the match's variant, or None for its start
        start_timeout: float,
        new_id: Callable[[], str],
    ) -> None:
        self.host = host
        self.id = match_id
        self.options = options
        self.match = Match(target, options)
        self.seats = seats
        self.turn_time_ms = turn_time_ms
        self.time_bank_ms = time_bank_ms
        self.auto_play_forced = auto_play_forced
        self.illegal_play_limit = illegal_play_limit
        self.ladder = ladder
        self.pair_id = pair_id
        self.first_seat_white = first_seat_white
        self.challenged = challenged  # a player who has not yet accepted this challenge
        self.called_off = ""  # why the operator (or a declined challenge) ended the match
        self._scope: trio.CancelScope | None = None
        self._arrival: trio.CancelScope | None = None  # while a game waits for its seats
        self._halted = False  # another instance runs it now (see halt)
        self.settled = trio.Event()  # a call_off has written all it writes
        self._stopped = trio.Event()  # the match task has ended
        self.seed = seed  # a public seed (replays, tests): every throw is known in advance
        self.script = script  # scripted dice of the first game
        self.pair = pair
        # Set up by the creator (chosen dice, seed, start or colour): never rated.
        self.seeded = (
            seed is not None or bool(script) or start is not None or first_seat_white is not None
        )
        # Counts for ratings and standings: two registered players, nothing set up.
        self.rated = not self.seeded and all(s.player_id for s in seats)
        self.start = start
        self.start_timeout = start_timeout
        self.new_id = new_id
        self.games: list[GameSession] = [GameSession(self, new_id(), 1, server_seed)]
        if pair is not None:
            pair.add(self.games[0])

    @property
    def current(self) -> GameSession:
        return self.games[-1]

    def release(self) -> None:
        """The arbiter holds none of this ended match's games any more: the match lets go
        of them, so that reference counting frees it and them (each game refers to its
        match) rather than the cyclic collector, which looks at long-lived objects only
        now and then (server/collector.py). A game still held elsewhere keeps its match."""
        self.games = []

    @property
    def decided(self) -> bool:
        """No game of this match is left to play: it is over or called off, or the result
        of its game in play ends it (before the match task has recorded that result)."""
        if self.match.over or self.called_off:
            return True
        game = self.current
        result, white = game.result, game.white_seat
        if result is None or white is None:
            return False
        winner = white if result.winner == 0 else 1 - white
        return self.match.scores[winner] + result.points >= self.match.target

    @property
    def stopping(self) -> bool:
        """Called off, or taken over by another instance: no new turn may open."""
        return bool(self.called_off) or self._halted

    def fresh_clock(self) -> Clock:
        """A side's clock at the start of a game (and of a turn resumed after a restart)."""
        return Clock(self.turn_time_ms, self.time_bank_ms)

    def planned_white(self) -> int | None:
        """The seat that will play white in the next game, if no opening throw decides it."""
        if not self.match.games and self.first_seat_white is not None:
            return 0 if self.first_seat_white else 1
        return self.match.alternating_white()

    def scores_by_colour(self, game: GameSession) -> tuple[int, int]:
        s = self.match.scores
        white = game.known_white
        if white is None:
            return s[0], s[1]
        return s[white], s[1 - white]

    def dice(self, number: int, server_seed: bytes | None) -> Dice:
        """The dice of the match's game ``number``: a public seed's, the pair's
        (``server_seed``), or a fresh secret server seed's."""
        if self.seed is not None:
            server_seed = seeded_server_seed(self.seed, number)
        return Dice(server_seed, self.script if number == 1 else ())

    def card(self, game_id: str, number: int, dice: Dice) -> GameCard:
        """What never changes in the match's game ``number``, thrown with ``dice``."""
        terms = Terms(
            self.turn_time_ms, self.time_bank_ms, self.auto_play_forced, self.illegal_play_limit
        )
        return GameCard(
            game_id,
            self.id,
            number,
            self.options,
            terms,
            self.seats,
            self.match.target,
            self.seeded,
            self.rated,
            self.ladder,
            dice.commitment,
            public_seed=self.seed is not None,
            scripted_dice=len(dice.script),
        )

    def seat_index(self, player_id: str | None) -> int:
        return next(s.index for s in self.seats if s.player_id == player_id)

    def seat_in(self, principal: Principal | None) -> int | None:
        """The seat ``principal`` holds in this match, or None."""
        if principal is None:
            return None
        if principal.match_id is not None:
            return principal.seat if principal.match_id == self.id else None
        if principal.player_id == self.challenged:
            return None  # not seated until the challenge is accepted
        for seat in self.seats:
            if seat.player_id == principal.player_id:
                return seat.index
        return None

    async def call_off(self, why: str) -> None:
        """End the match now: its current game is aborted (voided) with ``why``."""
        self.called_off = why
        try:
            game = self.current
            game.open_turn = False
            if self._scope is not None:  # stop the match's task first: one writer per game
                self._scope.cancel()
                await self._stopped.wait()
            if game.status in (Status.WAITING, Status.IN_PROGRESS):
                game.result = None
                await game.abort(why)
                await self.host.game_over(game)
        finally:
            self.settled.set()

    def accepted(self) -> None:
        """Its challenge was accepted: both seats have the start timeout again to come
        (the challenge may have waited most of it)."""
        if self._arrival is not None:
            self._arrival.deadline = trio.current_time() + self.start_timeout

    def halt(self) -> None:
        """Stop the match's task where it is, writing nothing more: another instance took
        it over (its writes would be refused anyway, see server/cluster.py)."""
        self._halted = True
        self.current.unseal()
        if self._scope is not None:
            self._scope.cancel()

    async def run(self) -> None:
        try:
            with trio.CancelScope() as self._scope:
                if self.called_off or self._halted:
                    return
                await self._run()
        finally:
            self._stopped.set()

    async def _run(self) -> None:
        while True:
            game = self.current
            if game.status is Status.IN_PROGRESS:  # restored after a restart
                white = game.white_seat
                assert white is not None
                result = await game.resume()
            else:
                audience = game.audience
                with trio.move_on_after(self.start_timeout) as self._arrival:
                    await audience.all_present.wait()
                self._arrival = None
                if audience.all_present.is_set():
                    game.fix_client_seeds()
                    await game.throw_gate()
                    opening = partial(opening_throw, game.roller.die)
                    white, throws = game.planned_white, []
                    if white is None:
                        white, throws = self.match.next_white(opening)
                    if not throws and game.options.opening is Opening.USE_OPENING_DICE:
                        # colours known already (alternating, chosen): the throw is still
                        # made, for white's first roll, never a double (RULES.md §2, §8)
                        throws = opening()
                    result = await game.run(white, throws)
                elif (self.ladder or game.number > 1) and len(audience.present) == 1:
                    # a ladder bot learns its opponent before it comes: were a seat that
                    # does not come let off, a bot would play only the opponents it likes;
                    # and a match once begun is left, not escaped, by staying away
                    white = 0 if game.planned_white is None else game.planned_white
                    result = game.absent_loses(white)
                else:
                    absent = " and ".join(
                        ("first", "second")[seat] for seat in (0, 1) if seat not in audience.present
                    )
                    await game.abort(f"the {absent} seat did not arrive in time")
                    await self.host.game_over(game)
                    return
            self.match.record(white, result)
            if not self.match.over:
                nxt = GameSession(self, self.new_id(), game.number + 1)
                self.games.append(nxt)
                game.next_game_id = nxt.id
                await self.host.game_created(nxt)
            await game.finish()
            await self.host.game_over(game)
            if self.match.over:
                return
