"""``nardy.v1.ArbiterService`` on grpc.aio: requests in, core calls over the bridge, replies out."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import ipaddress
import logging
import math
import time
import weakref
from collections.abc import AsyncIterator
from functools import partial
from urllib.parse import unquote

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from nardy import wire
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as ladder_pb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.bridge import CLOSE, MAX_BACKLOG, Bridge, Encoded, received
from server.core import views
from server.core.arbiter import Arbiter, Caller, MatchSpec, Note, PlayerNote, clip
from server.core.journal import Event, EventType
from server.core.ladder import Ladder, LadderOptions
from server.errors import INSTANCE_KEY, ArbiterError, Code, Elsewhere
from server.fronted import Front
from server.intercept import MESSAGE as UNPARSABLE_MESSAGE
from server.intercept import UNPARSABLE
from server.limits import RateLimiter, StreamQuota
from server.metrics import Metrics

log = logging.getLogger("nardy.server")

HEARTBEAT_S = 15.0
RELOAD_S = 1.0  # several instances: standings read a ladder's books back this often at most
MAX_NOTATION = 200
TOO_FAST = "too many requests; slow down and retry"
PLAYER_EVENT = {
    Note.GAME_ASSIGNED: api.PLAYER_EVENT_TYPE_GAME_ASSIGNED,
    Note.GAME_OVER: api.PLAYER_EVENT_TYPE_GAME_OVER,
    Note.HEARTBEAT: api.PLAYER_EVENT_TYPE_HEARTBEAT,
    Note.SERVER_SHUTDOWN: api.PLAYER_EVENT_TYPE_SERVER_SHUTDOWN,
    Note.CHALLENGE: api.PLAYER_EVENT_TYPE_CHALLENGE,
}


def peer_address(context: grpc.aio.ServicerContext, front: Front | None = None) -> str:
    """The caller's host without its port ("ipv4:1.2.3.4:5678" -> "1.2.3.4"), for limits:
    an IPv6 host counts by its /64 (one subscriber's usual share: 2^64 addresses, else a
    budget each), an IPv4-mapped one as IPv4; behind a ``front``, the peer it vouches for
    (server.fronted)."""
    peer = unquote((context.peer() if front is None else front.peer(context)) or "")
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer
    host = rest.rpartition(":")[0].strip("[]")
    if kind == "ipv6":
        with contextlib.suppress(ValueError):
            ip = ipaddress.IPv6Address(host.partition("%")[0])
            mapped = ip.ipv4_mapped
            return str(mapped) if mapped else str(ipaddress.IPv6Network((ip, 64), strict=False))
    return host


def too_many(streams: StreamQuota) -> str:
    """The refusal of a call over its caller's quota of streams and waiting calls."""
    return f"at most {streams.most} streams and waiting calls per caller; end some first"


def held_streams(streams: StreamQuota, front: Front | None = None):
    """Wraps a handler of another service (health's Watch, reflection) so that each of its
    streams holds a place in its peer address's quota (the one anonymous calls share)
    while it is open; grpc refuses everyone once the server holds its limit of calls."""

    def wrap(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        if not handler.response_streaming:
            return handler
        kind = "stream_stream" if handler.request_streaming else "unary_stream"
        behaviour = getattr(handler, kind)

        async def place(context) -> str:
            key = Caller(None, peer_address(context, front)).key
            if not streams.take(key):
                await context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    too_many(streams),
                )
            return key

        if inspect.isasyncgenfunction(behaviour):

            async def held(request, context):
                key = await place(context)
                try:
                    async for item in behaviour(request, context):
                        yield item
                finally:
                    streams.give_back(key)
        else:  # it writes with context.write

            async def held(request, context):
                key = await place(context)
                try:
                    return await behaviour(request, context)
                finally:
                    streams.give_back(key)

        return handler._replace(**{kind: held})

    return wrap


def bad_enum(msg: Message) -> str | None:
    """The first enum field (at any depth) holding a value its enum does not define."""
    for field, value in msg.ListFields():
        if field.type == FieldDescriptor.TYPE_ENUM:
            values = value if field.is_repeated else [value]
            if any(v not in field.enum_type.values_by_number for v in values):
                return field.name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated:
                for item in value:
                    if (name := bad_enum(item)) is not None:
                        return name
            elif (name := bad_enum(value)) is not None:
                return f"{field.name}.{name}"
    return None


