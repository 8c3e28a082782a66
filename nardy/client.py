"""The client SDK: connect to an arbiter, follow games, and play them with one function.

A Python engine is one function from a :class:`TurnInfo` to a play; :func:`run_engine` (or
``await play_forever(...)`` under trio) does the rest: the player stream, one task per game,
resuming a dropped stream from the last sequence number with backoff, idempotent plays
named by ``turn_id``, and deadlines on every call.

A seat plays its game over the bidirectional ``Play`` stream (:class:`PlayStream`: its own
turns down, its plays up, one stream per game) unless told ``transport="unary"``; where the
arbiter does not offer ``Play`` (UNIMPLEMENTED: a server that predates it) it
follows the game with ``SubscribeGame`` and answers each turn with a ``SubmitPlay`` call.

There is one client, :class:`Client`, for trio code; every retry, resume and shutdown rule
lives there. :class:`SimpleClient` is the blocking face of the same client (as
python-chess's ``SimpleEngine`` wraps its asyncio engine): it runs a ``Client`` on a trio
loop in a background thread and each of its methods calls the trio method there.

grpcio has no trio support, so unary calls use ``stub.Method.future`` woken through the trio
token, and each stream is read by one thread feeding a trio memory channel (a ``Play``
stream's requests are taken from a queue by grpcio's own sending thread).

Several arbiter instances on one database: a call about a game another instance runs is
answered UNAVAILABLE with that instance's address in the ``nardy-instance`` trailing
metadata; the client remembers where the game lives and sends its calls and its stream
there, and goes back to its own address when that instance stops answering. The address
may list several instances (``127.0.0.1:50051,127.0.0.1:50052``): the first that answers
is used, the next when it stops.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import math
import os
import queue
import secrets
import signal
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import grpc
import trio

from nardy.clock import Clock
from nardy.game import Color
from nardy.record import GameRecord
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as ladder_pb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from nardy.variant import Variant
from nardy.variant import variant as rules_named
from nardy.wire import color_of, options_of, record_of

log = logging.getLogger("nardy.client")

ENV_SERVER = "NARDY_SERVER"
ENV_TOKEN = "NARDY_TOKEN"
ENV_TLS_CA = "NARDY_TLS_CA"  # a PEM file: connect with TLS, trusting that root
ENV_TLS = "NARDY_TLS"  # "1": connect with TLS, trusting the system's roots
RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}
# Worth retrying for an idempotent call: also the rate limit, after a pause.
BACK_OFF = RETRYABLE | {grpc.StatusCode.RESOURCE_EXHAUSTED}
FIRST_BACKOFF_S = 0.1
INSTANCE_KEY = "nardy-instance"  # trailing metadata: the instance that runs the game
GAME_CALLS = {"GetGame", "SubmitPlay", "Resign", "SubscribeGame"}  # sent where the game is
MATCH_CALLS = {"AcceptChallenge", "DeclineChallenge"}  # sent where the match is
MAX_HOPS = 4  # redirects followed in a row for one call
END_TYPES = {pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED}
ENDED = {pb.GAME_STATUS_FINISHED, pb.GAME_STATUS_ABORTED}


def over(ev: pb.GameEvent) -> bool:
    """The game is over as of ``ev``: its last event, or the SNAPSHOT a stream opened on an
    ended game sends (its only event, before the stream ends)."""
    return ev.type in END_TYPES or ev.state.status in ENDED


# How a seat's game travels: the Play stream (falling back to unary where the arbiter does
# not offer it), or SubscribeGame + a SubmitPlay call per turn.
PLAY, UNARY = "play", "unary"
TRANSPORTS = (PLAY, UNARY)


@dataclass
class Reconnect:
    """How a client's streams ride out a lost arbiter: back off, tell someone, give up.

    A stream that drops (or whose server shuts down) subscribes again, resuming where it
    was, after a pause that doubles up to ``max_backoff`` seconds. ``on_lost(why, wait_s)``
    hears of every failed try (``why``: e.g. ``"unavailable"``; the next try is in
    ``wait_s``), ``on_back()`` of the stream flowing again. After ``give_up_s`` seconds in
    a row without the arbiter the stream raises :class:`Unreachable` (None: never).
    """

    give_up_s: float | None = None
    max_backoff: float = 5.0
    on_lost: Callable[[str, float], None] | None = None
    on_back: Callable[[], None] | None = None


class Unreachable(ConnectionError):
    """The arbiter could not be reached for the :class:`Reconnect`'s ``give_up_s``."""

    def __init__(self, address: str, why: str, seconds: float) -> None:
        super().__init__(f"cannot reach the arbiter at {address} ({why}): gave up after "
                         f"{seconds:.0f} s")  # fmt: skip
        self.address, self.why, self.seconds = address, why, seconds


@dataclass(frozen=True)
class TurnInfo:
    """What an engine sees when it must play: the state and the legal plays."""

    state: pb.GameState
    received: float = field(default_factory=time.monotonic)  # when the state arrived

    @property
    def variant(self) -> Variant:
        """The game's rules (``options.variant``: long or short nardy)."""
        return rules_named(self.state.options.variant)

    @property
    def position(self):
        """The position before the turn, as the variant's position."""
        return self.variant.parse(self.state.position)

    @property
    def dice(self) -> tuple[int, int]:
        a, b = self.state.dice
        return a, b

    @property
    def color(self) -> Color:
        color = color_of(self.state.your_color)
        assert color is not None, "TurnInfo is made only for a seat's own turn"
        return color

    @property
    def legal(self) -> list[pb.LegalPlay]:
        return list(self.state.legal_plays)

    @property
    def clock(self) -> Clock:
        """The side's clock as the server read it, counting down since the state arrived."""
        shown = self.state.white_clock if self.color is Color.WHITE else self.state.black_clock
        return Clock.from_reading(shown.remaining_ms, shown.bank_ms, self.received)

    @property
    def time_left_ms(self) -> int:
        """Time left for this turn now (turn time plus bank), in ms."""
        return self.clock.reading(time.monotonic())[0]


Engine = Callable[[TurnInfo], "pb.LegalPlay | str"]


def play_request(
    game_id: str, turn_id: int, notation: str | None = None, end_position: str | None = None
) -> api.SubmitPlayRequest:
    """A SubmitPlay request: by end position if given, else by notation."""
    req = api.SubmitPlayRequest(game_id=game_id, turn_id=turn_id)
    if end_position is not None:
        req.end_position = end_position
    else:
        req.notation = notation or ""
    return req


def choice_fields(choice: pb.LegalPlay | str) -> dict[str, str]:
    """An engine's answer as SubmitPlay fields: notation text, or a legal play's end."""
    if isinstance(choice, str):
        return {"notation": choice}
    return {"end_position": choice.end_position}


def first_legal_instead(state: pb.GameState, refused: dict[str, str]) -> dict[str, str] | None:
    """The fields of the turn's first legal play, to play instead of the ``refused`` fields
    (None when the turn has none, or when that is the play refused)."""
    if not state.legal_plays:
        return None
    first = {"end_position": state.legal_plays[0].end_position}
    return None if first == refused else first


