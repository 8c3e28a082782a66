"""A game as it stands and as it is told: its card, the seats' colours, its state
(position, turn, dice, clocks, result) as a Snapshot, and its events, journaled through the
Host and only then told to its audience. GameSession (server.core.session) plays it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import trio

from nardy import Color, GameResult, Termination
from nardy.match import GameOptions
from nardy.variant import GamePlay as Play
from nardy.variant import variant as get_variant
from nardy.wire import Terms
from server.core.audience import Audience, Sink
from server.core.journal import Event, EventType, Snapshot, Status
from server.core.judge import Judge
from server.core.writer import Commit

if TYPE_CHECKING:
    from server.core.match import MatchSession, Seat

log = logging.getLogger("nardy.server")


@dataclass(frozen=True)
class GameCard:
    """What never changes in a game: ids, options, seats. Safe to read from any thread."""

    game_id: str
    match_id: str
    number: int
    options: GameOptions
    terms: Terms
    seats: tuple[Seat, Seat]  # first and second player (CreateMatch order)
    target: int
    seeded: bool
    rated: bool
    ladder: str
    dice_commitment: str  # hex SHA-256 of the game's server seed (provably fair dice)
    public_seed: bool = False  # the dice come from a seed the creator chose
    scripted_dice: int = 0  # the game's first dice were chosen by its creator
    # server.core.views' cache of the encoded fields that never change (not part of the card)
    views: dict = field(default_factory=dict, compare=False, repr=False)

    def color_of(self, seat: int | None, white_seat: int | None) -> Color | None:
        """The colour of ``seat`` when ``white_seat`` plays white (None if either unknown)."""
        if seat is None or white_seat is None:
            return None
        return Color.WHITE if seat == white_seat else Color.BLACK


class Game:
    """One game of a match as it stands (its state, colours and dice) and as it is told
    (its events, journaled, then told to its audience)."""

    def __init__(
        self, match: MatchSession, game_id: str, number: int, server_seed: bytes | None = None
    ) -> None:
        self.match = match
        self.id = game_id
        self.number = number
        self.roller = match.dice(number, server_seed)
        self.client_seeds = ["", ""]  # per seat, fixed when the game starts
        self.options = match.options
        self.variant = get_variant(match.options.variant)
        self.status = Status.WAITING
        self.position = match.start if number == 1 and match.start else self.variant.start()
        self.white_seat: int | None = None  # set when the game starts
        self.card = match.card(game_id, number, self.roller)
        # Known before the start when no opening throw decides (a chosen colour, or later
        # games of a match whose colours alternate).
        self.planned_white: int | None = match.planned_white()
        self.turn_id = 0
        self.dice: tuple[int, ...] = ()
        self.legal: tuple[Play, ...] = ()
        self.clocks = {color: match.fresh_clock() for color in Color}
        self.result: GameResult | None = None
        self.next_game_id = ""
        self.throws: tuple[tuple[int, int], ...] = ()  # the opening throws
        self.audience = Audience(self.card, partial(match.host.load_events, game_id, self.variant))
        self.final: Snapshot | None = None  # an ended game's last told state (see release)
        self.open_turn = False  # the turn was told and awaits its play
        self.ended = trio.Event()  # the game's last event was journaled (or failed to be)
        self.judge = Judge(self.variant, match.illegal_play_limit)
        self.used_ms = {Color.WHITE: 0, Color.BLACK: 0}  # thinking time spent, per side
        self.plays_made = {Color.WHITE: 0, Color.BLACK: 0}

    # -- seats --------------------------------------------------------------------------
    @property
    def known_white(self) -> int | None:
        """The seat that plays white, once that is known (before the start, if planned)."""
        return self.white_seat if self.white_seat is not None else self.planned_white

    def color_of(self, seat: int) -> Color | None:
        return self.card.color_of(seat, self.known_white)

    def seat_of(self, color: Color) -> Seat:
        white = self.known_white
        assert white is not None
        index = white if color is Color.WHITE else 1 - white
        return self.match.seats[index]

    def awaits(self, seat: int) -> bool:
        """True while the turn in progress waits for ``seat``'s play."""
        return (
            self.status is Status.IN_PROGRESS
            and self.result is None
            and self.open_turn
            and self.color_of(seat) is self.position.turn
        )

    # -- the dice -----------------------------------------------------------------------
    def offer_client_seed(self, seat: int, seed: str) -> None:
        """A seat's contribution to the dice, taken until the game starts (not when the
        dice follow a public seed)."""
        if seed and self.status is Status.WAITING and self.match.seed is None:
            self.client_seeds[seat] = self.client_seeds[seat] or seed

    def fix_client_seeds(self) -> None:
        """At the start: the dice take the seats' client seeds (a duplicate pair's take the
        pair's, see GameSession.throw_gate; dice from a public seed take none)."""
        if self.match.pair is None and self.match.seed is None:
            self.roller.client_seeds = tuple(self.client_seeds)

    def revealed_seed(self) -> str:
        """The server seed, hex, once it may be shown: the game (and its pair) has ended."""
        if self.status not in (Status.FINISHED, Status.ABORTED):
            return ""
        if self.match.pair is not None and not self.match.pair.over:
            return ""
        return self.roller.server_seed.hex()

    # -- the state and its events -------------------------------------------------------
    def snapshot(self, *, offer: bool = False) -> Snapshot:
        """The state now. The legal plays show only while the turn is open (told and
        awaiting its play), or in the TURN_STARTED that offers it (``offer``): a turn on
        its way to the journal is offered to nobody yet."""
        now = trio.current_time()
        clocks = self.clocks[Color.WHITE].reading(now), self.clocks[Color.BLACK].reading(now)
        r = self.result
        if r is not None and r.termination in (Termination.TIMEOUT, Termination.ABANDONMENT):
            lost = (0, 0)  # the loser's time ran out
            clocks = (lost, clocks[1]) if r.loser is Color.WHITE else (clocks[0], lost)
        scores = self.match.scores_by_colour(self)
        return Snapshot(
            status=self.status,
            position=self.position,
            dice=self.dice,
            turn_id=self.turn_id,
            clocks=clocks,
            scores=scores,
            match_over=self.match.match.over,
            result=self.result,
            legal=self.legal if self.open_turn or offer else (),
            next_game_id=self.next_game_id,
            refused=(self.judge.refused[Color.WHITE], self.judge.refused[Color.BLACK]),
            white_seat=self.known_white,
            client_seeds=self.roller.client_seeds,
            server_seed=self.revealed_seed(),
            challenge_pending=self.match.challenged is not None and self.status is Status.WAITING,
        )

    def told(self) -> Snapshot:
        """The state as the game's last told event left it, its clocks and refusals read
        now: what a SNAPSHOT, a HEARTBEAT and GetGame show. An event on its way to the
        journal shows nowhere before it is told: not a play or a result a failed write
        would undo, nor a game over before the event that ends it (a client ending its
        stream on it would never see that event), nor the next turn's dice."""
        now = self.snapshot()
        events = self.audience.events
        if not events and self.final is not None:  # ended, all told, and let go: the state
            # as its last event left it (the match's score then, not the match's now), but
            # what an ended game may still become (voided; its seed revealed with its pair's)
            return self.final._replace(status=now.status, server_seed=now.server_seed)
        if not events:  # none told: waiting (or ended and let go before any was told)
            return now if self.audience.released else now._replace(status=Status.WAITING)
        last = events[-1].snapshot
        ended = events[-1].type in (EventType.GAME_FINISHED, EventType.GAME_ABORTED)
        return last._replace(
            clocks=last.clocks if ended else now.clocks,  # (as they stopped: also read back)
            refused=now.refused,
            legal=last.legal if self.open_turn else (),
        )

    def _record(self, kind: EventType, *, offer: bool = False, **extra) -> tuple[Event, Commit]:
        """The next event, queued for the journal; tell it once durable."""
        event = self.next_event(kind, offer=offer, **extra)
        return event, self.match.host.journal(self, event)

    def next_event(self, kind: EventType, *, offer: bool = False, **extra) -> Event:
        """The next event (not yet journaled), with the state now."""
        snap = self.snapshot(offer=offer)
        return Event(len(self.audience.events) + 1, kind, time.time(), snap, **extra)

    async def emit(self, kind: EventType, *, offer: bool = False, **extra) -> Event:
        """Journal an event and, once it is durable, tell every subscriber. The wait is
        shielded: an event on its way to the journal is always seen through."""
        event, commit = self._record(kind, offer=offer, **extra)
        with trio.CancelScope(shield=True):
            await commit.wait()
        self.audience.tell(event)
        return event

    async def subscribe(
        self,
        sink: Sink,
        seat: int | None,
        after_seq: int,
        from_start: bool,
        own_turns: bool = False,
    ) -> tuple[list[Event], bool]:
        """Follow the game with ``sink`` (called from the bridge): the events to send first
        and whether it is live (see Audience.subscribe)."""
        return await self.audience.subscribe(
            sink,
            seat,
            after_seq,
            from_start,
            own_turns,
            snapshot=self.told,
            awaited=seat is not None and self.awaits(seat),
            ended=self.status in (Status.FINISHED, Status.ABORTED),
        )

    def close_streams(self, final: EventType | None = None) -> None:
        """End every stream (after a ``final`` unrecorded event such as SERVER_SHUTDOWN,
        which offers no turn: a play for it would go to a server going away, and the turn
        is offered again where the game goes on)."""
        audience = self.audience
        last = audience.unrecorded(final, self.told()._replace(legal=())) if final else None
        audience.close(last)

    def log(self, msg: str, *args) -> None:
        log.info("game=%s " + msg, self.id, *args)

    def release(self) -> None:
        """An ended game keeps its events in the journal only: they are read back when
        someone replays the game, so a ladder that runs for weeks does not fill memory.
        So are the answers to its plays (for an idempotent re-send, see GameSession.submit).
        The last event's state is kept: what GetGame and a SNAPSHOT show of it."""
        if self.audience.events:
            self.final = self.audience.events[-1].snapshot
        self.audience.release()
        self.judge.release()
        self.legal = ()
        self.ended.set()