def bearer(context: grpc.aio.ServicerContext) -> str | None:
    """The token from ``authorization: Bearer <token>`` metadata, if any."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str):
            scheme, _, token = value.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def malformed_authorization(context: grpc.aio.ServicerContext) -> bool:
    """True when ``authorization`` metadata is sent but is not ``Bearer <token>`` (a bare
    token, another scheme): refused, never served as an anonymous caller's call."""
    sent = any(key == "authorization" for key, _ in context.invocation_metadata() or ())
    return sent and bearer(context) is None


async def _abort(context: grpc.aio.ServicerContext, error: ArbiterError) -> None:
    """End the call with the refusal's status; a game run by another instance also gets
    that instance's address in the ``nardy-instance`` trailing metadata."""
    where = ((INSTANCE_KEY, error.address),) if isinstance(error, Elsewhere) else ()
    await context.abort(
        getattr(grpc.StatusCode, error.code.value), clip(error.message), trailing_metadata=where
    )


async def refuse(
    context: grpc.aio.ServicerContext, metrics: Metrics, code: grpc.StatusCode, message: str
) -> None:
    """Abort the call with ``code``, counted in the refusals metric."""
    metrics.refusals.labels(code.name).inc()
    await context.abort(code, message)


BEAT = object()  # queue item: the stream has been idle for the heartbeat interval


