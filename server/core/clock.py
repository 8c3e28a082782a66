"""Arrival stamps: when a play reached the edge, on the core's clock.

A side is charged from when its turn was sent to when its play *arrived* at the edge,
never for the time the play then spends on its way to the core or waiting for it. The edge
stamps every play as it reads it and writes the stamp with the play on the link; it also
notes when it handed a seat its TURN_STARTED and tells the core with the turn's play, or
with its answer to a fence (``GameSession.turn_sent``: the clock runs from then, see
:meth:`nardy.clock.Clock.sent`). The core keeps the plays it has read and
not yet judged (:class:`Arrivals`). A turn whose deadline has passed judges every play of
its game stamped before the deadline first, and before it declares a timeout it asks the
edge for a *fence* (:attr:`Arrivals.fence`): the edge answers once its own clock has passed
the deadline and every play of that game it stamped before it is written to the link, and
the link keeps the order, so by then the core has read them all. A turn asks a little
before its deadline (``FENCE_LEAD_S``), so that the answer is there when the deadline is.
Enforcement may lag behind a busy core; what a side is
charged never does.

The per-side arithmetic (turn time, bank, deadline, charge) is :class:`nardy.clock.Clock`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import trio

from nardy.clock import DEFAULT_TURN_TIME_MS, Clock

__all__ = ["DEFAULT_TURN_TIME_MS", "Arrival", "Arrivals", "Clock"]


class Fence(Protocol):
    """A fence asked of the edge (server.core.link.EdgeLink.fence)."""

    before: float

    async def answer(self) -> float | None:
        """Once every play of the game that the edge stamped before :attr:`before` has been
        read: when the edge handed the turn to its seat, if it did."""
        ...


class Passed:
    """The fence of a core that no edge feeds (the core's own tests): nothing is in flight."""

    def __init__(self, before: float) -> None:
        self.before = before
        self.done = trio.Event()
        self.done.set()
        self.sent: float | None = None

    async def answer(self) -> float | None:
        await self.done.wait()
        return self.sent


def no_edge(game_id: str, turn_id: int, before: float) -> Fence:
    return Passed(before)


@dataclass(frozen=True)
class Arrival:
    """One play read from the link, not yet judged."""

    game_id: str
    id: int
    time: float  # when it reached the edge, on the core's clock


class Arrivals:
    """Plays read from the link and not yet judged by the core, per game."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now  # the core's clock
        self._ids = itertools.count(1)
        self._pending: dict[str, dict[int, float]] = {}
        self._waiting: set[str] = set()  # games whose turn waits for a stamped play
        # (game, turn, time) -> a fence asked of the edge now, answered once every play of
        # the game that the edge stamped before the time has been read from the link
        self.fence: Callable[[str, int, float], Fence] = no_edge

    def stamp(self, game_id: str, at: float | None = None) -> Arrival:
        """A play that reached the edge ``at`` (the core's clock; now if not given)."""
        arrival = Arrival(game_id, next(self._ids), self._now() if at is None else at)
        self._pending.setdefault(game_id, {})[arrival.id] = arrival.time
        return arrival

    def settle(self, arrival: Arrival) -> bool:
        """The play has been judged (or dropped); True if its game's turn is waiting for
        it (see :meth:`pending`) and should be told."""
        stamps = self._pending.get(arrival.game_id)
        if stamps is None or stamps.pop(arrival.id, None) is None:
            return False
        if not stamps:
            del self._pending[arrival.game_id]
        return arrival.game_id in self._waiting

    def pending(self, game_id: str, before: float) -> bool:
        """Is a play for ``game_id`` that arrived before ``before`` still to be judged?
        While one is, the game counts as waiting for it (until :meth:`done_waiting`)."""
        found = any(t < before for t in self._pending.get(game_id, {}).values())
        if found:
            self._waiting.add(game_id)
        return found

    def now(self) -> float:
        return self._now()

    def done_waiting(self, game_id: str) -> None:
        self._waiting.discard(game_id)

    def __len__(self) -> int:
        return sum(map(len, self._pending.values()))
