"""The client SDK: connect to an arbiter, follow games, and play them with one function.

A Python engine is one function from a :class:`TurnInfo` to a play; :func:`run_engine` (or
``await play_forever(...)`` under trio) does the rest: the player stream, one task per game,
resuming a dropped stream from the last sequence number with backoff, idempotent plays
named by ``turn_id``, and deadlines on every call.

grpcio has no trio support, so unary calls use ``stub.Method.future`` woken through the trio
token, and each stream is read by one thread feeding a trio memory channel.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import grpc
import trio

from nardy.game import Color
from nardy.long.position import Position
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

log = logging.getLogger("nardy.client")

ENV_SERVER = "NARDY_SERVER"
ENV_TOKEN = "NARDY_TOKEN"
ENV_TLS = "NARDY_TLS"
ENV_TLS_CA = "NARDY_TLS_CA"
RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}
END_TYPES = {pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED}
COLORS = {pb.COLOR_WHITE: Color.WHITE, pb.COLOR_BLACK: Color.BLACK}


@dataclass(frozen=True)
class TurnInfo:
    """What an engine sees when it must play: the state and the legal plays."""

    state: pb.GameState

    @property
    def position(self) -> Position:
        return Position.parse(self.state.position)

    @property
    def dice(self) -> tuple[int, int]:
        a, b = self.state.dice
        return a, b

    @property
    def color(self) -> Color:
        return COLORS[self.state.your_color]

    @property
    def legal(self) -> list[pb.LegalPlay]:
        return list(self.state.legal_plays)

    @property
    def time_left_ms(self) -> int:
        clock = self.state.white_clock if self.color is Color.WHITE else self.state.black_clock
        return clock.remaining_ms


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


def channel(
    address: str, *, tls: bool | None = None, root_certificates: bytes | None = None
) -> grpc.Channel:
    """A channel with keepalive, so that a dead connection is noticed within seconds.

    ``tls`` None follows the environment (see :func:`tls_settings`); TLS without
    ``root_certificates`` trusts the system's roots.
    """
    options = [
        ("grpc.keepalive_time_ms", 10_000),
        ("grpc.keepalive_timeout_ms", 5_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    tls, root_certificates = tls_settings(tls, root_certificates)
    if tls:
        creds = grpc.ssl_channel_credentials(root_certificates)
        return grpc.secure_channel(address, creds, options=options)
    return grpc.insecure_channel(address, options=options)


class Client:
    """An arbiter connection for trio code. Use ``async with Client(...)`` or call close().

    ``address`` defaults to ``$NARDY_SERVER``; ``token`` is a player or seat token, or None
    for an anonymous (spectator) connection. Engines launched by a runner get their token
    from ``$NARDY_TOKEN`` through :func:`run_engine`.
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
    ) -> None:
        self.address = address or os.environ.get(ENV_SERVER) or "127.0.0.1:50051"
        self.token = token
        self.timeout = timeout
        self._owns_channel = shared is None
        self.channel = shared or channel(self.address, tls=tls, root_certificates=root_certificates)
        self.stub = api_grpc.ArbiterServiceStub(self.channel)

    def with_token(self, token: str) -> Client:
        """Another identity over the same connection."""
        return Client(self.address, token, timeout=self.timeout, shared=self.channel)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_channel:
            self.channel.close()

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    async def call(self, method: str, request, *, timeout: float | None = None):
        """A unary call without blocking trio; raises grpc.RpcError on a status."""
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        fut = getattr(self.stub, method).future(
            request, metadata=self.metadata, timeout=timeout or self.timeout
        )
        fut.add_done_callback(lambda _: token.run_sync_soon(done.set))
        try:
            await done.wait()
        except trio.Cancelled:
            fut.cancel()
            raise
        return fut.result()

    # -- the API ------------------------------------------------------------------------
    async def register(self, name: str, *, bot: bool = True) -> str:
        """Register a player; remembers and returns its token."""
        r = await self.call("RegisterPlayer", api.RegisterPlayerRequest(name=name, bot=bot))
        self.token = r.token
        return r.token

    async def create_match(self, **fields) -> api.CreateMatchResponse:
        return await self.call("CreateMatch", api.CreateMatchRequest(**fields))

    async def get_game(self, game_id: str) -> api.GetGameResponse:
        return await self.call("GetGame", api.GetGameRequest(game_id=game_id))

    async def list_games(
        self, *, status: int = 0, ladder: str = "", limit: int | None = None
    ) -> list[api.GameSummary]:
        """Games newest first, following ListGames page tokens (up to ``limit`` games)."""
        out: list[api.GameSummary] = []
        token = ""
        while limit is None or len(out) < limit:
            size = 500 if limit is None else min(500, limit - len(out))
            r = await self.call(
                "ListGames",
                api.ListGamesRequest(status=status, ladder=ladder, limit=size, page_token=token),
            )
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
    ) -> api.SubmitPlayResponse:
        return await self.call("SubmitPlay", play_request(game_id, turn_id, notation, end_position))

    async def resign(self, game_id: str) -> api.ResignResponse:
        return await self.call("Resign", api.ResignRequest(game_id=game_id))

    # -- streams ------------------------------------------------------------------------
    async def _stream(self, method: str, request) -> AsyncIterator:
        """Read a server stream in a helper thread; items arrive through a channel."""
        send, recv = trio.open_memory_channel(math.inf)
        call = getattr(self.stub, method)(request, metadata=self.metadata)
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

    async def events(
        self,
        game_id: str,
        *,
        after_seq: int = 0,
        from_start: bool = False,
        resume: bool = True,
        max_backoff: float = 5.0,
    ) -> AsyncIterator[pb.GameEvent]:
        """A game's events, resuming after drops from the last seq; ends with the game.

        Heartbeats are passed on too (their seq does not advance).
        """
        last = after_seq
        backoff = 0.1
        while True:
            req = api.SubscribeGameRequest(
                game_id=game_id, after_seq=last, from_start=from_start and last == 0
            )
            try:
                async for ev in self._stream("SubscribeGame", req):
                    backoff = 0.1
                    last = max(last, ev.seq)
                    yield ev
                    if ev.type in END_TYPES:
                        return
                    if ev.type == pb.EVENT_TYPE_SERVER_SHUTDOWN:
                        break
            except grpc.RpcError as e:
                if not resume or e.code() not in RETRYABLE:
                    raise
                log.info(
                    "game %s: stream dropped (%s); resuming after seq %d",
                    game_id,
                    e.code().name,
                    last,
                )
            else:
                if not resume:
                    return
            await trio.sleep(backoff)
            backoff = min(max_backoff, backoff * 2)

    async def player_events(
        self, *, resume: bool = True, max_backoff: float = 5.0
    ) -> AsyncIterator[api.PlayerEvent]:
        """The calling player's stream, reconnecting after drops."""
        backoff = 0.1
        while True:
            try:
                async for ev in self._stream("SubscribePlayer", api.SubscribePlayerRequest()):
                    backoff = 0.1
                    yield ev
                    if ev.type == api.PLAYER_EVENT_TYPE_SERVER_SHUTDOWN:
                        break
            except grpc.RpcError as e:
                if not resume or e.code() not in RETRYABLE:
                    raise
            if not resume:
                return
            await trio.sleep(backoff)
            backoff = min(max_backoff, backoff * 2)


