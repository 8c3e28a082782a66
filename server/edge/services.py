"""The public gRPC API at the edge: each call checked, forwarded to the core on the link as
the bytes it came as, and its answer passed back as bytes (server.edge.calls, which the web
view's HTTP API shares: the same checks, limits, stamps and answers).

No request is parsed here but a Play stream's messages: the core parses every request and
refuses what is malformed with INVALID_ARGUMENT. A play is stamped as the edge reads it
(SubmitPlay's handler starts, a Play stream's message is read) and written to the link in
the same step, so its clock is charged up to then only. With ``peers`` (``nardy serve
--forward``) a call about a game another instance runs is forwarded to it
(server.edge.peers) instead of refused with its address.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable

import grpc
from google.protobuf.message import DecodeError

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server import link
from server.edge.callers import TOO_FAST, Refused, Who, client_host, grpc_credentials
from server.edge.calls import ARBITER, STATUS, SUBMIT_PLAY, Calls, Core
from server.edge.metrics import EdgeMetrics
from server.edge.peers import Peers, forwarded
from server.edge.streams import Follow, Gone, writer
from server.errors import INSTANCE_KEY, MISSING_TOKEN

log = logging.getLogger("nardy.edge")

LADDER = "nardy.v1.LadderService"
ADMIN = "nardy.v1.AdminService"
SUBSCRIBE_GAME = f"/{ARBITER}/SubscribeGame"
PLAY = f"/{ARBITER}/Play"
UNPARSABLE = "the request is not a valid protobuf message of its type"
PLAY_EVENT, PLAYED = 1, 2  # PlayResponse's fields: event, played
# A Play stream reads its next play only while fewer messages than this wait for its reader:
# plays sent by a client that reads no answers wait in the transport's flow control, not
# in the edge's memory.
UNREAD_ANSWERS = 64

# Methods that are forwarded as they come, answered as the core answers them.
FORWARDED = {
    ARBITER: (
        "RegisterPlayer",
        "CreateMatch",
        "AcceptChallenge",
        "DeclineChallenge",
        "ListChallenges",
        "GetGame",
        "ListGames",
    ),
    LADDER: ("CreateLadder", "JoinLadder", "GetStandings", "GetCrosstable"),
    ADMIN: ("ListPlayers", "VoidGame", "ArchiveGames", "SetRetention", "GetRetention"),
}


class Services:
    """The handlers of the nardy.v1 services, by service and method name."""

    def __init__(
        self,
        calls: Calls,
        metrics: EdgeMetrics,
        play_stream: bool = True,
        peers: Peers | None = None,
    ) -> None:
        self.calls = calls
        self.gate = calls.gate
        self.metrics = metrics
        self.play_stream = play_stream
        self.peers = peers

    def handlers(self) -> dict[str, dict[str, grpc.RpcMethodHandler]]:
        out: dict[str, dict[str, grpc.RpcMethodHandler]] = {}
        for service, names in FORWARDED.items():
            out[service] = {
                name: grpc.unary_unary_rpc_method_handler(self._forward(f"/{service}/{name}"))
                for name in names
            }
        arbiter = out[ARBITER]
        arbiter["SubmitPlay"] = grpc.unary_unary_rpc_method_handler(self.submit_play)
        arbiter["Resign"] = grpc.unary_unary_rpc_method_handler(self._forward(f"/{ARBITER}/Resign"))
        arbiter["SubscribeGame"] = grpc.unary_stream_rpc_method_handler(self.subscribe_game)
        arbiter["SubscribePlayer"] = grpc.unary_stream_rpc_method_handler(self.subscribe_player)
        if self.play_stream:  # (else UNIMPLEMENTED, as from any server that predates it)
            arbiter["Play"] = grpc.stream_stream_rpc_method_handler(self.play)
        return out

    # -- answers --------------------------------------------------------------------------
    async def _refuse(self, context, refusal: Refused) -> None:
        """End the call as refused (a game run by another instance: with its address in
        the ``nardy-instance`` trailing metadata)."""
        self.metrics.refusals.labels(refusal.code.name).inc()
        where = ((INSTANCE_KEY, refusal.instance),) if refusal.instance else ()
        await context.abort(refusal.code, refusal.message, trailing_metadata=where)

    def _elsewhere(self, refusal: Refused, context) -> str | None:
        """The instance to forward a refused call to: the one running its game, when
        calls are forwarded and this one was not forwarded here."""
        if refusal.instance and self.peers is not None and not forwarded(context):
            return refusal.instance
        return None

    def _credentials(self, context):
        return grpc_credentials(context, self.gate.trusted)

    def _client(self, context) -> str:
        return client_host(context, self.gate.trusted)

    # -- unary ----------------------------------------------------------------------------
    def _forward(self, method: str) -> Callable:
        async def handler(request: bytes, context) -> bytes:
            try:
                credentials = self._credentials(context)
                return await self.calls.unary(credentials, method, request, ended=_ended(context))
            except Refused as r:
                return await self._forward_or_refuse(context, r, method, request)

        return handler

    async def submit_play(self, request: bytes, context) -> bytes:
        arrival = time.perf_counter()  # first: the side is charged up to here
        try:
            credentials = self._credentials(context)
            return await self.calls.submit_play(credentials, request, arrival, _ended(context))
        except Refused as r:
            return await self._forward_or_refuse(context, r, SUBMIT_PLAY, request)

    async def _forward_or_refuse(self, context, refusal: Refused, method: str, request: bytes):
        address = self._elsewhere(refusal, context)
        if address is None:
            await self._refuse(context, refusal)
        assert self.peers is not None
        caller, client = context.invocation_metadata(), self._client(context)
        try:
            return await self.peers.unary(
                address, method, request, caller, client, context.time_remaining()
            )
        except Refused as r:
            await self._refuse(context, r)

    # -- streams --------------------------------------------------------------------------
    async def subscribe_game(self, request: bytes, context) -> None:
        def elsewhere(address: str) -> AsyncIterator[bytes]:
            assert self.peers is not None
            caller, client = context.invocation_metadata(), self._client(context)
            return self.peers.stream(address, SUBSCRIBE_GAME, request, caller, client)

        await self._follow(context, SUBSCRIBE_GAME, request, "game", elsewhere=elsewhere)

    async def subscribe_player(self, request: bytes, context) -> None:
        await self._follow(context, f"/{ARBITER}/SubscribePlayer", request, "player")

    async def _follow(
        self, context, method: str, request: bytes, kind: str, elsewhere=None, **options
    ) -> None:
        """Follow a stream (server.edge.calls); ``elsewhere(address)``: the messages of the
        stream forwarded to the instance running its game."""
        write = writer(context)
        try:
            try:
                await self.calls.follow(
                    self._credentials(context), method, request, kind, write, **options
                )
            except Refused as r:
                address = self._elsewhere(r, context) if elsewhere is not None else None
                if address is None:
                    raise
                async with contextlib.aclosing(elsewhere(address)) as messages:
                    async for message in messages:  # (closed at once if the caller leaves)
                        await write(message)
        except Gone as e:
            log.debug("a stream's caller went away under a write: %s", e)
        except Refused as r:
            await self._refuse(context, r)

    # -- the Play stream ------------------------------------------------------------------
    async def play(self, request_iterator, context) -> None:
        first = await context.read()
        subscribe = None
        if first is not grpc.aio.EOF:
            try:
                message = api.PlayRequest.FromString(first)
            except DecodeError:
                message = None
            if message is not None and message.WhichOneof("kind") == "subscribe":
                subscribe = message.subscribe
        if subscribe is None:
            await self._refuse(
                context,
                Refused(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "the first message of a Play stream must be `subscribe`",
                ),
            )
        credentials = self._credentials(context)
        if credentials.token is None and not credentials.malformed:  # (a seat's call)
            await self._refuse(context, Refused(grpc.StatusCode.UNAUTHENTICATED, MISSING_TOKEN))
        subscribe.filter = api.EVENT_FILTER_OWN_TURNS

        async def plays(who: Who, game_id: str, follow: Follow) -> None:
            try:
                while True:
                    await follow.room(UNREAD_ANSWERS)  # (a reader of nothing: no more plays)
                    data = grpc.aio.EOF if follow.ended else await context.read()
                    if data is grpc.aio.EOF or follow.ended:  # (read as it ended: not played)
                        return
                    follow.put(await self._stream_play(data, time.perf_counter(), who, game_id))
            except Exception as e:  # (the caller went away mid-message: its stream ends too)
                log.debug("a Play stream's requests ended with %r", e)

        async def requests() -> AsyncIterator[bytes]:
            yield first
            while (data := await context.read()) is not grpc.aio.EOF:
                yield data

        def elsewhere(address: str) -> AsyncIterator[bytes]:
            assert self.peers is not None
            caller, client = context.invocation_metadata(), self._client(context)
            return self.peers.play(address, PLAY, requests(), caller, client)

        await self._follow(
            context,
            SUBSCRIBE_GAME,
            subscribe.SerializeToString(),
            "game",
            elsewhere,
            wrap=_as_play_event,
            plays=plays,
        )

    async def _stream_play(self, data: bytes, arrival: float, who: Who, game_id: str) -> bytes:
        """One message after a Play stream's first: its answer, or why it is refused (the
        stream goes on), as a serialized PlayResponse."""
        turn_id = 0
        try:
            request = api.PlayRequest.FromString(data)
        except DecodeError:
            return _refused(0, grpc.StatusCode.INVALID_ARGUMENT, UNPARSABLE)
        play = request.play
        turn_id = play.turn_id
        if request.WhichOneof("kind") != "play":
            return _refused(
                turn_id, grpc.StatusCode.INVALID_ARGUMENT, "after `subscribe`, send plays only"
            )
        if play.game_id not in ("", game_id):
            return _refused(
                turn_id, grpc.StatusCode.INVALID_ARGUMENT, "a Play stream plays its own game only"
            )
        if not self.gate.limiter.allow(who.key):
            return _refused(turn_id, grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_FAST)
        play.game_id = game_id
        core = self.calls.core.link
        sent = core.sent_at(game_id, turn_id)
        request = play.SerializeToString()
        reply = await core.call(SUBMIT_PLAY, request, who.caller, arrival=arrival, sent=sent)
        if reply.code:
            self.metrics.refusals.labels(STATUS.get(reply.code, grpc.StatusCode.UNKNOWN).name).inc()
            return api.PlayResponse(
                refused=api.PlayRefused(turn_id=turn_id, code=reply.code, message=reply.message)
            ).SerializeToString()
        return link.embedded(PLAYED, reply.body)


def _as_play_event(event: bytes) -> bytes:
    """A GameEvent as a Play stream sends it: a PlayResponse's ``event``."""
    return link.embedded(PLAY_EVENT, event)


def _refused(turn_id: int, code: grpc.StatusCode, message: str) -> bytes:
    refused = api.PlayRefused(turn_id=turn_id, code=code.value[0], message=message)
    return api.PlayResponse(refused=refused).SerializeToString()


__all__ = ["Core", "Services", "pb"]


def _ended(context) -> Callable[[Callable[[], None]], None]:
    """How a gRPC call tells that it is over, its answer sent (or the call cancelled)."""
    return lambda do: context.add_done_callback(lambda _: do())
