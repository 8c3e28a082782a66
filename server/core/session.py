"""One game as it is played, in trio tasks: dice, the turn clock, plays and results.

Everything here runs in the arbiter's trio thread. A turn's clock (:mod:`server.core.clock`) is
a deadline on the wait for the play (``trio.move_on_at``), and a play is judged by when it
arrived at the transport, not by when the core gets to it. Every event is journaled
through the Host and told to subscribers only once durable (server.core.game): a play is
answered after its commit, and a turn's clock starts when the turn is told, so a slow
journal delays a game but never charges a player. Plays and resignations come from the
transport bridge as tasks of their own that wait for their commit; a game has at most one
group of events on its way to the journal at a time. A play and the turn after it are one
group (one commit per turn): the next dice are thrown while the play is judged, and the
turn is opened by the play's commit (see GameSession._roll_ahead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import trio

from nardy import Color, GameResult, Termination
from nardy.match import Opening
from nardy.variant import GamePlay as Play
from server.core.clock import Arrival
from server.core.game import Game
from server.core.journal import Event, EventType, PlayRecord, Snapshot, Status
from server.core.judge import Accepted
from server.errors import ArbiterError, Code

if TYPE_CHECKING:
    from server.core.match import MatchSession


# A turn's time runs from when the mover's stream sent it, at most this long after the core
# announced it (a slow or stalled reader of its own stream gains no more than this).
MAX_SEND_DELAY_S = 2.0
# A game resumed after a restart (or taken over from another instance) waits this long
# at most for the mover's seat to come back before its turn's time runs (as a ladder
# pair's seats have to come at first): the outage and the reconnection are not charged.
RECONNECT_S = 30.0
# A turn asks the edge for its fence this long before its deadline, so that the answer is
# there when the deadline passes (server.core.clock).
FENCE_LEAD_S = 0.1
# This many turns passed in a row end the game without a result: only a start no game
# reaches does it (a long nardy block of six with nobody ahead, §3.5: no play leaves it),
# and it would pass for ever, each pass journaled. (Two sides blocked for a few turns
# each pass far fewer.)
MAX_PASSES = 100


@dataclass(frozen=True)
class Ahead:
    """The next turn, thrown while the play before it is stored (see _roll_ahead)."""

    turn_id: int
    dice: tuple[int, int]
    legal: tuple[Play, ...]


class GameSession(Game):
    """One game of a match as it is played: the turn loop, its clock, plays, the end."""

    def __init__(
        self, match: MatchSession, game_id: str, number: int, server_seed: bytes | None = None
    ) -> None:
        super().__init__(match, game_id, number, server_seed)
        self._committing: trio.Event | None = None  # set when the pending play's commit ends
        self.end_error: ArbiterError | None = None
        self._wake = trio.Event()
        self._turn_scope = trio.CancelScope()  # the wait for the awaited turn's play
        self._seal_scope = trio.CancelScope()  # a sealed play's wait for the pair (_seal)
        self.passes = 0  # turns passed in a row (MAX_PASSES)
        self.resumed_until = -math.inf  # resumed after a restart: seats are waited for until

    # -- the game -----------------------------------------------------------------------
    async def throw_gate(self) -> None:
        """Before each die: a duplicate pair's games wait for each other (see lockstep)."""
        pair = self.match.pair
        if pair is not None:
            await pair.at(self, self.roller.rolled)
            if self.roller.rolled == 0:
                self.roller.client_seeds = tuple(pair.client_seeds())

    def _ended(self) -> None:
        if self.match.pair is not None:
            self.match.pair.ended(self)

    async def run(self, white_seat: int, throws: list[tuple[int, int]]) -> GameResult:
        """Play the game to its end and return the result (the caller emits GAME_FINISHED)."""
        self.white_seat = white_seat
        self.throws = tuple(throws)
        self.status = Status.IN_PROGRESS
        await self.emit(EventType.GAME_STARTED, throws=self.throws)
        self.match.host.game_started(self)
        self.log(
            "started white=%s black=%s",
            self.seat_of(Color.WHITE).name,
            self.seat_of(Color.BLACK).name,
        )
        first = None
        if self.options.opening is Opening.USE_OPENING_DICE and throws:
            a, b = throws[-1]  # the first seat's die, the second's: white's first
            first = (a, b) if white_seat == 0 else (b, a)
        return await self._play_on(first)

    async def resume(self) -> GameResult:
        """Go on with a game restored from the journal after a restart.

        A turn that was awaiting its play starts again with the same dice and a fresh
        clock (a new TURN_STARTED with the same turn_id). Until each seat is back, its
        turns' time runs from when its reconnected stream is sent them, RECONNECT_S after
        the resumption at the latest: the outage is not charged.
        """
        self.log("resumed at turn %d", self.turn_id)
        self.resumed_until = trio.current_time() + RECONNECT_S
        if self.result is None and self.dice and self.turn_id not in self.judge.accepted:
            await self._await_play(tuple(self.variant.legal_plays(self.position, self.dice)))
        return await self._play_on(None)

    async def _play_on(self, first: tuple[int, int] | None) -> GameResult:
        while self.result is None:
            # (every way round the loop waits for something: no yield needed here, a turn
            # costs one scheduling step fewer)
            await trio.lowlevel.checkpoint_if_cancelled()
            if (storing := self._committing) is not None:
                await storing.wait()  # a play: its commit may open the next turn (_apply)
                continue
            if self.result is not None:  # resigned while the loop was between turns
                break
            if self.open_turn:  # offered in the commit of the play before it
                await self._clock_turn()
                continue
            if first is None:
                await self.throw_gate()
                if self.result is not None:
                    break
            dice = first or self.roller.roll()
            first = None
            await self._turn(dice)
        return self.result

    async def _turn(self, dice: tuple[int, int]) -> None:
        self.turn_id += 1
        self.dice = dice
        mover = self.position.turn
        plays = self.variant.legal_plays(self.position, dice)
        if not plays:
            self.position = self.variant.passed(self.position)
            record = PlayRecord(mover, dice, "-", self.turn_id, True, 0)
            self.dice = ()
            await self.emit(EventType.TURN_PASSED, play=record)
            self.match.host.metrics.turns.labels("passed").inc()
            self.passes += 1
            if self.passes >= MAX_PASSES:  # a start no game reaches: called off
                self.log("called off: %d turns in a row passed", self.passes)
                self.match.host.runtime.spawn(
                    self.match.call_off, f"no side could move in {MAX_PASSES} turns in a row"
                )
                await trio.sleep_forever()  # (call_off stops this match's task)
            return
        self.passes = 0
        if len(plays) == 1 and self.match.auto_play_forced:
            await self._apply(plays[0], mover, automatic=True, used_ms=0)
            return
        await self._await_play(tuple(plays))

    async def _await_play(self, plays: tuple[Play, ...]) -> None:
        """Announce the turn, run the mover's clock, and forfeit the game if it runs out."""
        self.legal = plays
        self._wake = trio.Event()
        # journaled, then handed to the streams
        await self.emit(EventType.TURN_STARTED, offer=self.result is None)
        self._open_turn()
        await self._clock_turn()

    def _open_turn(self) -> None:
        """The turn was told: the mover's clock starts (the journal's time is never
        charged) and moves on when the mover's stream sends it (turn_sent); a seat not
        back yet after a resumption is waited for (see resume)."""
        now = trio.current_time()
        mover = self.position.turn
        away = not self.audience.connected[self.seat_of(mover).index]
        wait = self.resumed_until - now if away and now < self.resumed_until else 0.0
        self.clocks[mover].start(now, wait)
        self.open_turn = self.result is None

    async def _clock_turn(self) -> None:
        """Run the open turn's clock until its play is made, or forfeit the game if it
        runs out. The play's commit may already have opened the next turn (_apply)."""
        turn_id, mover = self.turn_id, self.position.turn
        clock = self.clocks[mover]
        arrivals = self.match.host.arrivals
        deadline = -math.inf
        while self._awaiting_play(turn_id) and clock.deadline > deadline:
            fence = None
            with trio.CancelScope(deadline=clock.deadline) as self._turn_scope:
                with trio.move_on_at(clock.deadline - FENCE_LEAD_S):
                    while self._awaiting_play(turn_id):
                        self._wake = trio.Event()
                        await self._wake.wait()
                if self._awaiting_play(turn_id):  # the fence asked ahead of the deadline
                    fence = arrivals.fence(self.id, turn_id, clock.deadline)
                while self._awaiting_play(turn_id):
                    self._wake = trio.Event()
                    await self._wake.wait()
            deadline = clock.deadline
            # A play that arrived in time may still be on its way to the core (on the
            # link), or to the journal: judge it first. The fence is answered once every
            # play the edge stamped before the deadline has been read.
            fenced = False
            while self._awaiting_play(turn_id):
                if (pending := self._committing) is not None:
                    await pending.wait()
                elif arrivals.pending(self.id, before=deadline):
                    self._wake = trio.Event()
                    await self._wake.wait()
                elif not fenced:  # (the edge may tell when it sent the turn: a later deadline)
                    if fence is None or fence.before != deadline:
                        fence = arrivals.fence(self.id, turn_id, deadline)
                    sent = await fence.answer()
                    if sent is not None:
                        self.turn_sent(turn_id, sent)
                    fenced = True
                else:
                    break
            arrivals.done_waiting(self.id)
        if self.turn_id != turn_id:
            return  # played (its clock charged); its commit opened the next turn
        sent_after, allowed_ms = clock.sent_after, clock.turn_time_ms + clock.bank_ms
        clock.stop()  # stopped already if a play was charged
        self.open_turn = False
        if self._awaiting_play(turn_id):
            late = trio.current_time() - deadline
            self.match.host.metrics.clock_lateness.observe(max(0.0, late))
            seat = self.seat_of(mover).index
            why = Termination.TIMEOUT if self.audience.connected[seat] else Termination.ABANDONMENT
            # what an operator needs to tell a slow bot from a slow server
            sent = (
                "never sent to a stream"
                if sent_after is None
                else f"sent to its stream {sent_after * 1000:.0f} ms after it began"
            )
            self.log(
                "%s lost on time (%s): turn %d of %d ms, %s, no play stamped, decided %.0f ms "
                "after the deadline",
                mover.name.lower(), why, turn_id, allowed_ms, sent, late * 1000,
            )  # fmt: skip
            clock.bank_ms = 0  # used up: the final state shows no bank left
            self.legal = ()
            self.result = self.variant.forfeit(self.position, mover, why)
            # The loss is decided; writing the game's end waits until every other clock
            # that ran out with this one has decided too (none is late for this one's work).
            await trio.lowlevel.cancel_shielded_checkpoint()

    def turn_sent(self, turn_id: int, at: float) -> None:
        """The mover's stream handed turn ``turn_id`` to the transport at ``at`` (on the
        core's clock): the side's time runs from then (see Clock.sent)."""
        clock = self.clocks[self.position.turn]
        if turn_id == self.turn_id and clock.running and self._awaiting_play():
            self._turn_scope.deadline = clock.sent(at, MAX_SEND_DELAY_S)

    def stood_still(self, seconds: float) -> None:
        """The core stood still for ``seconds`` (stopped, suspended, starved): the running
        turn's clock is not charged for them (see Tables.mind_stillness)."""
        clock = self.clocks[self.position.turn]
        if self.open_turn and clock.running:
            self._turn_scope.deadline = clock.delay(seconds)

    def reconnect_offer(self, seat: int, last: Snapshot) -> int:
        """The turn awaiting ``seat``'s play that waits for the seat to come back after a
        resumption (see resume), if ``last`` (the end of the backlog a reconnected stream
        is sent) offers it, else 0: its clock runs from now, or from when the stream is
        sent it (the edge tells with the play or the fence), and every reading says so."""
        mover = self.position.turn
        offered = last.turn_id == self.turn_id and bool(last.legal) and self.open_turn
        clock = self.clocks[mover]
        if offered and self.color_of(seat) is mover and clock.waiting:
            self._turn_scope.deadline = clock.offered(trio.current_time())
            return self.turn_id
        return 0

    def _awaiting_play(self, turn_id: int | None = None) -> bool:
        """No result yet, the turn (``turn_id``: the current one) still current, and no
        play accepted (or one is accepted but not yet stored)."""
        if turn_id is None:
            turn_id = self.turn_id
        return (
            self.result is None
            and self.turn_id == turn_id
            and (turn_id not in self.judge.accepted or self._committing is not None)
        )

    def arrival_settled(self) -> None:
        """A play stamped for this game has been judged: a turn past its deadline that
        was waiting for it may now decide (see _await_play)."""
        self._wake.set()

    async def _apply(self, play: Play, mover: Color, *, automatic: bool, used_ms: int) -> Accepted:
        """Make ``play`` and journal it; once durable, tell it. If it cannot be stored,
        the game is as if the play never arrived (StoreError)."""
        record = PlayRecord(mover, self.dice, play.notation(), self.turn_id, automatic, used_ms)
        answer = Accepted(play.notation(), play.end.text(), used_ms)
        before = (self.position, self.legal, self.dice, self.open_turn)
        turn_id, result = self.turn_id, self.result
        self.judge.accepted[turn_id] = answer
        self.position = play.end
        self.legal = ()
        self.dice = ()
        self.open_turn = False
        self.result = mine = self.variant.result(self.position, self.options.rules)
        event = self.next_event(EventType.PLAY_MADE, play=record)
        ahead = self._roll_ahead()
        if ahead is None:
            commit = self.match.host.journal(self, event)
        else:
            # the state as the play left it (nothing ran since), with the next turn's dice
            snap = event.snapshot._replace(
                dice=ahead.dice, turn_id=ahead.turn_id, legal=ahead.legal
            )
            offer = Event(event.seq + 1, EventType.TURN_STARTED, event.time, snap)
            commit = self.match.host.journal(self, event, offer)
        done = self._committing = trio.Event()
        try:
            with trio.CancelScope(shield=True):
                await commit.wait()
        except ArbiterError:  # not stored: as if the play never arrived
            del self.judge.accepted[turn_id]
            self.position, self.legal, self.dice, self.open_turn = before
            if self.result is mine:  # (a resignation meanwhile stands)
                self.result = result
            if ahead is not None:
                self.roller.rolled -= 2
            raise
        finally:
            self._committing = None
            done.set()
        self.audience.tell(event)
        metrics = self.match.host.metrics
        metrics.turns.labels("automatic" if automatic else "played").inc()
        if not automatic:
            metrics.turn_latency.observe(used_ms / 1000)
        self.audience.retire_announcement()
        if ahead is not None:
            self._open_ahead(ahead, offer)
        return answer

    def _roll_ahead(self) -> Ahead | None:
        """The next turn, thrown as a play is made so that one commit stores the play and
        offers the next turn, when nothing must be waited for before its dice (the other
        game of a duplicate pair: see _play_on) and it awaits a play."""
        pair = self.match.pair
        if self.result is not None or self.match.stopping:
            return None
        if pair is not None and not pair.reached_by_all(self, self.roller.rolled):
            return None  # the other game of the pair is behind: the turn loop waits for it
        dice = self.roller.roll()
        plays = self.variant.legal_plays(self.position, dice)
        if not plays or (len(plays) == 1 and self.match.auto_play_forced):
            self.roller.rolled -= 2  # a pass or a forced play: the turn loop throws them again
            return None
        return Ahead(self.turn_id + 1, dice, tuple(plays))

    def _open_ahead(self, ahead: Ahead, event: Event) -> None:
        """The play's commit made the next turn durable too: tell it and open it now."""
        self.turn_id = ahead.turn_id
        if self.result is None and not self.match.stopping:
            self.dice, self.legal = ahead.dice, ahead.legal
            self.audience.tell(event)
            self._open_turn()
        else:  # resigned or called off meanwhile: the turn is told, never offered
            self.audience.tell(replace(event, snapshot=event.snapshot._replace(legal=()), views={}))

    # -- actions (called from the bridge) -----------------------------------------------
    async def submit(
        self,
        seat: int,
        turn_id: int,
        notation: str | None,
        end: str | None,
        arrival: Arrival | None = None,
    ) -> Accepted:
        """Check and make a play for ``turn_id``, charged up to its ``arrival`` at the
        transport (now, if not given); answered once it is durable; idempotent for the
        same play (in an ended game too: its answers are read back from the journal)."""
        while (pending := self._committing) is not None and turn_id == self.turn_id:
            await pending.wait()  # the same turn is being sealed or stored: its fate first
        ended = self.status in (Status.FINISHED, Status.ABORTED) and 0 < turn_id <= self.turn_id
        again = await self.judge.resent(turn_id, notation, end, self.audience.history, ended)
        if again is not None:
            return again
        if self.status is Status.WAITING:
            raise ArbiterError(Code.FAILED_PRECONDITION, "the game has not started")
        if self.status is not Status.IN_PROGRESS or self.result is not None:
            raise ArbiterError(Code.FAILED_PRECONDITION, self._over())
        mover = self.position.turn
        if self.color_of(seat) is not mover:
            raise ArbiterError(Code.FAILED_PRECONDITION, "it is not your turn")
        if turn_id != self.turn_id or not self.open_turn:
            raise ArbiterError(
                Code.FAILED_PRECONDITION,
                f"turn {turn_id} is not the turn awaiting your play (turn {self.turn_id})",
            )
        clock = self.clocks[mover]
        arrived = trio.current_time() if arrival is None else arrival.time
        if not clock.in_time(arrived):
            raise ArbiterError(Code.FAILED_PRECONDITION, "your clock ran out")
        try:
            play = self.judge.read(self.position, self.dice, self.legal, notation, end)
        except ArbiterError as e:  # refused: at the game's limit the mover loses (ladders)
            if self.judge.over_limit(mover) and self.result is None:
                refused = self.judge.refused[mover]
                self.log("%s lost: %d illegal plays", mover.name.lower(), refused)
                self.legal = ()
                self.result = self.variant.forfeit(self.position, mover, Termination.ILLEGAL_PLAYS)
                self._wake.set()
                raise ArbiterError(
                    e.code,
                    f"{e.message}; the game is lost: {refused} play{'s' * (refused != 1)} refused",
                ) from None
            raise
        before = (clock.bank_ms, clock.started)
        used = clock.charge(arrived)
        try:
            await self._seal()
            answer = await self._apply(play, mover, automatic=False, used_ms=used)
        except ArbiterError:  # not stored: the clock runs on as if the play never arrived
            clock.bank_ms, clock.started = before
            raise
        finally:
            self._wake.set()
        self.used_ms[mover] += used
        self.plays_made[mover] += 1
        return answer

    def _over(self) -> str:
        """Why a play comes too late: the game is over, and how once that is told."""
        if self.status is Status.FINISHED and self.result is not None:
            return f"the game is over: {self.result}"
        return "the game is over"

    async def _seal(self) -> None:
        """A duplicate pair's games are mirrors (the same dice, the seats swapped): a play
        is made only once every other game of the pair has played the same throw (or
        ended), so that nobody sees it while the mirrored turn is still open (a bot would
        copy its opponent's play). Meanwhile the mover's clock is stopped and the play is
        neither told nor shown; the game's end (resignation, void) unseals it."""
        pair = self.match.pair
        if pair is None:
            return
        sealed = self._committing = trio.Event()
        try:
            with trio.CancelScope() as self._seal_scope:
                await pair.at(self, self.roller.rolled)
        finally:
            self._committing = None
            sealed.set()
        if self.result is not None:
            raise ArbiterError(Code.FAILED_PRECONDITION, "the game is over")
        if self.match.stopping:
            raise ArbiterError(Code.UNAVAILABLE, "the game stopped here; retry")

    def unseal(self) -> None:
        """The game ends (or stops here): a sealed play waits no more (see _seal)."""
        self._seal_scope.cancel()

    def absent_loses(self, white_seat: int) -> GameResult:
        """The seat that never came loses by abandonment, nothing thrown, ``white_seat``
        playing white (a ladder game whose other seat came; the caller finishes it)."""
        self.white_seat = white_seat
        (here,) = self.audience.present
        absent = self.color_of(1 - here)
        assert absent is not None
        self.result = self.variant.forfeit(self.position, absent, Termination.ABANDONMENT)
        self.log("%s lost: its seat never came", absent.name.lower())
        return self.result

    async def resign(self, seat: int) -> GameResult:
        """Resign for ``seat``: answered once the finished game is journaled."""
        if self.status is not Status.IN_PROGRESS or self.result is not None:
            raise ArbiterError(Code.FAILED_PRECONDITION, "the game is not in progress")
        loser = self.color_of(seat)
        assert loser is not None
        result = self.result = self.variant.forfeit(self.position, loser, Termination.RESIGNATION)
        self.legal = ()
        self.dice = ()
        self.open_turn = False
        self._wake.set()
        self.log("%s resigned", loser.name.lower())
        await self.ended.wait()
        if self.end_error is not None:
            raise self.end_error
        return result

    async def _end(self, status: Status, kind: EventType) -> None:
        """Journal the game's last event (after a play still being stored)."""
        self.open_turn = False
        self.unseal()
        if self._committing is not None:
            await self._committing.wait()
        self.status = status
        self._ended()  # a pair's partner may go on; the seed is revealed once both ended
        self.dice = ()
        self.legal = ()
        self.audience.retire_announcement()
        try:
            await self.emit(kind)
        except ArbiterError as e:
            self.end_error = e
            raise
        finally:
            self.ended.set()
        self.close_streams()
        self.release()

    async def finish(self) -> None:
        await self._end(Status.FINISHED, EventType.GAME_FINISHED)
        self.log("finished: %s", self.result)

    async def abort(self, why: str) -> None:
        await self._end(Status.ABORTED, EventType.GAME_ABORTED)
        self.log("aborted: %s", why)