def tls_settings(
    tls: bool | None = None, root_certificates: bytes | None = None
) -> tuple[bool, bytes | None]:
    """Whether to use TLS and which roots: as given, else from the environment.

    ``$NARDY_TLS_CA`` (a PEM file of the roots to trust, e.g. a self-signed server's
    certificate) turns TLS on; ``$NARDY_TLS=1`` turns it on with the system's roots.
    """
    ca = os.environ.get(ENV_TLS_CA)
    if tls is None:
        tls = bool(ca) or os.environ.get(ENV_TLS, "").lower() in ("1", "true", "yes", "on")
    if tls and root_certificates is None and ca:
        with open(ca, "rb") as f:
            root_certificates = f.read()
    return tls, root_certificates


def instance_of(error: grpc.RpcError) -> str:
    """The address in a refusal's ``nardy-instance`` metadata ('' if none)."""
    try:
        metadata = error.trailing_metadata() or ()
    except Exception:  # an error raised before the call had metadata
        return ""
    return next((v for k, v in metadata if k == INSTANCE_KEY and isinstance(v, str)), "")


def target(address: str) -> str:
    """The gRPC target of ``address``: a comma-separated list of IP ``host:port``s is one
    target whose first reachable address is used (gRPC's pick_first)."""
    return f"ipv4:{address}" if "," in address and ":" in address else address