class Heartbeat:
    """Puts BEAT on a stream's queue once nothing was sent for ``every`` seconds. One
    timer per stream, re-armed only when it fires: a message costs a clock read, not a
    task and a timer of its own as ``asyncio.wait_for`` would (see turn-cost.md)."""

    def __init__(self, queue: asyncio.Queue, every: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue = queue
        self.every = every
        self.last = self.loop.time()
        self._timer = self.loop.call_later(every, self._due)

    def sent(self) -> None:
        self.last = self.loop.time()

    def _due(self) -> None:
        now = self.loop.time()
        if now >= self.last + self.every - 1e-3:
            if self.queue.empty():  # (not idle: something waits to be sent)
                self.queue.put_nowait(BEAT)
            self.last = now
        self._timer = self.loop.call_later(self.last + self.every - now, self._due)

    def cancel(self) -> None:
        self._timer.cancel()


class Limited:
    """Every call is checked before it crosses the bridge: its token is verified, then the
    rate limit of the verified identity (or of the peer address, for calls without a valid
    token) is charged, then every enum field of the request must hold a defined value."""

    def __init__(
        self, arbiter: Arbiter, bridge: Bridge, limiter: RateLimiter, front: Front | None = None
    ) -> None:
        self.arbiter = arbiter
        self.bridge = bridge
        self.limiter = limiter
        self.front = front  # the core is behind a front process: trust only what it vouches

    async def _caller(self, context, request: Message) -> Caller:
        token = bearer(context)
        if token is None and malformed_authorization(context):
            await refuse(
                context,
                self.arbiter.metrics,
                grpc.StatusCode.UNAUTHENTICATED,
                "the authorization metadata must be 'Bearer <token>'",
            )
        caller = Caller(self.arbiter.principal(token), peer_address(context, self.front))
        if not self.limiter.allow(caller.key):
            await refuse(
                context,
                self.arbiter.metrics,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                TOO_FAST,
            )
        if token is not None and caller.principal is None:
            # a seat token of a match that ended a while ago is known to the store only
            # (and, several instances, a token another instance issued)
            try:
                principal = await self.bridge.call(self.arbiter.stored_principal, token)
            except ArbiterError as e:
                await _abort(context, e)
            caller = Caller(principal, caller.address)
        if token is not None and caller.principal is None:
            # on every call, also those that need no token: a bot with a wrong token is
            # told so instead of being served as an anonymous caller
            await refuse(
                context, self.arbiter.metrics, grpc.StatusCode.UNAUTHENTICATED, "unknown token"
            )
        if (name := bad_enum(request)) is not None:
            await refuse(
                context,
                self.arbiter.metrics,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{name}: not a value this server knows",
            )
        return caller

    async def _call(
        self, context, request: Message, fn, *args, caller: bool = False, who: Caller | None = None
    ):
        """Check the call (unless ``who`` was checked already), then run ``fn(*args)`` in the
        core (``fn(caller, *args)`` when ``caller``); a refusal becomes the gRPC status it
        names."""
        who = who or await self._caller(context, request)
        if caller and who.principal is None and bearer(context):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown token")
        try:
            return await self.bridge.call(fn, *((who, *args) if caller else args))
        except ArbiterError as e:
            self.arbiter.metrics.refusals.labels(e.code.value).inc()
            await _abort(context, e)


class ArbiterService(Limited, api_grpc.ArbiterServiceServicer):
    def __init__(
        self,
        arbiter: Arbiter,
        bridge: Bridge,
        limiter: RateLimiter,
        streams: StreamQuota,
        heartbeat_s: float = HEARTBEAT_S,
        front: Front | None = None,
    ) -> None:
        super().__init__(arbiter, bridge, limiter, front)
        self.heartbeat_s = heartbeat_s
        self.streams = streams

    @contextlib.asynccontextmanager
    async def _held(self, context, request: Message) -> AsyncIterator[Caller]:
        """Check a call and hold its place in its caller's quota while it runs (streams,
        and plays and resignations, which may wait on the game: a sealed play for its
        pair's other game); the operator has no quota. RESOURCE_EXHAUSTED when the caller
        holds too many."""
        who = await self._caller(context, request)
        counted = not who.admin
        if counted and not self.streams.take(who.key):
            await refuse(
                context,
                self.arbiter.metrics,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                too_many(self.streams),
            )
        try:
            yield who
        finally:
            if counted:
                self.streams.give_back(who.key)

    async def RegisterPlayer(self, request, context):
        player_id, token = await self._call(
            context,
            request,
            self.arbiter.register_player,
            request.name,
            request.bot,
            request.owner,
            caller=True,
        )
        return api.RegisterPlayerResponse(player_id=player_id, token=token)

    async def CreateMatch(self, request, context):
        o = request.options
        color = request.first_seat_color
        spec = MatchSpec(
            options=wire.options_of(o),
            target=max(1, request.target_points),
            first=(request.first.player_name, request.first.display_name),
            second=(request.second.player_name, request.second.display_name),
            seed=request.seed if request.HasField("seed") else None,
            terms=wire.terms_of(o),
            start_timeout_ms=request.start_timeout_ms or wire.DEFAULT_START_TIMEOUT_MS,
            start_position=request.start_position,
            first_seat_white=None if not color else color == pb.COLOR_WHITE,
            dice_script=tuple(request.dice),
        )
        match, t1, t2 = await self._call(
            context, request, self.arbiter.create_match, spec, caller=True
        )
        return api.CreateMatchResponse(
            match_id=match.id,
            game_id=match.current.id,
            dice_commitment=match.current.roller.commitment,
            first_seat_token=t1,
            second_seat_token=t2,
            challenge=match.challenged is not None,
        )

    async def AcceptChallenge(self, request, context):
        match = await self._call(
            context, request, self.arbiter.accept_challenge, bearer(context), request.match_id
        )
        return api.AcceptChallengeResponse(game_id=match.current.id)

    async def DeclineChallenge(self, request, context):
        await self._call(
            context, request, self.arbiter.decline_challenge, bearer(context), request.match_id
        )
        return api.DeclineChallengeResponse()

    async def ListChallenges(self, request, context):
        return await self._call(context, request, challenges_pb, self.arbiter, bearer(context))

    async def GetGame(self, request, context):
        game, seat = await self._call(
            context, request, self.arbiter.view, bearer(context), request.game_id
        )

        def view() -> api.GetGameResponse:  # in the trio thread: one consistent moment
            color = None if seat is None else game.color_of(seat)
            return api.GetGameResponse(
                state=views.state_pb(game.card, game.snapshot(), color), last_seq=game.last_seq
            )

        return await self.bridge.call(view)

    async def ListGames(self, request, context):
        """Answered from the catalogue in a worker thread, encoded there: no core work,
        and the transport's loop (where plays are stamped) is not held up by a big page."""
        await self._caller(context, request)
        catalogue = self.arbiter.catalogue

        def page() -> Encoded:
            games, token = catalogue.page(
                request.status, request.ladder, request.limit, request.page_token
            )
            return Encoded(
                api.ListGamesResponse(games=games, next_page_token=token).SerializeToString()
            )

        try:
            return await asyncio.to_thread(page)
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    async def SubscribeGame(
        self, request, context, queue: asyncio.Queue | None = None
    ) -> AsyncIterator[Encoded | api.PlayResponse]:
        """(``queue``: a Play stream's, where its answers come too, sent as they come.)"""
        async with self._held(context, request) as who:
            queue = asyncio.Queue() if queue is None else queue
            sink = self.bridge.sink(queue)

            async def subscribe(*args):  # in the trio thread
                game, seat, backlog, live = await self.arbiter.subscribe_game(*args)
                # Live events are encoded in the trio thread from here on. None reached the
                # sink before: the game registers it last, without waiting.
                sink.encode = partial(encoded_event, game.card, seat)
                return game, seat, backlog, live

            game, seat, backlog, live = await self._call(
                context,
                request,
                subscribe,
                bearer(context),
                request.game_id,
                request.after_seq,
                request.from_start,
                sink,
                request.client_seed,
                request.filter == api.EVENT_FILTER_OWN_TURNS,
                who=who,
            )
            # a replay reads, decodes and encodes every event: each message beyond the
            # first counts as a request
            self.limiter.charge(who.key, max(0, len(backlog) - 1))
            card = game.card
            seq = backlog[-1].seq if backlog else request.after_seq
            streams = self.arbiter.metrics.streams.labels("game")
            streams.inc()
            idle = Heartbeat(queue, self.heartbeat_s)
            try:
                for event in backlog:
                    yield encoded_event(card, seat, event)
                backlog = event = None  # not held for the stream's life (an idle game's memory)
                idle.sent()
                while live:
                    item = await queue.get()
                    if item is BEAT:
                        snap = await self.bridge.call(game.snapshot)
                        beat = Event(seq, EventType.HEARTBEAT, time.time(), snap)
                        yield encoded_event(card, seat, beat)
                        idle.sent()
                        continue
                    if item is CLOSE:
                        return
                    if type(item) is not Encoded:  # a Play stream's answer
                        yield item
                        continue
                    seq = item.seq
                    if item.turn is not None and self.front is None:  # (else the front tells)
                        # this seat's turn: its clock runs from the send
                        item.sent = partial(self._turn_sent, game.id, item.turn)
                    yield item
                    idle.sent()
            finally:
                idle.cancel()
                streams.dec()
                if live:
                    self.bridge.call_soon(self.arbiter.unsubscribe_game, game.id, sink, seat)

    def _turn_sent(self, game_id: str, turn: int) -> None:
        """Called as a TURN_STARTED's bytes are handed to the transport (server.core.clock)."""
        self.bridge.call_soon(self.arbiter.turn_sent, game_id, turn, self.arbiter.arrivals.now())

    async def SubscribePlayer(self, request, context) -> AsyncIterator[api.PlayerEvent]:
        async with self._held(context, request) as who:
            queue: asyncio.Queue = asyncio.Queue()
            token = bearer(context)
            sink = self.bridge.sink(queue)
            backlog = await self._call(
                context, request, self.arbiter.subscribe_player, token, sink, who=who
            )
            streams = self.arbiter.metrics.streams.labels("player")
            streams.inc()
            idle = Heartbeat(queue, self.heartbeat_s)
            try:
                for note in backlog:
                    yield player_event(note)
                idle.sent()
                while True:
                    item = await queue.get()
                    if item is CLOSE:
                        return
                    yield (
                        api.PlayerEvent(type=api.PLAYER_EVENT_TYPE_HEARTBEAT)
                        if item is BEAT
                        else player_event(item)
                    )
                    idle.sent()
            finally:
                idle.cancel()
                streams.dec()
                self.bridge.call_soon(self.arbiter.unsubscribe_player, who.principal, sink)

    async def SubmitPlay(self, request, context):
        try:
            notation, end = _play_text(request)
        except ArbiterError as e:
            await refuse(context, self.arbiter.metrics, grpc.StatusCode.INVALID_ARGUMENT, e.message)
        # Stamped on arrival (as its request was received: server.bridge.AcceptAhead, else
        # here; or at the front): the side is charged up to then,
        # however long the core takes.
        at, sent = (received(), None) if self.front is None else self.front.arrival(context)
        arrival = self.arbiter.arrivals.stamp(request.game_id, at, sent)
        try:
            async with self._held(context, request) as who:
                answer = await self._call(
                    context,
                    request,
                    self.arbiter.submit_play,
                    bearer(context),
                    request.game_id,
                    request.turn_id,
                    notation,
                    end,
                    arrival,
                    who=who,
                )
        finally:
            self._judged(arrival)
        return played_pb(answer)

    def _judged(self, arrival) -> None:
        if self.arbiter.arrivals.settle(arrival):  # refused before it reached the core
            self.bridge.call_soon(self.arbiter.arrival_settled, arrival)

    async def Play(self, request_iterator, context) -> AsyncIterator[Encoded | api.PlayResponse]:
        requests = aiter(request_iterator)
        first = await anext(requests, None)
        if self.front is not None:  # (the front stamps calls, not a stream's messages)
            await refuse(
                context,
                self.arbiter.metrics,
                grpc.StatusCode.UNIMPLEMENTED,
                "this server runs behind a front: use SubscribeGame and SubmitPlay",
            )
        if first is None or first is UNPARSABLE or first.WhichOneof("kind") != "subscribe":
            await refuse(
                context,
                self.arbiter.metrics,
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first message of a Play stream must be `subscribe`",
            )
        subscription = api.SubscribeGameRequest()
        subscription.CopyFrom(first.subscribe)
        subscription.filter = api.EVENT_FILTER_OWN_TURNS
        game_id, token = subscription.game_id, bearer(context)
        who = await self._caller(context, first)
        queue: asyncio.Queue = asyncio.Queue()  # events and answers, in the order they come

        async def answer_plays() -> None:
            try:
                async for request in requests:
                    if queue.qsize() >= MAX_BACKLOG:  # answers sent, never read: end it
                        log.warning("a Play stream fell %d messages behind; ending it", MAX_BACKLOG)
                        queue.put_nowait(CLOSE)
                        return
                    queue.put_nowait(await self._stream_play(request, game_id, token, who))
            except Exception as e:  # (the caller went away mid-message: its stream ends too)
                log.debug("a Play stream's requests ended with %r", e)

        plays = asyncio.create_task(answer_plays())
        try:
            async for item in self.SubscribeGame(subscription, context, queue):
                yield _in_play_response(item) if type(item) is Encoded else item
        finally:
            plays.cancel()

    async def _stream_play(self, request, game_id: str, token, who: Caller) -> api.PlayResponse:
        """One message after a Play stream's first: answered, or refused without ending the
        stream."""
        turn_id = 0 if request is UNPARSABLE else request.play.turn_id
        arrival = None
        try:
            if request is UNPARSABLE:
                raise ArbiterError(Code.INVALID_ARGUMENT, UNPARSABLE_MESSAGE)
            if request.WhichOneof("kind") != "play":
                raise ArbiterError(Code.INVALID_ARGUMENT, "after `subscribe`, send plays only")
            if request.play.game_id not in ("", game_id):
                raise ArbiterError(Code.INVALID_ARGUMENT, "a Play stream plays its own game only")
            if not self.limiter.allow(who.key):
                raise ArbiterError(Code.RESOURCE_EXHAUSTED, TOO_FAST)
            notation, end = _play_text(request.play)
            arrival = self.arbiter.arrivals.stamp(game_id)  # as it is read: on arrival
            answer = await self.bridge.call(
                self.arbiter.submit_play, token, game_id, turn_id, notation, end, arrival
            )
        except ArbiterError as e:
            self.arbiter.metrics.refusals.labels(e.code.value).inc()
            code = getattr(grpc.StatusCode, e.code.value).value[0]
            refused = api.PlayRefused(turn_id=turn_id, code=code, message=clip(e.message))
            return api.PlayResponse(refused=refused)
        finally:
            if arrival is not None:
                self._judged(arrival)
        return api.PlayResponse(played=played_pb(answer))

    async def Resign(self, request, context):
        async with self._held(context, request) as who:
            result = await self._call(
                context, request, self.arbiter.resign, bearer(context), request.game_id, who=who
            )
        return api.ResignResponse(result=wire.result_pb(result))


def _play_text(request: api.SubmitPlayRequest) -> tuple[str | None, str | None]:
    """A play's (notation, end position), one of them given; INVALID_ARGUMENT if neither
    is, or if it is too long."""
    which = request.WhichOneof("play")
    text = request.notation if which == "notation" else request.end_position
    if which is None or len(text) > MAX_NOTATION:
        raise ArbiterError(
            Code.INVALID_ARGUMENT, "give the play as notation or end_position (at most 200 chars)"
        )
    return (text, None) if which == "notation" else (None, text)


def _in_play_response(event: Encoded) -> Encoded:
    """A Play stream's message carrying ``event`` (told as sent as the event would be)."""
    wrapped = Encoded(views.play_event_wire(event.data), event.seq, event.turn)
    wrapped.sent = event.sent
    return wrapped


def played_pb(answer) -> api.SubmitPlayResponse:
    return api.SubmitPlayResponse(
        notation=answer.notation,
        end_position=answer.end_position,
        duplicate=answer.duplicate,
        used_ms=answer.used_ms,
    )


def challenges_pb(arbiter: Arbiter, token: str | None) -> api.ListChallengesResponse:
    """Runs in the trio thread: the challenges waiting for the caller's answer."""
    out = api.ListChallengesResponse()
    for match in arbiter.list_challenges(token):
        card = match.current.card
        challenger = next(s for s in card.seats if s.player_id != match.challenged)
        out.challenges.append(
            api.Challenge(
                match_id=match.id,
                game_id=card.game_id,
                challenger=views.player_pb(challenger),
                target_points=card.target,
                options=wire.options_pb(card.options, card.terms),
            )
        )
    return out


def encoded_event(card, seat: int | None, event: Event) -> Encoded:
    """``event`` as ``seat`` (None: a spectator) sees it, ready for the wire."""
    data, offers = views.event_wire(card, event, seat)
    return Encoded(data, event.seq, event.snapshot.turn_id if offers else None)


def player_event(note: PlayerNote) -> api.PlayerEvent:
    msg = api.PlayerEvent(type=PLAYER_EVENT[note.type])
    game = note.game
    if game is not None:
        msg.game_id = game.game_id
        msg.match_id = game.match_id
        msg.color = wire.color_pb(note.color)
        msg.opponent.CopyFrom(views.player_pb(game.seats[1 - note.seat]))
    return msg


class LadderService(Limited, ladder_grpc.LadderServiceServicer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._reloaded: dict[str, float] = {}  # ladder -> when its books were read back

    async def CreateLadder(self, request, context):
        o = request.options
        given = {
            "turn_time_ms": o.turn_time_ms,
            "time_bank_ms": o.time_bank_ms,
            "max_games_per_bot": o.max_games_per_bot,
            "illegal_play_limit": o.illegal_play_limit,
            "max_games": o.max_games,
            "max_concurrent_games": o.max_concurrent_games,
            "variant": o.variant,
        }
        # A field left 0 takes LadderOptions' default (the only place defaults are set).
        options = LadderOptions(**{k: v for k, v in given.items() if v})
        ladder, created = await self._call(
            context, request, self.arbiter.create_ladder, bearer(context), request.name, options
        )
        return ladder_pb.CreateLadderResponse(
            name=ladder.name, created=created, options=ladder_options_pb(ladder.options)
        )

    async def JoinLadder(self, request, context):
        await self._call(
            context,
            request,
            self.arbiter.join_ladder,
            bearer(context),
            request.ladder,
            request.ready,
        )
        return ladder_pb.JoinLadderResponse()

    async def GetStandings(self, request, context):
        await self._reload(context, request)
        return await self._call(context, request, standings_pb, self.arbiter, request.ladder)

    async def GetCrosstable(self, request, context):
        await self._reload(context, request)
        return await self._call(context, request, crosstable_pb, self.arbiter, request.ladder)

    async def _reload(self, context, request) -> None:
        """Several instances: the ladder's books as the store has them, the same on every
        instance; read back at most every RELOAD_S per ladder (anyone may ask, and it
        reads every result of the ladder)."""
        if self.arbiter.cluster is None:
            return
        now = time.monotonic()
        if now < self._reloaded.get(request.ladder, -math.inf) + RELOAD_S:
            return
        if request.ladder in self.arbiter.ladders:  # (a name unknown here: asked each time)
            self._reloaded[request.ladder] = now
        await self._call(context, request, self.arbiter.reload_ladders, request.ladder)


def ladder_options_pb(o: LadderOptions) -> ladder_pb.LadderOptions:
    return ladder_pb.LadderOptions(
        turn_time_ms=o.turn_time_ms,
        time_bank_ms=o.time_bank_ms,
        max_games_per_bot=o.max_games_per_bot,
        illegal_play_limit=o.illegal_play_limit,
        max_games=o.max_games,
        max_concurrent_games=o.max_concurrent_games,
        variant=o.variant,
    )


def standings_pb(arbiter: Arbiter, name: str) -> ladder_pb.GetStandingsResponse:
    """Runs in the trio thread: the ladder's rows as a message."""
    ladder = arbiter.ladder(name)
    members = {m.name: m for m in ladder.members.values()}
    owners = {p.name: p.owner for p in arbiter.players.values()}
    out = ladder_pb.GetStandingsResponse(
        ladder=name,
        finished_games=ladder.finished_games(),
        voided_games=ladder.voided,
        games_in_progress=len(ladder.in_progress),
    )
    for rank, row in enumerate(ladder.rows(), 1):
        elo = ladder.elo(row)
        member = members.get(row.name)
        out.rows.append(
            ladder_pb.StandingsRow(
                rank=rank,
                player=pb.Player(name=row.name, bot=True, owner=owners.get(row.name, "")),
                elo=ladder_pb.Interval(value=elo.elo, low=elo.low, high=elo.high),
                skill_mu=ladder.skill.mu(row.name),
                skill_sigma=ladder.skill.sigma(row.name),
                skill_conservative=ladder.skill.conservative(row.name),
                games=row.games,
                wins=row.wins,
                losses=row.losses,
                points_for=row.points_for,
                points_against=row.points_against,
                mars_wins=row.mars_wins,
                mars_losses=row.mars_losses,
                timeouts=row.timeouts,
                disconnects=row.disconnects,
                illegal_play_losses=row.illegal_play_losses,
                avg_move_ms=row.avg_move_ms,
                playing=member.playing if member else 0,
                ready=member.ready if member else False,
            )
        )
    return out


# ladder -> (its books' version, its crosstable); read and written in the trio thread only
_CROSSTABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def crosstable_pb(arbiter: Arbiter, name: str) -> ladder_pb.GetCrosstableResponse:
    """Runs in the trio thread: head-to-head records for every two bots that met, built
    once per change of the ladder's books (for 100 bots that met, 9,900 cells: ~0.1 s)."""
    ladder = arbiter.ladder(name)
    cached = _CROSSTABLES.get(ladder)
    if cached is not None and cached[0] == ladder.books:
        return cached[1]
    table = _CROSSTABLES[ladder] = (ladder.books, _crosstable(ladder))
    return table[1]


def _crosstable(ladder: Ladder) -> ladder_pb.GetCrosstableResponse:
    return ladder_pb.GetCrosstableResponse(
        cells=[
            ladder_pb.CrosstableCell(
                player=me,
                opponent=other,
                wins=c.wins,
                losses=c.losses,
                points_for=c.points_for,
                points_against=c.points_against,
                pairs_lost=c.pairs[0],
                pairs_split=c.pairs[1],
                pairs_won=c.pairs[2],
            )
            for (me, other), c in sorted(ladder.cells.items())
        ]
    )


class AdminService(Limited, admin_grpc.AdminServiceServicer):
    """Operator actions (the admin token)."""

    async def ListPlayers(self, request, context):
        players = await self._call(context, request, self.arbiter.list_players, bearer(context))
        return admin_pb.ListPlayersResponse(
            players=[
                admin_pb.PlayerInfo(
                    player_id=p.id, player=pb.Player(name=p.name, bot=p.bot, owner=p.owner)
                )
                for p in players
            ]
        )

    async def VoidGame(self, request, context):
        game = await self._call(
            context, request, self.arbiter.void_game, bearer(context), request.game_id
        )
        return admin_pb.VoidGameResponse(status=int(game.status))
