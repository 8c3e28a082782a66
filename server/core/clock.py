"""Arrival stamps: when a play reached the transport, on the core's clock, across threads.

A side is charged from when its turn was sent to when its play *arrived* (issue 10,
"fair clocks under load"), not to when the trio thread got round to it. The side's stream
reports when it handed the turn to the transport (stamped in the response serializer, just
before grpc starts the write: ``server.bridge.Encoded``; ``GameSession.turn_sent``: the
clock runs from then, see :meth:`nardy.clock.Clock.sent`), and the gRPC thread stamps every
SubmitPlay as it arrives (:meth:`Arrivals.stamp`, on the trio run's own
clock, which is safe to read from any thread) and the core settles the stamp when it has
judged the play. A turn whose deadline has passed waits for every play of its game that
was stamped before the deadline (:meth:`Arrivals.pending`, and behind a front process the
plays stamped there and still on their way: ``Arrivals.upstream``) before it declares a timeout:
enforcement may lag behind a busy core, what a side is charged never does.

The per-side arithmetic (turn time, bank, deadline, charge) is :class:`nardy.clock.Clock`.
"""

from __future__ import annotations

import collections
import itertools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from nardy.clock import DEFAULT_TURN_TIME_MS, Clock

__all__ = ["DEFAULT_TURN_TIME_MS", "Arrival", "Arrivals", "Clock", "Pace"]


@dataclass(frozen=True)
class Arrival:
    """One play on its way from the transport to the core."""

    game_id: str
    id: int
    time: float  # on the core's clock
    sent: float | None = None  # when a front process sent the turn (server.front), if told


class Arrivals:
    """Plays stamped on arrival and not yet judged by the core, per game (thread-safe)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now  # the core's clock; callable from any thread
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[str, dict[int, float]] = {}
        self._waiting: set[str] = set()  # games whose turn waits for a stamped play
        # Behind a front: (game, turn, time) -> waits until no play of the game stamped
        # there before the time is on its way to this process; (True if one was, when the
        # front sent the turn) (server.fronted.Front.in_flight).
        self.upstream: Callable[[str, int, float], Awaitable[tuple[bool, float | None]]] | None = (
            None
        )

    def stamp(self, game_id: str, at: float | None = None, sent: float | None = None) -> Arrival:
        """Stamp a play that has just arrived (call from the transport's thread), or that
        arrived ``at`` at a front process (server.front), which sent its turn at ``sent``
        (both on the core's clock)."""
        with self._lock:
            now = self._now() if at is None else at
            arrival = Arrival(game_id, next(self._ids), now, sent)
            self._pending.setdefault(game_id, {})[arrival.id] = arrival.time
        return arrival

    def settle(self, arrival: Arrival) -> bool:
        """The play has been judged (or dropped); True if its game's turn is waiting for
        it (see :meth:`pending`) and should be told."""
        with self._lock:
            stamps = self._pending.get(arrival.game_id)
            if stamps is None or stamps.pop(arrival.id, None) is None:
                return False
            if not stamps:
                del self._pending[arrival.game_id]
            return arrival.game_id in self._waiting

    def pending(self, game_id: str, before: float) -> bool:
        """Is a play for ``game_id`` that arrived before ``before`` still on its way? While
        one is, the game counts as waiting for it (until :meth:`done_waiting`)."""
        with self._lock:
            found = any(t < before for t in self._pending.get(game_id, {}).values())
            if found:
                self._waiting.add(game_id)
            return found

    def now(self) -> float:
        """The core's clock, read from any thread (e.g. when a turn is sent)."""
        return self._now()

    def done_waiting(self, game_id: str) -> None:
        with self._lock:
            self._waiting.discard(game_id)

    def __len__(self) -> int:
        with self._lock:
            return sum(map(len, self._pending.values()))


class Pace:
    """Holds new turns back while the transport's loop runs late (``nardy serve --pace-ms``).

    Plays are stamped when the transport's loop gets to them, so a loop that runs behind
    charges clocks for its own lateness. With a ``limit`` (seconds; 0: off) a new turn
    starts at once only while the loop's measured lag (``lag``) is within it; otherwise it
    waits, first come first served, for :meth:`tick` to let it through (for at most
    ``most`` seconds). The transport's thread measures the lag every few ms and, while
    turns are held, calls :meth:`tick` in the trio thread (``server.bridge.watch_lag``):
    each tick on time lets one more turn through than the last, a late one halves that.
    Games go slower under saturation, clocks stay fair; no clock runs while a turn is held.
    """

    MOST_PER_TICK = 64

    def __init__(self, limit: float = 0.0, most: float = 1.0) -> None:
        self.limit = limit
        self.most = most
        self.lag = 0.0
        self._held: collections.deque[trio.Event] = collections.deque()
        self._batch = 1

    @property
    def holding(self) -> int:
        """Turns waiting to start (read from any thread)."""
        return len(self._held)

    async def turn_may_start(self) -> None:
        if not self.limit or (self.lag <= self.limit and not self._held):
            return
        go = trio.Event()
        self._held.append(go)
        with trio.move_on_after(self.most):
            await go.wait()
        if not go.is_set():
            self._held.remove(go)

    def tick(self, lag: float) -> None:
        """The transport's loop ran ``lag`` seconds late: let held turns through, or not."""
        self.lag = lag
        if lag > self.limit:
            self._batch = max(1, self._batch // 2)
            return
        for _ in range(min(self._batch, len(self._held))):
            self._held.popleft().set()
        self._batch = min(self._batch + 1, self.MOST_PER_TICK)
