"""A side's clock in one game: a turn time for every turn, then a bank that only shrinks.

One object serves the arbiter (deadline, charging a play from the moment it arrived,
the fresh clock of a game resumed after a restart) and the SDK (the clock display,
counting down from the reading in the last ``GameState``). Times are seconds on the
caller's monotonic clock (the arbiter's trio clock, the SDK's ``time.monotonic``);
amounts are whole milliseconds, as on the wire (``nardy.v1.Clock``). No I/O here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: The turn time when none is given: two minutes per turn (the .proto's ``turn_time_ms``).
DEFAULT_TURN_TIME_MS = 120_000


@dataclass
class Clock:
    """``turn_time_ms`` for each turn; time beyond it comes out of ``bank_ms``.

    While a turn runs, ``started`` is when the turn was sent to the side; the side loses
    on time unless its play *arrives* before :attr:`deadline`.
    """

    turn_time_ms: int = DEFAULT_TURN_TIME_MS
    bank_ms: int = 0
    started: float | None = None
    _sent: bool = field(default=False, repr=False, compare=False)
    _announced: float = field(default=0.0, repr=False, compare=False)

    @property
    def running(self) -> bool:
        return self.started is not None

    @property
    def deadline(self) -> float:
        """When the running turn's time and the whole bank are used up (inf when stopped)."""
        if self.started is None:
            return math.inf
        return self.started + (self.turn_time_ms + self.bank_ms) / 1000

    def start(self, now: float, wait: float = 0.0) -> float:
        """Start a turn announced at ``now``; return its deadline. With ``wait``, its time
        runs from that much later unless the side's stream is sent it sooner (a resumed
        game whose seats are reconnecting: see :meth:`sent`)."""
        self._announced = now
        self.started = now + wait
        self._sent = False
        return self.deadline

    @property
    def waiting(self) -> bool:
        """The running turn waits for its side to come back (see :meth:`start`)."""
        return self.started is not None and not self._sent and self.started > self._announced

    @property
    def sent_after(self) -> float | None:
        """Seconds from the running turn's announcement to its send to the side's stream
        (None: not sent, or not running)."""
        if self.started is None or not self._sent:
            return None
        return self.started - self._announced

    def offered(self, now: float) -> float:
        """The turn waiting for its side (see :meth:`start`) is offered to the side's
        reconnected stream at ``now``: its time runs from then, or from when the stream
        sends it (:meth:`sent`). Returns the deadline."""
        if self.waiting:
            self._announced = self.started = now
        return self.deadline

    def delay(self, seconds: float) -> float:
        """The running turn's time stood still for ``seconds`` (the server could not serve):
        it is not charged for them. Returns the deadline."""
        if self.started is not None:
            self.started += seconds
            self._announced += seconds
        return self.deadline

    def sent(self, at: float, most: float) -> float:
        """The turn reached the side's stream at ``at``: its time runs from then, the first
        time this is said for the turn, but from at most ``most`` seconds (or the start's
        ``wait``, if longer) after it was announced (a side that holds up its own stream
        gains no more). Returns the deadline."""
        if self.started is not None and not self._sent:
            self._sent = True
            most = max(most, self.started - self._announced)
            self.started = min(max(self._announced, at), self._announced + most)
        return self.deadline

    def in_time(self, arrived: float) -> bool:
        """Did a play that arrived at ``arrived`` beat the deadline?"""
        return arrived < self.deadline

    def charge(self, arrived: float) -> int:
        """Stop the clock for a play that arrived at ``arrived``: the bank pays what went
        beyond the turn time; returns the time used in ms (never negative)."""
        assert self.started is not None, "the clock is not running"
        used = round(max(0.0, arrived - self.started) * 1000)
        over = used - self.turn_time_ms
        if over > 0:
            self.bank_ms = max(0, self.bank_ms - over)
        self.started = None
        return used

    def stop(self) -> None:
        """Stop without charging (the turn ended by timeout, resignation or the game's end)."""
        self.started = None

    def reading(self, now: float) -> tuple[int, int]:
        """``(remaining_ms, bank_ms)`` as shown at ``now``: the time left for the turn
        (turn time plus bank) and what is left of the bank."""
        if self.started is None:
            return self.turn_time_ms + self.bank_ms, self.bank_ms
        spent = max(0.0, now - self.started) * 1000  # (a turn waiting for its seat: none)
        remaining = max(0, int(self.turn_time_ms + self.bank_ms - spent))
        bank = max(0, int(self.bank_ms - max(0.0, spent - self.turn_time_ms)))
        return remaining, bank

    @classmethod
    def from_reading(cls, remaining_ms: int, bank_ms: int, received: float) -> Clock:
        """A running clock that reads ``(remaining_ms, bank_ms)`` at ``received``: the SDK's
        view of a side's clock from a GameState, counting down from when it arrived."""
        bank = min(bank_ms, remaining_ms)
        return cls(turn_time_ms=remaining_ms - bank, bank_ms=bank, started=received)
