"""The public calls a person's browser makes, as JSON over HTTP on the web view's port:
each maps one to one onto the gRPC method of the same name and goes through the same
checks, limits, stamps and answers (server.edge.calls).

``POST /api/nardy.v1.ArbiterService/METHOD`` with ``Content-Type: application/json``, the
request message in protobuf's JSON mapping as the body (at most :data:`MAX_BODY` bytes, all
of it within ten seconds, else ``408``), and the token as ``Authorization: Bearer <token>``
(never a cookie: a page of another site cannot make a call with it). A unary method
answers its response message as JSON; a streaming one answers ``text/event-stream``: each
message one Server-Sent Event, its JSON as ``data`` (a game event's seq as ``id``), and
``event: error`` if the stream ends early.
A refusal is the HTTP status of its gRPC code (google.rpc's mapping: UNAUTHENTICATED 401,
PERMISSION_DENIED 403, RESOURCE_EXHAUSTED 429, ...) with ``{"code", "message"}`` (and
``instance``: the gRPC address of the instance that runs the game).

Only a seat's and a player's own business is offered: playing (SubmitPlay, Resign),
following (SubscribeGame, SubscribePlayer, GetGame), answering challenges (ListChallenges,
AcceptChallenge, DeclineChallenge) and making one (CreateMatch: with a player token only,
naming a registered player in each seat, the caller in one of them; the core's consent,
checks and quota of matches not yet over apply as on the gRPC port). Nothing is logged of a
request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import grpc
from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.edge.callers import Credentials, Networks, Refused, address_of, bearer, real_host
from server.edge.calls import ARBITER, Calls
from server.edge.metrics import EdgeMetrics
from server.edge.peers import Peers
from server.edge.web.connections import REQUEST_WITHIN

PREFIX = f"/api/{ARBITER}/"
MAX_BODY = 4096  # the largest request is a play: 200 characters of notation and its ids
JSON = "application/json"
CHALLENGE = "CreateMatch"  # a registered player's only, and only a challenge

# method -> (request, response)
UNARY: dict[str, tuple[type[Message], type[Message]]] = {
    CHALLENGE: (api.CreateMatchRequest, api.CreateMatchResponse),
    "SubmitPlay": (api.SubmitPlayRequest, api.SubmitPlayResponse),
    "Resign": (api.ResignRequest, api.ResignResponse),
    "GetGame": (api.GetGameRequest, api.GetGameResponse),
    "ListChallenges": (api.ListChallengesRequest, api.ListChallengesResponse),
    "AcceptChallenge": (api.AcceptChallengeRequest, api.AcceptChallengeResponse),
    "DeclineChallenge": (api.DeclineChallengeRequest, api.DeclineChallengeResponse),
}
# method -> (request, each message, the kind of stream)
STREAMS: dict[str, tuple[type[Message], type[Message], str]] = {
    "SubscribeGame": (api.SubscribeGameRequest, pb.GameEvent, "game"),
    "SubscribePlayer": (api.SubscribePlayerRequest, api.PlayerEvent, "player"),
}

# google.rpc.Code's HTTP mapping (google/rpc/code.proto)
HTTP_STATUS = {
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}
NO_STORE = {"Cache-Control": "no-store"}


def client_address(request: web.Request, trusted: Networks = ()) -> str:
    """Whose limits a request counts against: its peer's address, or for a peer in
    ``trusted`` (a reverse proxy, ``--trusted-proxy``) the client it names in
    ``X-Real-IP``; as :func:`address_of` counts it."""
    claimed = request.headers.getall("X-Real-IP", [])
    return address_of(real_host(request.remote or "?", claimed, trusted))


def credentials(request: web.Request, trusted: Networks = ()) -> Credentials:
    """An HTTP call's credentials: its ``Authorization`` header and its client."""
    token, malformed = bearer(request.headers.getall("Authorization", []))
    return Credentials(token, malformed, client_address(request, trusted))


def a_challenge(request: api.CreateMatchRequest) -> bool:
    """A match that names a registered player in each seat (the caller in one of them, as
    the core checks): a challenge, the only match made over HTTP."""
    return bool(request.first.player_name and request.second.player_name)


