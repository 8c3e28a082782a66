"""The public gRPC API at the edge: each call checked (server.edge.callers), then forwarded
to the core on the link as the bytes it came as, and its answer passed back as bytes.

No request is parsed here but a Play stream's messages: the core parses every request and
refuses what is malformed with INVALID_ARGUMENT. A play is stamped as the edge reads it
(SubmitPlay's handler starts, a Play stream's message is read) and written to the link in
the same step, so its clock is charged up to then only. Streams (SubscribeGame,
SubscribePlayer, Play) follow a tap of the core (server.edge.streams); while one is open,
and while a play or a resignation waits for the game, the call holds a place in its
caller's quota (the operator has none).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import grpc
from google.protobuf.message import DecodeError

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server import link
from server.edge.callers import TOO_FAST, Gate, Refused, Who, client_host
from server.edge.link import CoreLink
from server.edge.metrics import EdgeMetrics
from server.edge.peers import Peers, forwarded
from server.edge.streams import BEAT, END, Follow
from server.errors import INSTANCE_KEY
from server.link import link_pb

log = logging.getLogger("nardy.edge")

ARBITER = "nardy.v1.ArbiterService"
LADDER = "nardy.v1.LadderService"
ADMIN = "nardy.v1.AdminService"
SUBSCRIBE_GAME = f"/{ARBITER}/SubscribeGame"
SUBMIT_PLAY = f"/{ARBITER}/SubmitPlay"
PLAY = f"/{ARBITER}/Play"
UNPARSABLE = "the request is not a valid protobuf message of its type"
STATUS = {code.value[0]: code for code in grpc.StatusCode}
PLAY_EVENT, PLAYED = 1, 2  # PlayResponse's fields: event, played
IN_MEMORY = link_pb.WhoRequest(store=False).SerializeToString()
IN_STORE = link_pb.WhoRequest(store=True).SerializeToString()

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
    ADMIN: ("ListPlayers", "VoidGame"),
}


class Core:
    """The link to the core as it is now (a restarted core is a new link)."""

    def __init__(self) -> None:
        self.link = CoreLink()


class Moved(Exception):
    """The game is run by the instance at ``address``: the call is to be forwarded there."""

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self.address = address


class Services:
    """The handlers of the nardy.v1 services, by service and method name. With ``peers``
    (``nardy serve --forward``) a call about a game another instance runs is forwarded to
    it (server.edge.peers) instead of refused with its address."""

    def __init__(
        self,
        core: Core,
        gate: Gate,
        metrics: EdgeMetrics,
        heartbeat_s: float = 15.0,
        play_stream: bool = True,
        peers: Peers | None = None,
    ) -> None:
        self.core = core
        self.gate = gate
        self.metrics = metrics
        self.heartbeat_s = heartbeat_s
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
        arbiter["Resign"] = grpc.unary_unary_rpc_method_handler(
            self._forward(f"/{ARBITER}/Resign", held=True)
        )
        arbiter["SubscribeGame"] = grpc.unary_stream_rpc_method_handler(self.subscribe_game)
        arbiter["SubscribePlayer"] = grpc.unary_stream_rpc_method_handler(self.subscribe_player)
        if self.play_stream:  # (else UNIMPLEMENTED, as from any server that predates it)
            arbiter["Play"] = grpc.stream_stream_rpc_method_handler(self.play)
        return out

    # -- answers --------------------------------------------------------------------------
    async def _refuse(self, context, code: grpc.StatusCode, message: str, trailing=()) -> None:
        self.metrics.refusals.labels(code.name).inc()
        await context.abort(code, message, trailing_metadata=trailing)

    async def _abort(self, context, reply: link_pb.Reply) -> None:
        """End the call as the core refused it (a game run by another instance: with its
        address in the ``nardy-instance`` trailing metadata)."""
        where = ((INSTANCE_KEY, reply.instance),) if reply.instance else ()
        code = STATUS.get(reply.code, grpc.StatusCode.UNKNOWN)
        await self._refuse(context, code, reply.message, where)

    async def _checked(self, context, *, held: bool = False) -> Who:
        """The caller, its limits charged; the call is ended if refused. A token the edge
        has not seen yet is first asked of the core's memory (uncharged: a known token has
        its own budget), then of its store, charged to the peer address."""
        try:
            who = self.gate.check(context)
            if who.identify:
                await self._ask(context, who, link.WHO, IN_MEMORY)
                if who.identify:  # not in memory
                    self.gate.charge(who)
                    await self._ask(context, who, link.WHO, IN_STORE)
                self.gate.charge(who)
            if held:
                self.gate.hold(who)
        except Refused as r:
            await self._refuse(context, r.code, r.message)
        return who

    async def _ask(self, context, who: Who, method: str, request: bytes, **options):
        """The core's reply to a call; the call is ended here if the core refused it."""
        future = self.core.link.call(method, request, who.caller, identify=who.identify, **options)
        return await self._answer(context, who, future)

    async def _answer(self, context, who: Who, future: asyncio.Future) -> link_pb.Reply:
        """The core's reply; a refusal ends the call here, but Moved is raised for a game
        another instance runs when calls are forwarded (and this one was not)."""
        reply = await future
        self.gate.answered(who, reply)
        if reply.code:
            if reply.instance and self.peers is not None and not forwarded(context):
                raise Moved(reply.instance)
            await self._abort(context, reply)
        return reply

    def _client(self, context) -> str:
        return client_host(context, self.gate.trusted)

    # -- unary ----------------------------------------------------------------------------
    def _forward(self, method: str, *, held: bool = False) -> Callable:
        async def handler(request: bytes, context) -> bytes:
            who = await self._checked(context, held=held)
            try:
                return (await self._ask(context, who, method, request)).body
            except Moved as m:
                assert self.peers is not None
                return await self.peers.unary(
                    m.address, method, request, context, self._client(context)
                )
            finally:
                if held:
                    self.gate.release(who)

        return handler

    async def submit_play(self, request: bytes, context) -> bytes:
        arrival = time.perf_counter()  # first: the side is charged up to here
        core = self.core.link
        unwritten = core.stamped(arrival)  # fences wait until its frame is written
        try:
            who = await self._checked(context, held=True)
            sent = self._sent(core, request)
            future = core.call(SUBMIT_PLAY, request, who.caller, arrival=arrival, sent=sent)
        finally:
            core.written(unwritten)
        try:
            return (await self._answer(context, who, future)).body
        except Moved as m:
            assert self.peers is not None
            client = self._client(context)
            return await self.peers.unary(m.address, SUBMIT_PLAY, request, context, client)
        finally:
            self.gate.release(who)

    @staticmethod
    def _sent(core: CoreLink, request: bytes) -> float:
        """When the edge handed the play's seat its turn (0.0: not known)."""
        try:
            play = api.SubmitPlayRequest.FromString(request)
        except DecodeError:
            return 0.0  # (the core refuses it)
        return core.sent_at(play.game_id, play.turn_id)

    # -- streams --------------------------------------------------------------------------
    async def subscribe_game(self, request: bytes, context) -> None:
        async def elsewhere(address: str) -> None:
            assert self.peers is not None
            client = self._client(context)
            await self.peers.stream(address, SUBSCRIBE_GAME, request, context, client)

        await self._follow(context, SUBSCRIBE_GAME, request, "game", elsewhere=elsewhere)

    async def subscribe_player(self, request: bytes, context) -> None:
        await self._follow(context, f"/{ARBITER}/SubscribePlayer", request, "player")

    async def _follow(
        self, context, method: str, request: bytes, kind: str, plays=None, elsewhere=None
    ) -> None:
        """Open a stream on the core and write what its tap tells until it ends; ``plays``
        (a Play stream): a coroutine function answering its plays into the stream;
        ``elsewhere(address)``: the stream forwarded to the instance running the game."""
        who = await self._checked(context, held=True)
        follow = Follow(self.heartbeat_s)
        core = self.core.link
        opened = link_pb.Opened()
        reader = None
        streams, counted = self.metrics.streams.labels(kind), False
        try:
            try:
                reply = await self._ask(context, who, method, request, follower=follow)
            except Moved as m:
                await elsewhere(m.address)
                return
            opened = link_pb.Opened.FromString(reply.body)
            streams.inc()
            counted = True
            # a replay reads, decodes and encodes every event: each message beyond the
            # first counts as a request
            self.gate.limiter.charge(who.key, max(0, len(opened.backlog) - 1))
            if plays is not None:
                reader = asyncio.create_task(plays(who, opened.game_id, follow))
            await self._write(context, core, opened, follow, kind, plays is not None)
        finally:
            follow.cancel()
            if reader is not None:
                reader.cancel()
            if opened.tap:
                core.leave(opened.tap, follow)
            if counted:  # (after its end is written to the core)
                streams.dec()
            self.gate.release(who)

    async def _write(
        self,
        context,
        core: CoreLink,
        opened: link_pb.Opened,
        follow: Follow,
        kind: str,
        wrapped: bool,
    ) -> None:
        for message in opened.backlog:
            await context.write(link.embedded(PLAY_EVENT, message) if wrapped else message)
        follow.sent()
        if not opened.tap:
            return  # (a game already over: its backlog is all)
        seq = opened.seq
        while (item := await follow.next()) is not END:
            if item is BEAT:
                message = await self._beat(core, opened.tap, seq, kind)
                turn = 0
            elif type(item) is bytes:  # a Play stream's answer
                message, turn = item, 0
            else:
                message, turn, told_seq = item
                seq = told_seq or seq
                if wrapped:
                    message = link.embedded(PLAY_EVENT, message)
            if message is None:
                continue
            if turn:  # the seat's turn: its clock runs from now
                core.sent(opened.game_id, turn, time.perf_counter())
            await context.write(message)
            follow.sent()
        if follow.error is not None and core.lost.is_set():
            await self._refuse(context, grpc.StatusCode.UNAVAILABLE, follow.error)

    async def _beat(self, core: CoreLink, tap: int, seq: int, kind: str) -> bytes | None:
        if kind == "player":
            return api.PlayerEvent(type=api.PLAYER_EVENT_TYPE_HEARTBEAT).SerializeToString()
        request = link_pb.HeartbeatRequest(tap=tap, seq=seq).SerializeToString()
        reply = await core.call(link.HEARTBEAT, request, link_pb.Caller())
        return None if reply.code else reply.body

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
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first message of a Play stream must be `subscribe`",
            )
        subscribe.filter = api.EVENT_FILTER_OWN_TURNS

        async def plays(who: Who, game_id: str, follow: Follow) -> None:
            try:
                while (data := await context.read()) is not grpc.aio.EOF:
                    follow.put(await self._stream_play(data, time.perf_counter(), who, game_id))
            except Exception as e:  # (the caller went away mid-message: its stream ends too)
                log.debug("a Play stream's requests ended with %r", e)

        async def elsewhere(address: str) -> None:
            assert self.peers is not None
            await self.peers.play(address, PLAY, first, context, self._client(context))

        await self._follow(
            context,
            SUBSCRIBE_GAME,
            subscribe.SerializeToString(),
            "game",
            plays,
            elsewhere=elsewhere,
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
        core = self.core.link
        sent = core.sent_at(game_id, turn_id)
        request = play.SerializeToString()
        reply = await core.call(SUBMIT_PLAY, request, who.caller, arrival=arrival, sent=sent)
        if reply.code:
            self.metrics.refusals.labels(STATUS.get(reply.code, grpc.StatusCode.UNKNOWN).name).inc()
            return api.PlayResponse(
                refused=api.PlayRefused(turn_id=turn_id, code=reply.code, message=reply.message)
            ).SerializeToString()
        return link.embedded(PLAYED, reply.body)


def _refused(turn_id: int, code: grpc.StatusCode, message: str) -> bytes:
    refused = api.PlayRefused(turn_id=turn_id, code=code.value[0], message=message)
    return api.PlayResponse(refused=refused).SerializeToString()


__all__ = ["Core", "Services", "pb"]
