"""Who follows a game, and what they were told.

A game's audience is its seats' streams and the spectators' (each fed by a Sink the
transport supplies) and the events told them, in order: an event is told once it is
journaled, to every sink that wants it (a seat's own-turns stream only those it needs to
play). An ended game lets go of its events: they are read back from the journal when
someone replays it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import trio

from server.core.journal import Event, EventType, Snapshot
from server.errors import ArbiterError, Code

if TYPE_CHECKING:
    from server.core.game import GameCard


class Sink(Protocol):
    """Where a subscription's messages go; the transport supplies the implementation."""

    def send(self, item: Any) -> None: ...
    def close(self) -> None: ...


class Audience:
    """The streams that follow one game, which seats came, and the events told so far."""

    def __init__(self, card: GameCard, load: Callable[[int], Awaitable[list[Event]]]) -> None:
        self.card = card
        self._load = load  # the journaled events of the game (its last ``tail`` ones, or all)
        self.events: list[Event] = []  # told events; emptied once the game ends (release)
        self.released = 0  # how many events the ended game left in the journal only
        self.sinks: dict[Sink, int | None] = {}  # -> the seat of an own-turns stream
        self.present: set[int] = set()  # seats that have subscribed at least once
        self.connected: dict[int, int] = {0: 0, 1: 0}  # live streams per seat
        self.all_present = trio.Event()

    @property
    def last_seq(self) -> int:
        """The seq of the last event told (and journaled)."""
        return self.released or len(self.events)

    async def history(self, tail: int = 0) -> list[Event]:
        """Every event told so far (an ended game's are read back from the journal: with
        ``tail``, only its last ``tail`` events)."""
        if self.released:
            return await self._load(tail)
        return list(self.events)

    def unrecorded(self, kind: EventType, snapshot: Snapshot) -> Event:
        """An event never journaled (a SNAPSHOT, a SERVER_SHUTDOWN) at the last told seq."""
        return Event(self.last_seq, kind, time.time(), snapshot)

    async def subscribe(
        self,
        sink: Sink,
        seat: int | None,
        after_seq: int,
        from_start: bool,
        own_turns: bool,
        *,
        snapshot: Callable[[], Snapshot],
        awaited: bool,
        ended: bool,
    ) -> tuple[list[Event], bool]:
        """Register ``sink`` (again, for another stream it feeds); return the events to send
        first (no gap) and whether it is live.

        A seat that resumes after the TURN_STARTED of a turn still waiting for its play
        (``awaited``) gets a SNAPSHOT (the game's ``snapshot()``, with the legal plays) at
        the end of the backlog, so the pending turn is always announced again; one that
        missed it gets it read now (its time and clocks), so that its time plus the time
        left is the turn's deadline (after a restart, its clock starts as it is sent). An
        ``ended`` game keeps no subscribers: its stream ends after the backlog.
        ``own_turns`` (a seat's only): the stream is sent only the events that seat needs
        to play (:meth:`concerns`), the backlog too.
        """
        if after_seq > self.last_seq:
            raise ArbiterError(
                Code.INVALID_ARGUMENT,
                f"after_seq {after_seq} is beyond the last event ({self.last_seq})",
            )
        if from_start:
            backlog = await self.history()
        elif after_seq:
            backlog = (await self.history())[after_seq:]
            if not backlog and awaited:
                backlog.append(self.unrecorded(EventType.SNAPSHOT, snapshot()))
        else:
            backlog = [self.unrecorded(EventType.SNAPSHOT, snapshot())]
        if awaited and backlog and backlog[-1].type is EventType.TURN_STARTED:
            backlog[-1] = replace(backlog[-1], time=time.time(), snapshot=snapshot(), views={})
        own = seat if own_turns else None
        if own is not None:
            backlog = [event for event in backlog if self.concerns(event, own)]
        if ended:
            return backlog, False
        self.sinks[sink] = own
        if seat is not None:
            self.connected[seat] += 1
            self.present.add(seat)
            if len(self.present) == 2:
                self.all_present.set()
        return backlog, True

    def unsubscribe(self, sink: Sink, seat: int | None, *, last: bool = True) -> None:
        """A stream of ``seat`` that ``sink`` fed has ended (``last``: no other stream
        follows ``sink``)."""
        if sink in self.sinks:
            if last:
                del self.sinks[sink]
            if seat is not None:
                self.connected[seat] -= 1

    def concerns(self, event: Event, seat: int) -> bool:
        """Whether ``seat`` needs ``event`` to play (EVENT_FILTER_OWN_TURNS): everything
        but the plays, the passes and the opponent's TURN_STARTED (the next event's state
        shows what they did)."""
        kind = event.type
        if kind is EventType.TURN_STARTED:
            return event.snapshot.position.turn is self.card.color_of(
                seat, event.snapshot.white_seat
            )
        return kind is not EventType.PLAY_MADE and kind is not EventType.TURN_PASSED

    def tell(self, event: Event) -> None:
        """A journaled event: every sink that wants it is sent it."""
        self.events.append(event)
        for sink, own in list(self.sinks.items()):
            if own is None or self.concerns(event, own):
                sink.send(event)

    def retire_announcement(self) -> None:
        """The turn is over: its TURN_STARTED event stops carrying the legal plays, so that
        a replay (from_start, after_seq) never offers a turn that can no longer be played."""
        for i in range(len(self.events) - 1, max(-1, len(self.events) - 3), -1):
            event = self.events[i]
            if event.type is EventType.TURN_STARTED:
                if event.snapshot.legal:
                    snap = event.snapshot._replace(legal=())
                    self.events[i] = replace(event, snapshot=snap, views={})
                return

    def close(self, final: Event | None = None) -> None:
        """End every stream (after a ``final`` unrecorded event such as SERVER_SHUTDOWN)."""
        for sink in list(self.sinks):
            if final is not None:
                sink.send(final)
            sink.close()
        self.sinks.clear()

    def release(self) -> None:
        """The game ended: its events stay in the journal only (see Game.release)."""
        self.released = self.events[-1].seq if self.events else 0
        self.events = []
