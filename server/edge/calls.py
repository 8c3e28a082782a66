"""A public call at the edge, whatever carries it (gRPC: server.edge.services; HTTP JSON:
server.edge.web.api): its caller checked first (server.edge.callers), its request's bytes
forwarded to the core on the link, the answer's bytes passed back, or :class:`Refused`
with the status code the core (or the edge) refused it with.

A play is stamped by its transport as soon as the whole request has been read, and
:meth:`Calls.submit_play` writes it to the link in the same step, so its clock is charged
up to then only, however it came. Streams (SubscribeGame, SubscribePlayer, and the Play
stream over gRPC) follow a tap of the core (server.edge.streams); while one is open, and
while a play or a resignation waits for the game, the call holds a place in its caller's
quota (the operator has none).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import grpc
from google.protobuf.message import DecodeError

from nardy.v1 import arbiter_pb2 as api
from server import link
from server.edge.callers import Credentials, Gate, Refused, Who
from server.edge.link import CoreLink
from server.edge.metrics import EdgeMetrics
from server.edge.streams import BEAT, END, Follow
from server.link import link_pb

ARBITER = "nardy.v1.ArbiterService"
SUBMIT_PLAY = f"/{ARBITER}/SubmitPlay"
STATUS = {code.value[0]: code for code in grpc.StatusCode}
IN_MEMORY = link_pb.WhoRequest(store=False).SerializeToString()
IN_STORE = link_pb.WhoRequest(store=True).SerializeToString()

Write = Callable[[bytes], Awaitable[None]]
# how a transport tells that a call is over, its answer gone: ended(do) runs do() then
Ended = Callable[[Callable[[], None]], None]


class Core:
    """The link to the core as it is now (a restarted core is a new link)."""

    def __init__(self) -> None:
        self.link = CoreLink()


def refused(reply: link_pb.Reply) -> Refused:
    """The core's refusal as the caller gets it (a game run by another instance: with its
    address, for the ``nardy-instance`` trailing metadata)."""
    code = STATUS.get(reply.code, grpc.StatusCode.UNKNOWN)
    return Refused(code, reply.message, reply.instance)


class Calls:
    """Checks, forwards and answers the public calls, for every transport."""

    def __init__(
        self, core: Core, gate: Gate, metrics: EdgeMetrics, heartbeat_s: float = 15.0
    ) -> None:
        self.core = core
        self.gate = gate
        self.metrics = metrics
        self.heartbeat_s = heartbeat_s
        self._readers: set[asyncio.Task] = set()  # Play streams' readers outliving their call

    # -- the caller -------------------------------------------------------------------------
    async def caller(self, credentials: Credentials, *, held: bool = False) -> Who:
        """The caller, its limits charged (Refused if refused). A token the edge has not
        seen yet (and that the server may have issued) is first asked of the core's memory
        (uncharged: a known token has its own budget; with several instances, from its
        peer address's budget of lookups), then of its store, charged to the address."""
        who = self.gate.check(credentials)
        if who.identify:
            await self.ask(who, link.WHO, IN_MEMORY)
            if who.identify:  # not in memory
                self.gate.charge(who)
                await self.ask(who, link.WHO, IN_STORE)
            self.gate.charge(who)
        if held:
            self.gate.hold(who)
        return who

    async def ask(self, who: Who, method: str, request: bytes, **options) -> link_pb.Reply:
        """The core's reply to a call (Refused if the core refused it)."""
        future = self.core.link.call(method, request, who.caller, identify=who.identify, **options)
        return await self.answer(who, future)

    async def answer(self, who: Who, future: asyncio.Future) -> link_pb.Reply:
        reply = await future
        self.gate.answered(who, reply)
        if reply.code:
            raise refused(reply)
        return reply

    # -- unary ------------------------------------------------------------------------------
    async def unary(
        self,
        credentials: Credentials,
        method: str,
        request: bytes,
        *,
        player: bool = False,
        ended: Ended | None = None,
    ) -> bytes:
        """A call answered as the core answers it. It holds a place in its caller's quota
        while it waits and, with ``ended`` (how the transport tells that the call is over),
        until its answer has gone: a caller that does not read its answers cannot pile up
        calls answered but not sent. ``player``: a registered player's call only, refused
        without a token and with the operator's (a seat's is left to the core)."""
        who = await self.caller(credentials)
        if player and credentials.token is None:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, "this call needs your player token")
        if player and who.operator:
            raise Refused(grpc.StatusCode.PERMISSION_DENIED, "not with the operator's token here")
        self.gate.hold(who)
        try:
            body = (await self.ask(who, method, request)).body
        finally:
            self._release(who, ended)
        self.gate.limiter.charge_answer(who.key, len(body))  # (a page of 500 games: ~50)
        return body

    def _release(self, who: Who, ended: Ended | None) -> None:
        """Give back ``who``'s place now, or once the call has ended (``ended``)."""
        if ended is None:
            self.gate.release(who)
        else:
            ended(lambda: self.gate.release(who))

    async def submit_play(
        self, credentials: Credentials, request: bytes, arrival: float, ended: Ended | None = None
    ) -> bytes:
        """A play stamped ``arrival`` (``time.perf_counter()`` as its transport read the
        whole request, just before this call): written to the link in this step, unless
        its token must be checked first (fences wait for it meanwhile)."""
        core = self.core.link
        unwritten = core.stamped(arrival)
        try:
            who = await self.caller(credentials, held=True)
            sent = sent_at(core, request)
            future = core.call(SUBMIT_PLAY, request, who.caller, arrival=arrival, sent=sent)
        finally:
            core.written(unwritten)
        try:
            return (await self.answer(who, future)).body
        finally:
            self._release(who, ended)

    # -- streams ----------------------------------------------------------------------------
    async def follow(
        self,
        credentials: Credentials,
        method: str,
        request: bytes,
        kind: str,
        write: Write,
        *,
        wrap: Callable[[bytes], bytes] | None = None,
        plays: Callable[[Who, str, Follow], Awaitable[None]] | None = None,
        opened: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Open a stream on the core (``kind``: "game" or "player") and ``write`` what its
        tap tells until it ends (Refused if it cannot open, or the core went away).
        ``wrap``: each event as the transport sends it; ``plays`` (a Play stream): a
        coroutine function answering its plays into the stream, written unwrapped;
        ``opened``: called once the core has opened it, before anything is written."""
        who = await self.caller(credentials, held=True)
        follow = Follow(self.heartbeat_s)
        core = self.core.link
        tap = link_pb.Opened()
        reader = None
        streams, counted = self.metrics.streams.labels(kind), False
        try:
            async with self.gate.open_stream(who):
                reply = await self.ask(who, method, request, follower=follow)
                tap = link_pb.Opened.FromString(reply.body)
                streams.inc()
                counted = True
                # a replay reads, decodes and encodes every event: each message beyond
                # the first counts as a request
                self.gate.limiter.charge(who.key, max(0, len(tap.backlog) - 1))
            if opened is not None:
                await opened()
            if plays is not None:
                reader = asyncio.create_task(plays(who, tap.game_id, follow))
            await self._write(core, tap, follow, kind, write, wrap or _same)
        finally:
            follow.cancel()
            if reader is not None and not reader.done():
                # Not cancelled: a task cancelled in the middle of a grpc.aio read leaks
                # that read's native memory. Its read ends with the call, and a reader
                # drops what it reads once its stream has ended.
                self._readers.add(reader)
                reader.add_done_callback(self._readers.discard)
            if tap.tap:
                core.leave(tap.tap, follow)
            if counted:  # (after its end is written to the core)
                streams.dec()
            self.gate.release(who)

    async def _write(
        self,
        core: CoreLink,
        opened: link_pb.Opened,
        follow: Follow,
        kind: str,
        write: Write,
        wrap: Callable[[bytes], bytes],
    ) -> None:
        for message in opened.backlog:
            await follow.send(write, wrap(message))
        if opened.turn:  # the seat's turn, waiting for it to come back: its clock runs now
            core.sent(opened.game_id, opened.turn, time.perf_counter())
        follow.sent()
        if not opened.tap:
            return  # (a game already over: its backlog is all)
        seq = opened.seq
        while (item := await follow.next()) is not END:
            turn = 0
            if item is BEAT:
                message = await self._beat(core, opened.tap, seq, kind)
                if message is None:
                    continue
                message = wrap(message)
            elif type(item) is bytes:  # a Play stream's answer
                message = item
            else:
                message, turn, told_seq = item
                seq = told_seq or seq
                message = wrap(message)
            if turn:  # the seat's turn: its clock runs from now
                core.sent(opened.game_id, turn, time.perf_counter())
            await follow.send(write, message)
        if follow.behind:
            raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, follow.error or "")
        if follow.error is not None and core.lost.is_set():
            raise Refused(grpc.StatusCode.UNAVAILABLE, follow.error)

    async def _beat(self, core: CoreLink, tap: int, seq: int, kind: str) -> bytes | None:
        if kind == "player":
            return api.PlayerEvent(type=api.PLAYER_EVENT_TYPE_HEARTBEAT).SerializeToString()
        request = link_pb.HeartbeatRequest(tap=tap, seq=seq).SerializeToString()
        reply = await core.call(link.HEARTBEAT, request, link_pb.Caller())
        return None if reply.code else reply.body


def sent_at(core: CoreLink, request: bytes) -> float:
    """When the edge handed a play's seat its turn (0.0: not known)."""
    try:
        play = api.SubmitPlayRequest.FromString(request)
    except DecodeError:
        return 0.0  # (the core refuses it)
    return core.sent_at(play.game_id, play.turn_id)


def _same(message: bytes) -> bytes:
    return message


__all__ = ["Calls", "Core", "refused", "sent_at"]
