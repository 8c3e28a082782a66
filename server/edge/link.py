"""The edge's end of the link (server.link): calls out to the core, its answers, taps and
fences back.

An asyncio protocol on the link's socket: every frame from the core is handled as it is
read, in order. A call is written at once, in the step that makes it (a play's arrival
stamp and its frame go together, so the edge answers a fence as soon as it reads it:
whatever it stamped before is written already). A tap's message goes to every stream
that follows it (server.edge.streams); a stream joins its tap as its opening is read, so
it misses nothing told after its backlog.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from server.edge.limits import REMEMBERED
from server.errors import Code
from server.link import PING, STILL_TICK_S, Frames, a_stop, frame, link_pb

log = logging.getLogger("nardy.edge")

UNREACHABLE = "the server's core is restarting; retry in a moment"
SENT_GAMES = REMEMBERED  # games whose last turn's send is remembered (the oldest forgotten)


class Follower(Protocol):
    """A stream that follows a tap (server.edge.streams)."""

    def told(self, message: bytes, turn_id: int, seq: int) -> None: ...
    def closed(self, error: str | None) -> None: ...


class Tokens(Protocol):
    """What the core tells of tokens (server.edge.callers.Gate)."""

    def tokens_ready(self, tokens: bytes) -> None: ...
    def tokens_issued(self, digests: list[str]) -> None: ...


def unavailable(call_id: int, message: str = UNREACHABLE) -> link_pb.Reply:
    return link_pb.Reply(id=call_id, code=Code.UNAVAILABLE.status, message=message)


class CoreLink(asyncio.Protocol):
    """One connection to the core; :attr:`lost` is set once it is gone."""

    def __init__(
        self, on_lost: Callable[[CoreLink], None] | None = None, tokens: Tokens | None = None
    ) -> None:
        self.transport: asyncio.Transport | None = None
        self.frames = Frames(link_pb.ToEdge)
        self._ids = itertools.count(1)
        self._calls: dict[int, tuple[asyncio.Future, Follower | None]] = {}
        self._taps: dict[int, set[Follower]] = {}
        self.ready = asyncio.Event()
        self.lost = asyncio.Event()
        self.instance = ""  # the core's instance id (several instances on one database)
        self._on_lost = on_lost
        self._tokens = tokens
        # plays stamped and not yet written (their caller's token is being checked)
        self._unwritten: dict[int, float] = {}
        self._fences: list[link_pb.Fence] = []  # fences waiting for those
        # game -> (turn, when its seat was handed it): the side's clock runs from then
        self._sent: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self._awake = 0.0  # when the edge last ran (_mind_stillness)

    # -- asyncio.Protocol ---------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self._awake = time.perf_counter()
        self._tick()

    def _tick(self) -> None:
        if not self.lost.is_set():
            self._mind_stillness()
            asyncio.get_running_loop().call_later(STILL_TICK_S, self._tick)

    def _mind_stillness(self) -> None:
        """Nobody loses on time while the edge could not serve: when it has not run for
        STOOD_STILL_S (its process stopped, the machine suspended, or starved), it tells
        the core, which moves every running turn's clock on by as long. Run every tick and
        before every frame written, so the core hears of a stop before anything the edge
        did after it (a fence's answer, a play stamped since)."""
        now = time.perf_counter()
        gap, self._awake = now - self._awake, now
        if a_stop(gap, log, "edge") and self.transport is not None:
            self.transport.write(frame(link_pb.ToCore(stood_still=link_pb.StoodStill(seconds=gap))))

    def data_received(self, data: bytes) -> None:
        for message in self.frames.feed(data):
            try:
                self._take(message)
            except Exception:  # one bad frame must not stop the others
                log.exception("link: a frame from the core could not be handled")

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()
        calls, self._calls = self._calls, {}
        for call_id, (future, _) in calls.items():
            if not future.done():
                future.set_result(unavailable(call_id))
        taps, self._taps = self._taps, {}
        for followers in taps.values():
            for follower in list(followers):
                follower.closed(UNREACHABLE)
        if self._on_lost is not None:
            self._on_lost(self)

    # -- from the core ------------------------------------------------------------------
    def _take(self, message: link_pb.ToEdge) -> None:
        kind = message.WhichOneof("kind")
        if kind == "tell":
            tell = message.tell
            for follower in list(self._taps.get(tell.tap, ())):
                follower.told(tell.message, tell.turn_id, tell.seq)
        elif kind == "reply":
            self._replied(message.reply)
        elif kind == "fence":
            self._fences.append(message.fence)
            self._due(message.fence)
        elif kind == "close":
            for follower in list(self._taps.pop(message.close.tap, ())):
                follower.closed(None)
        elif kind == "issued":
            if self._tokens is not None:
                self._tokens.tokens_issued(list(message.issued.digests))
        elif kind == "ready":
            self.instance = message.ready.instance
            if self._tokens is not None:
                self._tokens.tokens_ready(message.ready.tokens)
            self.ready.set()

    def _replied(self, reply: link_pb.Reply) -> None:
        future, follower = self._calls.pop(reply.id, (None, None))
        if future is None:
            return
        if follower is not None and not reply.code:  # a stream's opening: join its tap now
            opened = link_pb.Opened.FromString(reply.body)
            if opened.tap:
                if future.cancelled():  # (the caller went away meanwhile)
                    self.leave(opened.tap)
                else:
                    self._taps.setdefault(opened.tap, set()).add(follower)
        if not future.done():
            future.set_result(reply)

    def _fence(self) -> None:
        """Answer the fences whose time has come (the core asks a little ahead) and that no
        unwritten play holds back (a play is written in the step that stamps it, unless its
        token must be checked first)."""
        first = min(self._unwritten.values(), default=float("inf"))
        now = time.perf_counter()
        waiting = []
        for fence in self._fences:
            if fence.before > now or first < fence.before:  # (its own timer: _due)
                waiting.append(fence)
            else:
                sent = self.sent_at(fence.game_id, fence.turn_id)
                self._write(link_pb.ToCore(fenced=link_pb.Fenced(id=fence.id, sent=sent)))
        self._fences = waiting

    def _due(self, fence: link_pb.Fence) -> None:
        """A fence's time: answer it (and any other that may be), or wait until it comes."""
        ahead = fence.before - time.perf_counter()
        if ahead > 0:
            asyncio.get_running_loop().call_later(ahead, self._due, fence)
        else:
            self._fence()

    def stamped(self, at: float) -> int:
        """A play stamped ``at`` that cannot be written yet: fences wait for it
        (:meth:`written`)."""
        key = next(self._ids)
        self._unwritten[key] = at
        return key

    def written(self, key: int) -> None:
        """The play :meth:`stamped` gave ``key`` is written (or refused)."""
        if self._unwritten.pop(key, None) is not None and self._fences:
            self._fence()

    # -- to the core --------------------------------------------------------------------
    def _write(self, message: link_pb.ToCore) -> None:
        if self.transport is not None and not self.lost.is_set():
            self._mind_stillness()
            self.transport.write(frame(message))

    def call(
        self,
        method: str,
        request: bytes,
        caller: link_pb.Caller,
        *,
        arrival: float = 0.0,
        sent: float = 0.0,
        identify: bool = False,
        follower: Follower | None = None,
    ) -> asyncio.Future:
        """Write a call now; the future gets its Reply (UNAVAILABLE if the core goes away).
        With ``follower``: a stream's opening, which joins the tap the reply names."""
        future = asyncio.get_running_loop().create_future()
        call_id = next(self._ids)
        if self.lost.is_set() or not self.ready.is_set():
            future.set_result(unavailable(call_id))
            return future
        self._calls[call_id] = (future, follower)
        call = link_pb.Call(
            id=call_id,
            method=method,
            request=request,
            caller=caller,
            arrival=arrival,
            sent=sent,
            identify=identify,
        )
        self._write(link_pb.ToCore(call=call))
        return future

    def ping(self) -> asyncio.Future:
        """Ask the core whether it answers (the edge's probe): the future gets the Reply."""
        return self.call(PING, b"", link_pb.Caller())

    def leave(self, tap: int, follower: Follower | None = None) -> None:
        """``follower`` no longer follows ``tap``."""
        followers = self._taps.get(tap)
        if follower is not None and followers is not None:
            followers.discard(follower)
            if not followers:
                del self._taps[tap]
        self._write(link_pb.ToCore(leave=link_pb.Leave(tap=tap)))

    def sent(self, game_id: str, turn_id: int, at: float) -> None:
        """A seat's stream was handed the TURN_STARTED of ``turn_id`` at ``at`` (the first
        time counts; the core hears of it with the turn's play, or with a fence)."""
        if self._sent.get(game_id, (None,))[0] != turn_id:
            self._sent[game_id] = (turn_id, at)
            self._sent.move_to_end(game_id)
            if len(self._sent) > SENT_GAMES:
                self._sent.popitem(last=False)

    def sent_at(self, game_id: str, turn_id: int) -> float:
        """When the seat was handed ``turn_id`` of ``game_id`` (0.0: not known here)."""
        turn, at = self._sent.get(game_id, (None, 0.0))
        return at if turn == turn_id else 0.0

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