def channel(
    address: str, *, tls: bool | None = None, root_certificates: bytes | None = None
) -> grpc.Channel:
    """A channel with keepalive, so that a dead connection is noticed within seconds.

    ``tls`` None follows the environment (see :func:`tls_settings`); TLS without
    ``root_certificates`` trusts the system's roots. ``address`` may list several
    instances (see :func:`target`).
    """
    options = [
        ("grpc.keepalive_time_ms", 10_000),
        ("grpc.keepalive_timeout_ms", 5_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    tls, root_certificates = tls_settings(tls, root_certificates)
    if tls:
        creds = grpc.ssl_channel_credentials(root_certificates)
        return grpc.secure_channel(target(address), creds, options=options)
    return grpc.insecure_channel(target(address), options=options)


def unreachable_hint(details: str) -> str:
    """What to try when a connection fails: a plaintext client closed at once by the
    server is most often talking to one that serves TLS only."""
    plain = not tls_settings(None, None)[0]
    if plain and ("Socket closed" in details or "Connection reset" in details):
        return " (if the arbiter serves TLS: --tls, or --tls-ca PEM for its own certificate)"
    return ""


class Routes:
    """Where games live when several instances serve one database: game (or match) id ->
    address, with one channel per instance (shared by the clients of one connection)."""

    def __init__(self, make: Callable[[str], grpc.Channel]) -> None:
        self.make = make
        self.games: dict[str, str] = {}
        self.channels: dict[str, grpc.Channel] = {}
        self.unary: set[str] = set()  # addresses that answered Play with UNIMPLEMENTED

    def channel(self, address: str) -> grpc.Channel:
        if address not in self.channels:
            self.channels[address] = self.make(address)
        return self.channels[address]

    def follow(self, error: grpc.RpcError, game_id: str) -> bool:
        """Learn from ``error`` where ``game_id`` lives; True to send the call again now."""
        where = instance_of(error)
        if where and game_id and self.games.get(game_id) != where:
            self.games[game_id] = where
            log.info("game %s lives on %s", game_id, where)
            return True
        if game_id in self.games and error.code() == grpc.StatusCode.UNAVAILABLE:
            # that instance stopped (or the game moved): ask our own address again
            del self.games[game_id]
            return True
        return False

    def close(self) -> None:
        for ch in self.channels.values():
            ch.close()
        self.channels.clear()


class Client:
    """An arbiter connection for trio code. Use ``async with Client(...)`` or call close().

    ``address`` defaults to ``$NARDY_SERVER``; ``token`` is a player or seat token, or None
    for an anonymous (spectator) connection. TLS: ``tls`` and ``root_certificates``, or
    else ``$NARDY_TLS_CA`` / ``$NARDY_TLS`` (see :func:`tls_settings`). Engines
    launched by a runner get their token from ``$NARDY_TOKEN`` through :func:`run_engine`.

    The retry rules live here: idempotent unary calls (reads, plays, ladder calls) are
    retried with backoff on a transient status; streams resume after a drop or a
    SERVER_SHUTDOWN (games from the last seq seen) as ``reconnect`` says (default: quietly,
    forever); creating calls are never retried.

    ``transport`` is how :func:`play_game` plays a seat's game: ``"play"`` (the default)
    over the ``Play`` stream, falling back to ``SubscribeGame`` + ``SubmitPlay`` where the
    arbiter answers ``Play`` with UNIMPLEMENTED; ``"unary"`` over those two RPCs only.
    """

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        *,
        tls: bool | None = None,
        root_certificates: bytes | None = None,
        timeout: float = 10.0,
        shared: grpc.Channel | None = None,
        routes: Routes | None = None,
        reconnect: Reconnect | None = None,
        transport: str = PLAY,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}")
        self.address = address or os.environ.get(ENV_SERVER) or "127.0.0.1:50051"
        self.token = token
        self.timeout = timeout
        self.reconnect = reconnect or Reconnect()
        self.transport = transport
        self._owns_channel = shared is None
        self.channel = shared or channel(self.address, tls=tls, root_certificates=root_certificates)
        self.stub = api_grpc.ArbiterServiceStub(self.channel)
        self.ladders = ladder_grpc.LadderServiceStub(self.channel)
        self.routes = routes or Routes(
            functools.partial(channel, tls=tls, root_certificates=root_certificates)
        )

    def with_token(self, token: str) -> Client:
        """Another identity over the same connection."""
        return Client(
            self.address,
            token,
            timeout=self.timeout,
            shared=self.channel,
            routes=self.routes,
            reconnect=self.reconnect,
            transport=self.transport,
        )

    def where(self, game_id: str) -> str:
        """The address that calls about ``game_id`` go to (the instance that runs it)."""
        return self.routes.games.get(game_id, self.address)

    def _stub(self, game_id: str = "") -> api_grpc.ArbiterServiceStub:
        """The stub for calls about ``game_id``: the instance that runs it, if known."""
        where = self.routes.games.get(game_id) if game_id else None
        if where is None:
            return self.stub
        return api_grpc.ArbiterServiceStub(self.routes.channel(where))

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_channel:
            self.channel.close()
            self.routes.close()

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    async def call(self, method: str, request, *, timeout: float | None = None, attempts: int = 1):
        """A unary call (ArbiterService or LadderService) without blocking trio; raises
        grpc.RpcError on a status. With ``attempts`` > 1, for idempotent calls only, a
        transient status (:data:`BACK_OFF`) is retried after a growing pause. A call about
        a game (or a challenge's match) is sent where it lives, following the arbiter's
        redirects."""
        place = (  # what it is about: a game's id, or a match's
            request.game_id
            if method in GAME_CALLS
            else request.match_id
            if method in MATCH_CALLS
            else ""
        )
        delay = FIRST_BACKOFF_S
        attempt = hops = 0
        while True:
            stub = self._stub(place)
            rpc = getattr(stub, method, None) or getattr(self.ladders, method)
            try:
                return await self._unary(rpc, request, timeout or self.timeout)
            except grpc.RpcError as e:
                if hops < MAX_HOPS and self.routes.follow(e, place):
                    hops += 1
                    continue
                attempt += 1
                if attempt >= attempts or e.code() not in BACK_OFF:
                    raise
                log.info("%s: %s; retrying in %.1f s", method, e.code().name, delay)
            hops = 0
            await trio.sleep(delay)
            delay = min(2.0, delay * 2)

    async def _unary(self, rpc, request, timeout: float):
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        fut = rpc.future(request, metadata=self.metadata, timeout=timeout)
        fut.add_done_callback(lambda _: token.run_sync_soon(done.set))
        try:
            await done.wait()
        except trio.Cancelled:
            fut.cancel()
            raise
        return fut.result()

    # -- the arbiter ----------------------------------------------------------------------
    async def register(self, name: str, *, bot: bool = True, owner: str = "") -> str:
        """Register a player; remembers and returns its token."""
        req = api.RegisterPlayerRequest(name=name, bot=bot, owner=owner)
        self.token = (await self.call("RegisterPlayer", req)).token
        return self.token

    async def create_match(self, **fields) -> api.CreateMatchResponse:
        """CreateMatch with the request's fields (options, first, second, target_points...)."""
        return await self.call("CreateMatch", api.CreateMatchRequest(**fields))

    async def get_game(self, game_id: str) -> api.GetGameResponse:
        """The game now: with a seat's token that seat's view (its legal plays on its turn)."""
        return await self.call("GetGame", api.GetGameRequest(game_id=game_id), attempts=3)

    async def list_games(self, **fields) -> api.ListGamesResponse:
        return await self.call("ListGames", api.ListGamesRequest(**fields), attempts=3)

    async def all_games(
        self, *, status: int = 0, ladder: str = "", limit: int | None = None
    ) -> list[api.GameSummary]:
        """Games newest first, following ListGames page tokens (up to ``limit`` games)."""
        out: list[api.GameSummary] = []
        token = ""
        while limit is None or len(out) < limit:
            size = 500 if limit is None else min(500, limit - len(out))
            r = await self.list_games(status=status, ladder=ladder, limit=size, page_token=token)
            out.extend(r.games)
            token = r.next_page_token
            if not token:
                break
        return out

    async def submit(
        self,
        game_id: str,
        turn_id: int,
        *,
        notation: str | None = None,
        end_position: str | None = None,
        attempts: int = 1,
    ) -> api.SubmitPlayResponse:
        """SubmitPlay; plays are idempotent, so ``attempts`` > 1 is safe."""
        req = play_request(game_id, turn_id, notation, end_position)
        return await self.call("SubmitPlay", req, attempts=attempts)

    async def resign(self, game_id: str) -> api.ResignResponse:
        return await self.call("Resign", api.ResignRequest(game_id=game_id))

    async def accept_challenge(self, match_id: str) -> api.AcceptChallengeResponse:
        """Take your seat in a match another player challenged you to (a player token)."""
        req = api.AcceptChallengeRequest(match_id=match_id)
        return await self.call("AcceptChallenge", req, attempts=3)

    async def decline_challenge(self, match_id: str) -> None:
        await self.call("DeclineChallenge", api.DeclineChallengeRequest(match_id=match_id))

    async def list_challenges(self) -> list[api.Challenge]:
        """The challenges waiting for your answer (a player token), oldest first."""
        r = await self.call("ListChallenges", api.ListChallengesRequest(), attempts=3)
        return list(r.challenges)

    # -- ladders --------------------------------------------------------------------------
    async def create_ladder(self, name: str, **options) -> ladder_pb.CreateLadderResponse:
        """The ladder ``name`` (created with LadderOptions fields if it is new)."""
        req = ladder_pb.CreateLadderRequest(name=name, options=ladder_pb.LadderOptions(**options))
        return await self.call("CreateLadder", req, attempts=3)

    async def join_ladder(self, ladder: str, *, ready: bool = True) -> None:
        """Be paired in ``ladder`` (a player token), or stop being paired."""
        req = ladder_pb.JoinLadderRequest(ladder=ladder, ready=ready)
        await self.call("JoinLadder", req, attempts=3)

    async def standings(self, ladder: str) -> ladder_pb.GetStandingsResponse:
        req = ladder_pb.GetStandingsRequest(ladder=ladder)
        return await self.call("GetStandings", req, attempts=3)

    async def crosstable(self, ladder: str) -> ladder_pb.GetCrosstableResponse:
        req = ladder_pb.GetCrosstableRequest(ladder=ladder)
        return await self.call("GetCrosstable", req, attempts=3)

    # -- streams ------------------------------------------------------------------------
    async def _stream(self, method: str, request, game_id: str = "") -> AsyncIterator:
        """Read a server stream in a helper thread; items arrive through a channel.
        ``request`` is a message, or an :class:`Outbox` for a bidirectional stream (closed
        when the stream ends, so that grpcio's sending thread ends too)."""
        send, recv = trio.open_memory_channel(math.inf)
        call = getattr(self._stub(game_id), method)(request, metadata=self.metadata)
        token = trio.lowlevel.current_trio_token()

        def deliver(item) -> None:
            with contextlib.suppress(trio.BrokenResourceError):  # the trio reader is gone
                send.send_nowait(item)

        def reader() -> None:
            try:
                try:
                    for item in call:
                        token.run_sync_soon(deliver, item)
                    token.run_sync_soon(deliver, None)
                except grpc.RpcError as e:
                    token.run_sync_soon(deliver, e)
            except trio.RunFinishedError:
                pass

        thread = threading.Thread(target=reader, name=f"nardy-{method}", daemon=True)
        thread.start()
        try:
            async with recv:
                while True:
                    item = await recv.receive()
                    if item is None:
                        return
                    if isinstance(item, grpc.RpcError):
                        raise item
                    yield item
        finally:
            call.cancel()
            if isinstance(request, Outbox):
                request.close()

    async def _resuming(
        self,
        method: str,
        request: Callable[[], object],
        *,
        shutdown: Callable[[object], bool],
        ends: Callable[[object], bool],
        resume: bool,
        reconnect: Reconnect | None,
        game_id: str = "",
    ) -> AsyncIterator:
        """A stream subscribed again (with ``request()`` built afresh) after a transient
        drop or an item for which ``shutdown``, as ``reconnect`` (default: the client's)
        says; ends after an item for which ``ends``. A game's stream is opened where the game lives
        (following redirects)."""
        policy = reconnect or self.reconnect
        backoff = FIRST_BACKOFF_S
        lost_since: float | None = None
        hops = 0
        while True:
            why = "the stream ended"
            try:
                async for item in self._stream(method, request(), game_id):
                    if lost_since is not None:
                        lost_since = None
                        if policy.on_back is not None:
                            policy.on_back()
                    backoff = FIRST_BACKOFF_S
                    hops = 0
                    yield item
                    if ends(item):
                        return
                    if shutdown(item):
                        why = "the arbiter is shutting down"
                        break
            except grpc.RpcError as e:
                if hops < MAX_HOPS and self.routes.follow(e, game_id):
                    hops += 1
                    continue
                if not resume or e.code() not in RETRYABLE:
                    raise
                why = e.code().name.lower()
                if policy.on_lost is None:  # else it is told, below
                    log.info("%s: stream dropped (%s); resuming", method, why)
            if not resume:
                return
            now = trio.current_time()
            if lost_since is None:
                lost_since = now
            wait = backoff
            if policy.give_up_s is not None:
                left = lost_since + policy.give_up_s - now
                if left <= 0:
                    raise Unreachable(self.address, why, now - lost_since)
                wait = min(wait, left)
            if policy.on_lost is not None:
                policy.on_lost(why, wait)
            await trio.sleep(wait)
            backoff = min(policy.max_backoff, backoff * 2)
            hops = 0

    async def events(
        self,
        game_id: str,
        *,
        after_seq: int = 0,
        from_start: bool = False,
        resume: bool = True,
        reconnect: Reconnect | None = None,
        client_seed: str = "",
        own_turns: bool = False,
    ) -> AsyncIterator[pb.GameEvent]:
        """A game's events, resuming after drops from the last seq; ends with the game.

        Heartbeats are passed on too (their seq does not advance). After a drop on this
        seat's waiting turn the arbiter announces the turn again (a SNAPSHOT). A seat may
        add ``client_seed`` to the game's dice (provably fair dice; before the start), and
        ask for ``own_turns`` only (EVENT_FILTER_OWN_TURNS: no plays, no passes, no
        opponent's turns; what an engine needs).
        """
        last = after_seq
        which = api.EVENT_FILTER_OWN_TURNS if own_turns else api.EVENT_FILTER_UNSPECIFIED

        def request() -> api.SubscribeGameRequest:
            return api.SubscribeGameRequest(
                game_id=game_id,
                after_seq=last,
                from_start=from_start and last == 0,
                client_seed=client_seed,
                filter=which,
            )

        async for ev in self._resuming(
            "SubscribeGame",
            request,
            shutdown=lambda ev: ev.type == pb.EVENT_TYPE_SERVER_SHUTDOWN,
            ends=over,
            resume=resume,
            reconnect=reconnect,
            game_id=game_id,
        ):
            last = max(last, ev.seq)
            yield ev

    async def player_events(
        self, *, resume: bool = True, reconnect: Reconnect | None = None
    ) -> AsyncIterator[api.PlayerEvent]:
        """The calling player's stream, reconnecting after drops and shutdowns (the games
        not yet over are announced again on every reconnection)."""
        async for ev in self._resuming(
            "SubscribePlayer",
            api.SubscribePlayerRequest,
            shutdown=lambda ev: ev.type == api.PLAYER_EVENT_TYPE_SERVER_SHUTDOWN,
            ends=lambda _: False,
            resume=resume,
            reconnect=reconnect,
        ):
            yield ev

    async def record(self, game_id: str) -> GameRecord:
        """A game's record (:mod:`nardy.record`) from its events: a finished game's with its
        result, one in progress its turns so far. ``nardy.record.dumps`` writes it as
        ``nardy export`` does; ``nardy verify`` checks its dice. Raises ``ValueError`` for a
        game with no events yet."""
        last = (await self.get_game(game_id)).last_seq
        events: list[pb.GameEvent] = []
        if last:
            async for ev in self.events(game_id, from_start=True):
                if ev.type != pb.EVENT_TYPE_HEARTBEAT:
                    events.append(ev)
                if ev.seq >= last:
                    break
        if not events:
            raise ValueError(f"game {game_id} has no events yet")
        return record_of(events, (await self.get_game(game_id)).state.server_seed)

    def play_stream(
        self, game_id: str, *, client_seed: str = "", reconnect: Reconnect | None = None
    ) -> PlayStream:
        """A seat's game over the ``Play`` stream (see :class:`PlayStream`)."""
        return PlayStream(self, game_id, client_seed=client_seed, reconnect=reconnect)


class Outbox:
    """The requests of a bidirectional stream: put from trio, taken by grpcio's sending
    thread, which ends at :meth:`close`."""

    def __init__(self, first) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._queue.put(first)

    def put(self, request) -> None:
        self._queue.put(request)

    def close(self) -> None:
        self._queue.put(None)

    def __iter__(self) -> Outbox:
        return self

    def __next__(self):
        request = self._queue.get()
        if request is None:
            self._queue.put(None)  # (closed for good)
            raise StopIteration
        return request


def _is_event(response: api.PlayResponse, types: set[int]) -> bool:
    return response.WhichOneof("kind") == "event" and response.event.type in types


class PlayStream:
    """A seat's game over the ``Play`` stream: its own turns come down (the events
    ``SubscribeGame`` with EVENT_FILTER_OWN_TURNS sends), its plays go up, and each play is
    answered, in order, by ``played`` or ``refused``.

    ``async for response, play in stream`` gives every PlayResponse with, for an answer,
    the play it answers (None with an event); :meth:`send` sends a play. After a drop or a
    SERVER_SHUTDOWN the stream is opened again as :meth:`Client.events` is (after the
    largest seq seen, where the game lives, as ``reconnect`` says), and the plays sent but
    not answered are sent again on it at once (plays are idempotent: one that had arrived
    is answered as a ``duplicate``). It ends after GAME_FINISHED / GAME_ABORTED. A server
    that does not offer ``Play`` raises grpc.RpcError UNIMPLEMENTED.
    """

    def __init__(
        self,
        client: Client,
        game_id: str,
        *,
        client_seed: str = "",
        reconnect: Reconnect | None = None,
    ) -> None:
        self.client = client
        self.game_id = game_id
        self.client_seed = client_seed
        self.reconnect = reconnect
        self.last_seq = 0  # the largest seq seen
        self.unanswered: deque[api.SubmitPlayRequest] = deque()  # sent, in order
        self._outbox: Outbox | None = None

    def send(self, play: api.SubmitPlayRequest) -> None:
        """Send a play (see :func:`play_request`); its answer comes in its turn."""
        self.unanswered.append(play)
        if self._outbox is not None:
            self._outbox.put(api.PlayRequest(play=play))

    def awaits(self, turn_id: int) -> bool:
        """True while a play sent for ``turn_id`` has not been answered."""
        return any(play.turn_id == turn_id for play in self.unanswered)

    def _request(self) -> Outbox:
        """A new stream's requests: the subscription, then every play not yet answered."""
        subscribe = api.SubscribeGameRequest(
            game_id=self.game_id,
            after_seq=self.last_seq,
            client_seed=self.client_seed,
            filter=api.EVENT_FILTER_OWN_TURNS,
        )
        self._outbox = Outbox(api.PlayRequest(subscribe=subscribe))
        for play in self.unanswered:
            self._outbox.put(api.PlayRequest(play=play))
        return self._outbox

    async def __aiter__(
        self,
    ) -> AsyncIterator[tuple[api.PlayResponse, api.SubmitPlayRequest | None]]:
        try:
            async for response in self.client._resuming(
                "Play",
                self._request,
                shutdown=lambda r: _is_event(r, {pb.EVENT_TYPE_SERVER_SHUTDOWN}),
                ends=lambda r: r.WhichOneof("kind") == "event" and over(r.event),
                resume=True,
                reconnect=self.reconnect,
                game_id=self.game_id,
            ):
                if response.WhichOneof("kind") == "event":
                    self.last_seq = max(self.last_seq, response.event.seq)
                    yield response, None
                elif self.unanswered:
                    yield response, self.unanswered.popleft()
                else:  # (an answer to no play sent: not this protocol)
                    log.warning("game %s: an answer to no play: %s", self.game_id, response)
        finally:
            if self._outbox is not None:
                self._outbox.close()


def my_turn(ev: pb.GameEvent) -> bool:
    """True when this seat's stream event asks for a play: the arbiter sends legal plays
    only to the seat to move, only while its turn waits (TURN_STARTED, or a SNAPSHOT or
    HEARTBEAT during that turn). Answer each turn_id once."""
    st = ev.state
    return (
        st.status == pb.GAME_STATUS_IN_PROGRESS
        and len(st.legal_plays) > 0
        and st.side_to_move == st.your_color
    )


async def play_game(
    client: Client, game_id: str, engine: Engine, *, transport: str | None = None
) -> pb.GameState:
    """Play one game with ``engine`` to its end; returns the final state.

    ``transport`` (default: the client's, see :class:`Client`) is ``"play"``: the game over
    one ``Play`` stream (:class:`PlayStream`), or over ``SubscribeGame`` and ``SubmitPlay``
    where the arbiter answers ``Play`` with UNIMPLEMENTED (remembered for that address);
    ``"unary"``: over those two RPCs only. Either way the seat follows its own turns only
    (EVENT_FILTER_OWN_TURNS: one message per turn of its own), adds a random client seed of
    its own to the game's dice (see GameState.dice_commitment), asks the engine once per
    turn, and resumes after drops as the client's ``reconnect`` says.

    The engine runs in a worker thread, so a slow one does not hold up the other games of
    the process; an engine that raises is logged and the first legal play is made instead,
    and so is a play the arbiter refuses as illegal. A play lost in transit is sent again
    (plays are idempotent): on a resumed ``Play`` stream at once; over unary calls with
    retries, after which the game is followed again from a fresh snapshot, which shows
    whether the turn is still waiting for it.
    """
    how = transport or client.transport
    if how not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, not {how!r}")
    seat = _Seat(game_id, engine)
    if how == PLAY and client.where(game_id) not in client.routes.unary:
        try:
            return await _over_play(client, seat)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
            where = client.where(game_id)
            client.routes.unary.add(where)
            log.info(
                "game %s: %s does not offer Play (%s); SubscribeGame and SubmitPlay instead",
                game_id,
                where,
                e.details(),
            )
    return await _over_unary(client, seat)


@dataclass
class _Seat:
    """What :func:`play_game` knows of its game, whichever transport carries it."""

    game_id: str
    engine: Engine
    seed: str = field(default_factory=lambda: secrets.token_hex(8))
    state: pb.GameState | None = None  # the latest
    done: int = 0  # the last turn answered (or refused for good)
    seq: int = 0  # the last event's
    done_seq: int = 0  # ``seq`` when ``done`` was set: a turn announced after it is offered anew
    turn: pb.GameState | None = None  # the state of the turn the engine was last asked
    choice: pb.LegalPlay | str = ""  # its answer

    def wants(self, ev: pb.GameEvent) -> bool:
        """True when ``ev`` asks for a play this seat has not made: a turn past the last
        done, or that turn announced again since (after a restart or a move of the game
        to another instance, a refusal for time by the old one is not the last word)."""
        turn = ev.state.turn_id
        again = turn == self.done and ev.seq > self.done_seq
        return my_turn(ev) and (turn > self.done or again)

    def seen(self, ev: pb.GameEvent) -> None:
        self.state = ev.state
        self.seq = max(self.seq, ev.seq)

    def finished(self, turn_id: int) -> None:
        """Turn ``turn_id`` is answered, or refused for good (unless announced again)."""
        if turn_id >= self.done:
            self.done, self.done_seq = turn_id, self.seq

    async def answer(self, state: pb.GameState) -> pb.LegalPlay | str:
        """The engine's choice for the turn of ``state``: asked once per turn (a turn
        announced again after a drop gets the same answer)."""
        if self.turn is None or self.turn.turn_id != state.turn_id:
            self.choice = await _think(self.engine, state)
            self.turn = state
        return self.choice


STATUS = {code.value[0]: code for code in grpc.StatusCode}  # PlayRefused.code -> StatusCode


async def _over_play(client: Client, seat: _Seat) -> pb.GameState:
    """The game over one Play stream (resumed after drops): each turn offered is answered
    once; a refusal for the moment (rate limit, storage) is sent again after a pause, an
    illegal play is replaced by the turn's first legal play."""
    stream = client.play_stream(seat.game_id, client_seed=seat.seed)
    delay = FIRST_BACKOFF_S
    async with contextlib.aclosing(aiter(stream)) as responses:
        async for response, play in responses:
            kind = response.WhichOneof("kind")
            if kind == "event":
                ev = response.event
                seat.seen(ev)
                if over(ev):
                    return seat.state
                if seat.wants(ev) and not stream.awaits(ev.state.turn_id):
                    fields = choice_fields(await seat.answer(ev.state))
                    stream.send(play_request(seat.game_id, ev.state.turn_id, **fields))
                continue
            assert play is not None
            if kind == "played":
                seat.finished(play.turn_id)
                delay = FIRST_BACKOFF_S
                continue
            refused = response.refused
            code = STATUS.get(refused.code, grpc.StatusCode.UNKNOWN)
            turn, instead = seat.turn, None
            illegal = code == grpc.StatusCode.INVALID_ARGUMENT
            if illegal and turn is not None and turn.turn_id == play.turn_id:
                which = play.WhichOneof("play") or "notation"
                instead = first_legal_instead(turn, {which: getattr(play, which)})
            if code in BACK_OFF:
                log.info(
                    "game %s turn %d: %s (%s); sending it again in %.1f s",
                    seat.game_id,
                    play.turn_id,
                    code.name,
                    refused.message,
                    delay,
                )
                await trio.sleep(delay)
                delay = min(2.0, delay * 2)
                stream.send(play)
            elif turn is not None and instead is not None:
                log.warning(
                    "game %s turn %d: play refused (%s); playing %s instead",
                    seat.game_id,
                    play.turn_id,
                    refused.message,
                    turn.legal_plays[0].notation,
                )
                stream.send(play_request(seat.game_id, play.turn_id, **instead))
            else:
                log.warning("game %s turn %d: %s", seat.game_id, play.turn_id, refused.message)
                seat.finished(play.turn_id)
    assert seat.state is not None
    return seat.state


async def _over_unary(client: Client, seat: _Seat) -> pb.GameState:
    """The game over SubscribeGame and a SubmitPlay call per turn."""
    while True:
        async for ev in client.events(seat.game_id, client_seed=seat.seed, own_turns=True):
            seat.seen(ev)
            if over(ev):
                return seat.state
            if not seat.wants(ev):
                continue
            choice = await seat.answer(ev.state)
            if await submit_play(client, seat.game_id, ev.state, choice) is None:
                break  # unreachable: follow the game again from a fresh snapshot
            seat.finished(ev.state.turn_id)
        else:
            assert seat.state is not None
            return seat.state


#: what the engine's log says when the SDK played for a failing engine (nardy check-engine
#: looks for it)
INSTEAD = "playing the first legal play instead"


async def _think(engine: Engine, state: pb.GameState) -> pb.LegalPlay | str:
    """The engine's choice, checked against the turn's legal plays before it is sent: an
    engine that fails, or answers what is no legal play, loses the quality of a move (the
    first legal play is made, and logged), never a refusal the game counts."""
    turn = TurnInfo(state)
    try:
        choice = await trio.to_thread.run_sync(engine, turn)
    except Exception:
        log.exception("engine failed on turn %d; %s", state.turn_id, INSTEAD)
        return state.legal_plays[0]
    try:
        return legal_choice(turn, choice)
    except ValueError as e:
        log.error("engine answered turn %d with %s; %s", state.turn_id, e, INSTEAD)
        return state.legal_plays[0]


def legal_choice(turn: TurnInfo, choice: object) -> pb.LegalPlay | str:
    """An engine's answer as one of the turn's legal plays: a ``LegalPlay`` of the turn, a
    play in notation, or a play of the rules library (``turn.variant.legal_plays``);
    ValueError saying what it is instead."""
    ends = {p.end_position: p for p in turn.state.legal_plays}
    if isinstance(choice, pb.LegalPlay):
        if choice.end_position in ends:
            return choice
        raise ValueError(f"a LegalPlay of another turn ({choice.notation or '?'})")
    if isinstance(choice, str):
        if choice in ends:  # (an end position written where notation is asked for)
            return ends[choice]
        try:
            turn.variant.match_play(turn.position, turn.dice, choice)
        except ValueError as e:
            raise ValueError(f"{choice!r}, not a legal play ({e})") from None
        return choice
    end = getattr(choice, "end", None)  # a play of the rules library
    text = end.text() if end is not None and hasattr(end, "text") else None
    if text in ends:
        return ends[text]
    raise ValueError(f"{type(choice).__name__} {choice!r:.80}, not a legal play")


async def submit_play(
    client: Client,
    game_id: str,
    state: pb.GameState,
    choice: pb.LegalPlay | str,
    *,
    attempts: int = 5,
) -> bool | None:
    """Submit ``choice`` for the turn of ``state``: True once the arbiter has it, False if it
    refuses the turn for good (e.g. the turn is over), None if it cannot be reached.

    Plays are idempotent, so a call that failed in transit is simply sent again. A play the
    arbiter refuses is replaced by the first legal play (and logged), so that a faulty
    engine loses the quality of a move, not the game on time.
    """
    fields = choice_fields(choice)
    while True:
        try:
            await client.submit(game_id, state.turn_id, **fields, attempts=attempts)
            return True
        except grpc.RpcError as e:
            if e.code() in BACK_OFF:
                return None  # still unreachable after the retries
            fallback = first_legal_instead(state, fields)
            if e.code() == grpc.StatusCode.INVALID_ARGUMENT and fallback is not None:
                log.warning(
                    "game %s turn %d: play refused (%s); playing %s instead",
                    game_id,
                    state.turn_id,
                    e.details(),
                    state.legal_plays[0].notation,
                )
                fields = fallback
                continue
            log.warning("game %s turn %d: %s", game_id, state.turn_id, e.details())
            return False


# The shortest turn an engine accepts a challenge for unless it states its own: a turn's
# messages and a quick choice, with room to spare.
TURN_TIME_FLOOR_MS = 1000


@dataclass(frozen=True)
class Consent:
    """The challenges an engine accepts, as its operator states them (``accept_challenges``
    on :func:`serve_games`, :func:`play_forever` and :func:`run_engine`; ``nardy engine NAME
    --accept-challenges``).

    A challenge is accepted when its variant is one the engine plays, its turn time is at
    least the engine's floor, one turn with the whole time bank lasts at most
    ``max_turn_time_ms``, the match is at most ``max_points`` long, each game waits at
    least ``min_start_timeout_ms`` for the engine's seat (a shorter wait would lose it by
    abandonment before it could come), and the engine plays fewer than
    ``max_games_at_once`` matches now and fewer than ``max_per_opponent`` against this
    challenger; every other challenge is declined (DeclineChallenge, nothing more).
    Matches the engine was seated in otherwise (a ladder, the operator, its own) count
    towards both limits but are never refused: they needed no consent of this kind.

    ``variants`` None: the engine's own ``variants`` (a bundled engine states them; an
    engine function may carry the attribute); ``min_turn_time_ms`` None: the engine's
    ``turn_time_floor_ms``, else :data:`TURN_TIME_FLOOR_MS`.
    """

    variants: tuple[str, ...] | None = None
    min_turn_time_ms: int | None = None
    max_turn_time_ms: int = 600_000
    max_points: int = 25
    min_start_timeout_ms: int = 10_000
    max_games_at_once: int = 4
    max_per_opponent: int = 1

    def stated(self, engine: Engine) -> Consent:
        """This consent with what it leaves to the engine taken from it; ValueError when
        the variants are nowhere stated or a limit makes no sense."""
        variants = self.variants if self.variants is not None else getattr(engine, "variants", ())
        if not variants:
            raise ValueError(
                "an engine that accepts challenges states the variants it plays: give "
                "Consent(variants=...) or an engine with a `variants` attribute"
            )
        for name in variants:
            rules_named(name)  # ValueError for a variant the library does not know
        floor = self.min_turn_time_ms
        if floor is None:
            floor = getattr(engine, "turn_time_floor_ms", TURN_TIME_FLOOR_MS)
        if not 0 <= floor <= self.max_turn_time_ms:
            raise ValueError("the turn time floor is 0 or more, and at most max_turn_time_ms")
        if min(self.max_points, self.max_games_at_once, self.max_per_opponent) < 1:
            raise ValueError("max_points, max_games_at_once and max_per_opponent are at least 1")
        return replace(self, variants=tuple(variants), min_turn_time_ms=floor)

    def refusal(self, challenge: api.Challenge, playing: dict[str, str]) -> str | None:
        """Why ``challenge`` is declined (None: accepted), ``playing`` being the matches
        the engine plays now (match id -> opponent's name)."""
        o = challenge.options
        name = options_of(o).variant
        if name not in (self.variants or ()):
            return f"this engine plays {', '.join(self.variants or ())} nardy, not {name}"
        if o.turn_time_ms < (self.min_turn_time_ms or 0):
            return f"a turn of {o.turn_time_ms} ms is under this engine's {self.min_turn_time_ms}"
        if o.turn_time_ms + o.time_bank_ms > self.max_turn_time_ms:
            return f"a turn may last more than {self.max_turn_time_ms} ms"
        if challenge.target_points > self.max_points:
            return f"a match to {challenge.target_points} points is over {self.max_points}"
        wait = challenge.start_timeout_ms  # (0: an arbiter that does not say)
        if 0 < wait < self.min_start_timeout_ms:
            return f"a game waits {wait} ms for its seats, under {self.min_start_timeout_ms}"
        if len(playing) >= self.max_games_at_once:
            return f"already playing {len(playing)} matches"
        theirs = sum(1 for opponent in playing.values() if opponent == challenge.challenger.name)
        if theirs >= self.max_per_opponent:
            return f"already playing {theirs} against {challenge.challenger.name}"
        return None


async def serve_games(
    client: Client,
    engine: Engine,
    *,
    max_games: int | None = None,
    accept_challenges: bool | Consent = False,
    stopping: trio.Event | None = None,
) -> None:
    """Play every game ``client``'s player is seated in, concurrently, as the player
    stream announces them (each match's games in turn); return after ``max_games``, or
    once ``stopping`` is set and the games being played are over (or run until cancelled).

    ``accept_challenges`` (True, or a :class:`Consent` with its limits): answer the
    challenges made to the player as the consent says, when the player stream announces
    them (PLAYER_EVENT_TYPE_CHALLENGE: when one is made, and each waiting one on every
    subscribe; one ListChallenges call for the challenges announced meanwhile, then one
    AcceptChallenge or DeclineChallenge each, in turn), and play the accepted ones."""
    consent = None
    if accept_challenges:
        chosen = accept_challenges if isinstance(accept_challenges, Consent) else Consent()
        consent = chosen.stated(engine)
    seen: set[str] = set()
    tasks: dict[str, int] = {}  # match id -> its tasks running (a match's games in turn)
    playing: dict[str, str] = {}  # match id -> the opponent's name, while it is played
    finished = trio.Event()
    count = 0

    async def one(game_id: str, match_id: str) -> None:
        nonlocal count
        try:
            while game_id:
                try:
                    state = await play_game(client, game_id, engine)
                    game_id = state.next_game_id  # (the match goes on)
                except grpc.RpcError as e:
                    log.warning("game %s: %s", game_id, e.details())
                    game_id = ""
                count += 1
                if max_games is not None and count >= max_games:
                    finished.set()
                if not game_id or game_id in seen:
                    break  # (over, or its announcement came first: played by its own task)
                seen.add(game_id)
        finally:
            tasks[match_id] -= 1
            if not tasks[match_id]:
                del tasks[match_id], playing[match_id]
            if not tasks and stopping is not None and stopping.is_set():
                finished.set()

    async with trio.open_nursery() as nursery:

        def start(game_id: str, match_id: str, opponent: str) -> None:
            if game_id in seen:
                return
            seen.add(game_id)
            tasks[match_id] = tasks.get(match_id, 0) + 1
            playing[match_id] = opponent
            nursery.start_soon(one, game_id, match_id)

        bell_in, bell = trio.open_memory_channel[None](1)  # challenges announced meanwhile

        async def watch() -> None:
            async for ev in client.player_events():
                if ev.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED:
                    start(ev.game_id, ev.match_id, ev.opponent.name)
                elif ev.type == api.PLAYER_EVENT_TYPE_CHALLENGE and consent is not None:
                    with contextlib.suppress(trio.WouldBlock):
                        bell_in.send_nowait(None)

        async def stop() -> None:
            await stopping.wait()  # (a game announced from now on is still played: a
            if not tasks:  # ladder may have paired the player just before it left)
                finished.set()

        nursery.start_soon(watch)
        if stopping is not None:
            nursery.start_soon(stop)
        if consent is not None:
            args = client, consent, bell, playing, start, stopping
            nursery.start_soon(_answer_challenges, *args)
        await finished.wait()
        nursery.cancel_scope.cancel()


RELIST_S = 2.0  # a failed ListChallenges asked again after this


async def _answer_challenges(
    client: Client,
    consent: Consent,
    bell: trio.MemoryReceiveChannel,
    playing: dict[str, str],
    start: Callable[[str, str, str], None],
    stopping: trio.Event | None,
) -> None:
    """Each time challenges are announced: the ones waiting, each accepted (and its game
    started at once, so that it counts for the next) or declined, one call at a time
    (every one once ``stopping`` is set)."""
    async for _ in bell:
        while True:  # (a challenge announced must be answered: its challenger waits)
            try:
                waiting = await client.list_challenges()
                break
            except grpc.RpcError as e:
                log.warning("challenges: %s; asking again in %g s", e.details(), RELIST_S)
                await trio.sleep(RELIST_S)
        for c in waiting:
            points = f"{c.target_points} point" + ("s" if c.target_points != 1 else "")
            terms = f"{c.options.variant} nardy, {points}, {c.options.turn_time_ms} ms a turn"
            why = consent.refusal(c, playing)
            if stopping is not None and stopping.is_set():
                why = "the engine is stopping"
            try:
                if why is None:
                    r = await client.accept_challenge(c.match_id)
                    start(r.game_id, c.match_id, c.challenger.name)
                    log.info("challenge from %s (%s) accepted", c.challenger.name, terms)
                else:
                    await client.decline_challenge(c.match_id)
                    log.info("challenge from %s (%s) declined: %s", c.challenger.name, terms, why)
            except grpc.RpcError as e:  # (withdrawn, expired, or the arbiter away)
                log.info("challenge %s from %s: %s", c.match_id, c.challenger.name, e.details())


async def play_forever(
    engine: Engine,
    *,
    address: str | None = None,
    token: str | None = None,
    max_games: int | None = None,
    reconnect: Reconnect | None = None,
    transport: str = PLAY,
    accept_challenges: bool | Consent = False,
    ladders: Sequence[str] = (),
) -> None:
    """Connect (``$NARDY_SERVER``, ``$NARDY_TOKEN`` by default) and serve games; a lost
    arbiter is waited for as ``reconnect`` says (default: quietly, forever). ``transport``:
    see :class:`Client`; ``accept_challenges``: see :func:`serve_games`. The player is
    ready in ``ladders`` while it serves, and no longer once it stops (a ladder would
    otherwise pair it and it would lose its games by abandonment).

    SIGTERM (systemctl stop, docker stop, a supervisor) leaves the ladders at once and
    stops once the games being played are over (a ladder's pair is played out, not
    forfeited); a second SIGTERM, or Ctrl-C, stops at once."""
    token = token if token is not None else os.environ.get(ENV_TOKEN)
    stopping = trio.Event()
    async with Client(address, token, reconnect=reconnect, transport=transport) as client:

        async def leave_when_stopping(scope: trio.CancelScope) -> None:
            await stopping.wait()
            reached = await _leave(client, ladders) if ladders else await _reachable(client)
            if not reached:  # (the arbiter is gone: so are its games; an orphan of a
                scope.cancel()  # ladder runner killed, which joined it, is not kept waiting)

        try:
            async with trio.open_nursery() as nursery:
                if threading.current_thread() is threading.main_thread():
                    # listening before the player is ready anywhere: a SIGTERM a moment
                    # after would otherwise kill the process with its ladders still joined
                    await nursery.start(_stopped_by_sigterm, nursery.cancel_scope, stopping)
                for ladder in ladders:
                    await client.join_ladder(ladder)
                nursery.start_soon(leave_when_stopping, nursery.cancel_scope)
                await serve_games(
                    client,
                    engine,
                    max_games=max_games,
                    accept_challenges=accept_challenges,
                    stopping=stopping,
                )
                nursery.cancel_scope.cancel()
        finally:
            with trio.move_on_after(5) as leaving:
                leaving.shield = True
                await _leave(client, ladders)


async def _leave(client: Client, ladders: Sequence[str]) -> bool:
    """No longer ready in ``ladders``; False if the arbiter could not be reached."""
    reached = True
    for ladder in ladders:
        try:
            await client.join_ladder(ladder, ready=False)
        except Unreachable:
            reached = False
        except grpc.RpcError as e:
            reached = reached and e.code() != grpc.StatusCode.UNAVAILABLE
    return reached


async def _reachable(client: Client) -> bool:
    """Whether the arbiter answers (a call that changes nothing: any answer will do)."""
    try:
        await client.call("GetGame", api.GetGameRequest(game_id="-"), timeout=10)
    except Unreachable:
        return False
    except grpc.RpcError as e:
        return e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    return True


async def _stopped_by_sigterm(
    scope: trio.CancelScope, stopping: trio.Event, *, task_status=trio.TASK_STATUS_IGNORED
) -> None:
    """SIGTERM: ``stopping`` is set (the games being played are finished); a second
    one cancels ``scope`` (stops at once, as Ctrl-C does)."""
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        task_status.started()
        async for _ in signals:
            if stopping.is_set():
                log.info("SIGTERM again: stopping now")
                scope.cancel()
                return
            log.info(
                "SIGTERM: leaving the ladders, finishing the games being played "
                "(SIGTERM again stops at once)"
            )
            stopping.set()


def run(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """``trio.run``, with what stopped it raised as itself rather than inside trio's
    exception groups: Ctrl-C as KeyboardInterrupt, a lone error as that error
    (``grpc.RpcError``, :class:`Unreachable`, ...), so that callers catch them plainly."""
    try:
        return trio.run(fn, *args)
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is not None:
            raise KeyboardInterrupt from None
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        raise error from None


def run_engine(
    engine: Engine,
    *,
    address: str | None = None,
    token: str | None = None,
    max_games: int | None = None,
    reconnect: Reconnect | None = None,
    transport: str = PLAY,
    accept_challenges: bool | Consent = False,
    ladders: Sequence[str] = (),
) -> None:
    """The synchronous entry point: play games with ``engine`` until interrupted (over the
    ``Play`` stream by default; ``transport="unary"``: SubscribeGame and SubmitPlay), with
    ``accept_challenges`` the challenges its :class:`Consent` accepts, and the games its
    ``ladders`` pair it in. An engine that is a coroutine function, or a consent the
    engine cannot state (:meth:`Consent.stated`), is refused at once (TypeError,
    ValueError), before connecting."""
    if inspect.iscoroutinefunction(engine):
        raise TypeError("an engine is a plain function (it is called in a worker thread)")
    if accept_challenges:
        consent = accept_challenges if isinstance(accept_challenges, Consent) else Consent()
        consent.stated(engine)
    run(
        lambda: play_forever(
            engine,
            address=address,
            token=token,
            max_games=max_games,
            reconnect=reconnect,
            transport=transport,
            accept_challenges=accept_challenges,
            ladders=ladders,
        )
    )


# -- the blocking client ------------------------------------------------------------------
class ClientClosed(RuntimeError):
    """A blocking call was cut short because its SimpleClient was closed."""


class _Loop:
    """A trio loop in a daemon thread that runs coroutines for blocking callers."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._scopes: set[trio.CancelScope] = set()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._idle: trio.Event | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self._thread.name = "nardy-sdk-trio"
        self._thread.start()
        self._ready.wait()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        self._idle = trio.Event()
        self._ready.set()
        await self._stop.wait()
        if self._scopes:  # let the cancelled calls end (with ClientClosed) first
            await self._idle.wait()

    def run(self, fn: Callable[..., Awaitable], *args, **kwargs):
        """``await fn(*args, **kwargs)`` in the loop; its result or its exception here."""
        if self._stop is None or self._stop.is_set():
            raise ClientClosed("the client is closed")
        return trio.from_thread.run(self._guarded, fn, args, kwargs, trio_token=self._token)

    async def _guarded(self, fn, args, kwargs):
        if self._stop is None or self._stop.is_set():  # closed while this call was queued
            raise ClientClosed("the client is closed")
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                return await fn(*args, **kwargs)
            finally:
                self._scopes.discard(scope)
                if not self._scopes and self._stop is not None and self._stop.is_set():
                    self._idle.set()  # type: ignore[union-attr]
        raise ClientClosed("the client was closed during the call")

    def close(self, last: Callable[[], None]) -> None:
        """Cancel the calls in progress, run ``last()`` in the loop, and stop it."""
        if self._stop is None or self._stop.is_set():
            return

        def stop() -> None:
            for scope in list(self._scopes):
                scope.cancel()
            last()
            self._stop.set()

        with contextlib.suppress(trio.RunFinishedError):
            trio.from_thread.run_sync(stop, trio_token=self._token)
        self._thread.join()


def _blocking(method: Callable[..., Awaitable]):
    """The blocking form of a :class:`Client` coroutine method."""

    @functools.wraps(method)
    def call(self: SimpleClient, *args, **kwargs):
        return self._loop.run(method, self.client, *args, **kwargs)

    return call


def _blocking_iter(method: Callable[..., AsyncIterator]):
    """The blocking form of a :class:`Client` async-generator method: a plain generator
    that steps the async one in the loop (resumes, backoff and shutdowns included)."""

    @functools.wraps(method)
    def iterate(self: SimpleClient, *args, **kwargs) -> Iterator:
        stream = method(self.client, *args, **kwargs)
        try:
            while True:
                try:
                    item = self._loop.run(stream.__anext__)
                except StopAsyncIteration:
                    return
                yield item
        finally:
            with contextlib.suppress(ClientClosed):
                self._loop.run(stream.aclose)

    return iterate


class SimpleClient:
    """The blocking client, for scripts and engines without an event loop: a thin wrapper
    over :class:`Client` (as python-chess's ``SimpleEngine`` wraps its async engine). Every
    method runs the trio client's method on a loop in a background thread, so both behave
    alike: the same retries, resumes and shutdown handling. ``client`` is the trio client.
    """

    def __init__(self, address: str | None = None, token: str | None = None, **options) -> None:
        self._loop = _Loop()
        self._owns_loop = True
        self.client = Client(address, token, **options)

    def with_token(self, token: str) -> SimpleClient:
        """Another identity over the same connection and loop (closing it leaves them to
        this client)."""
        other = SimpleClient.__new__(SimpleClient)
        other._loop, other._owns_loop = self._loop, False
        other.client = self.client.with_token(token)
        return other

    @property
    def address(self) -> str:
        return self.client.address

    @property
    def token(self) -> str | None:
        return self.client.token

    def __enter__(self) -> SimpleClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Cancel calls in progress (they raise :class:`ClientClosed`) and disconnect."""
        if self._owns_loop:
            self._loop.close(self.client.close)

    call = _blocking(Client.call)
    register = _blocking(Client.register)
    create_match = _blocking(Client.create_match)
    get_game = _blocking(Client.get_game)
    list_games = _blocking(Client.list_games)
    all_games = _blocking(Client.all_games)
    record = _blocking(Client.record)
    submit = _blocking(Client.submit)
    resign = _blocking(Client.resign)
    accept_challenge = _blocking(Client.accept_challenge)
    decline_challenge = _blocking(Client.decline_challenge)
    list_challenges = _blocking(Client.list_challenges)
    create_ladder = _blocking(Client.create_ladder)
    join_ladder = _blocking(Client.join_ladder)
    standings = _blocking(Client.standings)
    crosstable = _blocking(Client.crosstable)
    events = _blocking_iter(Client.events)
    player_events = _blocking_iter(Client.player_events)

    def play(self, game_id: str, engine: Engine, *, transport: str | None = None) -> pb.GameState:
        """Play one game with ``engine`` (see :func:`play_game`); returns the final state."""
        return self._loop.run(play_game, self.client, game_id, engine, transport=transport)

    def serve_games(
        self,
        engine: Engine,
        *,
        max_games: int | None = None,
        accept_challenges: bool | Consent = False,
    ) -> None:
        """Play every game this player is seated in, and with ``accept_challenges`` the
        challenges it accepts (see :func:`serve_games`)."""
        self._loop.run(
            serve_games,
            self.client,
            engine,
            max_games=max_games,
            accept_challenges=accept_challenges,
        )