def my_turn(ev: pb.GameEvent) -> bool:
    """True when this seat's stream event asks for a play."""
    st = ev.state
    return (
        ev.type in (pb.EVENT_TYPE_TURN_STARTED, pb.EVENT_TYPE_SNAPSHOT)
        and st.status == pb.GAME_STATUS_IN_PROGRESS
        and len(st.legal_plays) > 0
        and st.side_to_move == st.your_color
    )


async def play_game(client: Client, game_id: str, engine: Engine) -> pb.GameState:
    """Play one game with ``engine`` to its end; returns the final state.

    The engine runs in a worker thread, so a slow one does not hold up the other games of
    the process; an engine that raises is logged and the first legal play is made instead.
    If a play cannot reach the arbiter, the game is followed again from a fresh snapshot,
    which shows whether the turn is still waiting for it.
    """
    state = None
    played = 0  # the last turn this seat has answered
    while True:
        async for ev in client.events(game_id):
            state = ev.state
            if ev.type in END_TYPES:
                return state
            if not my_turn(ev) or state.turn_id <= played:
                continue
            choice = await _think(engine, state)
            if await submit_play(client, game_id, state, choice) is None:
                break  # unreachable: follow the game again from a fresh snapshot
            played = state.turn_id
        else:
            assert state is not None
            return state