class HttpApi:
    """The handlers of ``/api/nardy.v1.ArbiterService/METHOD``."""

    def __init__(
        self,
        calls: Calls,
        metrics: EdgeMetrics,
        headers: dict[str, str],
        trusted: Networks = (),
        peers: Peers | None = None,
    ) -> None:
        self.calls = calls
        self.metrics = metrics
        self.headers = headers  # every answer's (the web view's security headers)
        self.trusted = trusted  # reverse proxies whose X-Real-IP names the client
        self.peers = peers  # (``--forward``) calls about another instance's games go there

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post(PREFIX + "{method}", self.call)

    async def call(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        if method not in UNARY and method not in STREAMS:
            return self._refused(Refused(grpc.StatusCode.UNIMPLEMENTED, f"no method {method!r}"))
        if request.content_type != JSON:
            return self._error(415, "UNSUPPORTED_MEDIA_TYPE", f"send the request as {JSON}")
        try:
            async with asyncio.timeout(REQUEST_WITHIN):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._error(413, "PAYLOAD_TOO_LARGE", f"a request is at most {MAX_BODY} bytes")
        except TimeoutError:
            late = self._error(408, "REQUEST_TIMEOUT", f"send the body within {REQUEST_WITHIN:g} s")
            late.force_close()  # (the rest of the body is not waited for)
            return late
        arrival = time.perf_counter()  # a play is charged up to here: its whole request read
        kinds = UNARY.get(method) or STREAMS[method]
        who = credentials(request, self.trusted)
        bad = None
        try:
            message = json_format.Parse(body or b"{}", kinds[0]())
        except (json_format.ParseError, UnicodeDecodeError) as e:
            bad = f"not a {kinds[0].__name__}: {str(e)[:100]}"
        else:
            if method == CHALLENGE and not a_challenge(message):
                bad = "a match made here is a challenge: name yourself and the player you challenge"
        if bad is not None:  # the token first, as over gRPC (and the call charged, once)
            try:
                await self.calls.caller(who)
            except Refused as r:
                return self._refused(r)
            return self._refused(Refused(grpc.StatusCode.INVALID_ARGUMENT, bad))
        data = message.SerializeToString()
        if method in STREAMS:
            return await self._stream(request, method, who, data)
        request_kind, response_kind = UNARY[method]
        path = f"/{ARBITER}/{method}"
        try:
            try:
                if method == "SubmitPlay":
                    answer = await self.calls.submit_play(who, data, arrival)
                else:
                    answer = await self.calls.unary(who, path, data, player=method == CHALLENGE)
            except Refused as r:
                if not (r.instance and self.peers):
                    raise
                answer = await self.peers.unary(r.instance, path, data, *self._forwarded(who))
        except Refused as r:
            return self._refused(r)
        text = json_format.MessageToJson(response_kind.FromString(answer), indent=None)
        return web.Response(text=text, content_type=JSON, headers={**self.headers, **NO_STORE})

    async def _stream(
        self, request: web.Request, method: str, who: Credentials, data: bytes
    ) -> web.StreamResponse:
        """A streaming method as Server-Sent Events, from the moment the core opens it."""
        _, kind, stream = STREAMS[method]
        response = web.StreamResponse(
            headers={
                **self.headers,
                **NO_STORE,
                "Content-Type": "text/event-stream",
                "X-Accel-Buffering": "no",  # (a proxy in front passes each event on)
            }
        )

        async def opened() -> None:
            await response.prepare(request)

        async def write(message: bytes) -> None:
            event = kind.FromString(message)
            text = json_format.MessageToJson(event, indent=None)
            head = f"id: {event.seq}\n" if stream == "game" else ""
            await response.write(f"{head}data: {text}\n\n".encode())

        path = f"/{ARBITER}/{method}"
        try:
            try:
                await self.calls.follow(who, path, data, stream, write, opened=opened)
            except Refused as r:
                if response.prepared or not (r.instance and self.peers):
                    raise
                messages = self.peers.stream(r.instance, path, data, *self._forwarded(who))
                async with contextlib.aclosing(messages):
                    async for message in messages:
                        if not response.prepared:
                            await opened()
                        await write(message)
        except Refused as r:
            if not response.prepared:
                return self._refused(r)
            self.metrics.refusals.labels(r.code.name).inc()
            error = json.dumps({"code": r.code.name, "message": r.message})
            await response.write(f"event: error\ndata: {error}\n\n".encode())
        except ConnectionResetError:
            pass  # (the browser went away)
        return response

    @staticmethod
    def _forwarded(who: Credentials) -> tuple[tuple, str]:
        """A call's credentials and client, as a call forwarded to another instance carries
        them (``nardy serve --forward``)."""
        caller = (("authorization", f"Bearer {who.token}"),) if who.token is not None else ()
        return caller, who.address

    def _refused(self, refusal: Refused) -> web.Response:
        self.metrics.refusals.labels(refusal.code.name).inc()
        status = HTTP_STATUS.get(refusal.code, 500)
        extra = {}
        if refusal.code is grpc.StatusCode.RESOURCE_EXHAUSTED:
            extra["Retry-After"] = "1"
        elif refusal.code is grpc.StatusCode.UNAUTHENTICATED:
            extra["WWW-Authenticate"] = "Bearer"
        return self._error(status, refusal.code.name, refusal.message, refusal.instance, extra)

    def _error(
        self,
        status: int,
        code: str,
        message: str,
        instance: str = "",
        extra: dict[str, str] | None = None,
    ) -> web.Response:
        body = {"code": code, "message": message}
        if instance:
            body["instance"] = instance
        return web.json_response(
            body, status=status, headers={**self.headers, **NO_STORE, **(extra or {})}
        )


__all__ = ["MAX_BODY", "PREFIX", "HttpApi"]