async def _think(engine: Engine, state: pb.GameState) -> pb.LegalPlay | str:
    try:
        return await trio.to_thread.run_sync(engine, TurnInfo(state))
    except Exception:
        log.exception("engine failed on turn %d; playing the first legal play", state.turn_id)
        return state.legal_plays[0]


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
    delay = 0.05
    for _ in range(attempts):
        try:
            await client.submit(game_id, state.turn_id, **fields)
            return True
        except grpc.RpcError as e:
            code = e.code()
            if code in RETRYABLE:
                await trio.sleep(delay)
                delay *= 2
                continue
            if code == grpc.StatusCode.INVALID_ARGUMENT and state.legal_plays:
                log.warning(
                    "game %s turn %d: play refused (%s); playing %s instead",
                    game_id,
                    state.turn_id,
                    e.details(),
                    state.legal_plays[0].notation,
                )
                fields = {"end_position": state.legal_plays[0].end_position}
                continue
            log.warning("game %s turn %d: %s", game_id, state.turn_id, e.details())
            return False
    return None


async def play_forever(
    engine: Engine,
    *,
    address: str | None = None,
    token: str | None = None,
    max_games: int | None = None,
) -> None:
    """Play every game the player is seated in, concurrently, as they are announced."""
    async with Client(address, token if token is not None else os.environ.get(ENV_TOKEN)) as client:
        seen: set[str] = set()
        finished = trio.Event()
        count = 0

        async def one(game_id: str) -> None:
            nonlocal count
            try:
                await play_game(client, game_id, engine)
            except grpc.RpcError as e:
                log.warning("game %s: %s", game_id, e.details())
            count += 1
            if max_games is not None and count >= max_games:
                finished.set()

        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for ev in client.player_events():
                    if ev.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED and ev.game_id not in seen:
                        seen.add(ev.game_id)
                        nursery.start_soon(one, ev.game_id)

            nursery.start_soon(watch)
            await finished.wait()
            nursery.cancel_scope.cancel()


def run_engine(
    engine: Engine,
    *,
    address: str | None = None,
    token: str | None = None,
    max_games: int | None = None,
) -> None:
    """The synchronous entry point: play games with ``engine`` until interrupted."""
    trio.run(lambda: play_forever(engine, address=address, token=token, max_games=max_games))


class SimpleClient:
    """The blocking client, for scripts and engines without an event loop (the shape of
    python-chess's ``SimpleEngine``): the same calls as :class:`Client`, synchronous."""

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        *,
        tls: bool | None = None,
        root_certificates: bytes | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.address = address or os.environ.get(ENV_SERVER) or "127.0.0.1:50051"
        self.token = token
        self.timeout = timeout
        self.channel = channel(self.address, tls=tls, root_certificates=root_certificates)
        self.stub = api_grpc.ArbiterServiceStub(self.channel)

    def __enter__(self) -> SimpleClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def call(self, method: str, request):
        return getattr(self.stub, method)(request, metadata=self.metadata, timeout=self.timeout)

    def register(self, name: str, *, bot: bool = True) -> str:
        self.token = self.call(
            "RegisterPlayer", api.RegisterPlayerRequest(name=name, bot=bot)
        ).token
        return self.token

    def create_match(self, **fields) -> api.CreateMatchResponse:
        return self.call("CreateMatch", api.CreateMatchRequest(**fields))

    def get_game(self, game_id: str) -> api.GetGameResponse:
        return self.call("GetGame", api.GetGameRequest(game_id=game_id))

    def submit(
        self,
        game_id: str,
        turn_id: int,
        *,
        notation: str | None = None,
        end_position: str | None = None,
    ) -> api.SubmitPlayResponse:
        return self.call("SubmitPlay", play_request(game_id, turn_id, notation, end_position))

    def resign(self, game_id: str) -> api.ResignResponse:
        return self.call("Resign", api.ResignRequest(game_id=game_id))

    def events(
        self,
        game_id: str,
        *,
        after_seq: int = 0,
        from_start: bool = False,
        max_backoff: float = 5.0,
    ):
        """A game's events, resuming after drops from the last seq; ends with the game."""
        last, backoff = after_seq, 0.1
        while True:
            req = api.SubscribeGameRequest(
                game_id=game_id, after_seq=last, from_start=from_start and last == 0
            )
            try:
                for ev in self.stub.SubscribeGame(req, metadata=self.metadata):
                    backoff = 0.1
                    last = max(last, ev.seq)
                    yield ev
                    if ev.type in END_TYPES:
                        return
            except grpc.RpcError as e:
                if e.code() not in RETRYABLE:
                    raise
            time.sleep(backoff)
            backoff = min(max_backoff, backoff * 2)

    def play(self, game_id: str, engine: Engine) -> pb.GameState:
        """Play one game with ``engine``; returns the final state."""
        state, played = None, 0
        for ev in self.events(game_id):
            state = ev.state
            if my_turn(ev) and state.turn_id > played:
                choice = engine(TurnInfo(state))
                self.submit(game_id, state.turn_id, **choice_fields(choice))
                played = state.turn_id
        assert state is not None
        return state
