"""The front: a process of its own that owns the public port and forwards every call to the
core (``nardy serve --front``; the core's side is server.fronted).

In one process the trio core and the grpc.aio transport share one GIL, and a play that
arrives while the core is busy waits in the transport's loop, unstamped, charged to its
side (issue 10, "fair clocks under load"). The front does nothing but forward bytes: it
stamps every SubmitPlay as it arrives, on CLOCK_MONOTONIC (``time.perf_counter``, one clock
for every process on Linux), and hands it on with that stamp and the caller's peer address
as metadata the core trusts only with the key it gave the front at spawn (on stdin: never
on a command line or in a log). Metadata of that name from clients is dropped.

Forwarding is generic (raw bytes, every cardinality, so health and reflection pass
through); status, details and trailing metadata come back as the core sent them; deadlines
and cancellation go on to the core. Every method is registered (accepted by a loop of its
own). Plays are kept asked for ahead (``--accept-ahead``) and stamped as their request is
drained from grpc's completion queue, before any task runs (server.bridge.AcceptAhead), by
a loop that drains that queue ahead of other work (server.bridge.DrainFirst); like the core,
the front freezes its long-lived objects and those that survive middle collections, so no
full garbage collection stalls it (server.collector). The front also stamps when it sends a
seat the TURN_STARTED of its turn (:class:`Sends`): the side's clock runs from then, not from
when the core handed it to the front.

The core reaches the front on a unix socket of its own for one call, the *fence*
(:class:`InFlight`): before the core declares a timeout it asks whether a play of that game
stamped before the deadline is still on its way, and the front answers once none is (a
play stays in flight until the core has answered it), with when it sent the turn (which
may move the deadline later: the core then waits again).

Run by the core as ``python -m server.front`` with a JSON config line on stdin; it prints
its port on stdout once serving, and stops when its stdin closes (the core stopped or died).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import signal
import struct
import sys
import time
from collections import OrderedDict

import grpc

from server.bridge import AcceptAhead, DrainFirst, received
from server.collector import FrozenGenerations
from server.cpu import avoid

log = logging.getLogger("nardy.front")

PREFIX = "nardy-front-"  # metadata only the front sets (dropped when a client sends it)
KEY = PREFIX + "key"
PEER = PREFIX + "peer"
ARRIVAL = PREFIX + "arrival"  # SubmitPlay's arrival, CLOCK_MONOTONIC seconds (repr)
SENT = PREFIX + "sent"  # when the front sent the play's turn to its seat (same clock)
PLAY = "/nardy.v1.ArbiterService/SubmitPlay"
EVENTS = "/nardy.v1.ArbiterService/SubscribeGame"
FENCE = "/nardy.front.Front/Fence"
STOP_GRACE_S = 1.0


def methods() -> dict[str, tuple[bool, bool]]:
    """Every method forwarded: path -> (client streaming, server streaming)."""
    from grpc_health.v1 import health_pb2
    from grpc_reflection.v1alpha import reflection_pb2

    from nardy.v1 import admin_pb2, arbiter_pb2, ladder_pb2
    from server.reflection import V1

    out = {}
    for module in (arbiter_pb2, ladder_pb2, admin_pb2, health_pb2, reflection_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for m in service.methods:
                out[f"/{service.full_name}/{m.name}"] = (m.client_streaming, m.server_streaming)
    out[f"/{V1}/ServerReflectionInfo"] = (True, True)
    return out


_FENCE = struct.Struct("<dQ")  # request: before (CLOCK_MONOTONIC seconds), turn; the game
_FENCED = struct.Struct("<?d")  # answer: a play was in flight, the turn's send (nan: none)


def fence_request(game_id: str, turn_id: int, before: float) -> bytes:
    return _FENCE.pack(before, turn_id) + game_id.encode()


def fence_answer(answer: bytes) -> tuple[bool, float | None]:
    waited, sent = _FENCED.unpack(answer)
    return waited, None if math.isnan(sent) else sent


def turn_of_play(request: bytes) -> tuple[str, int] | None:
    """The game and turn a SubmitPlay is for (None if the request does not parse)."""
    from nardy.v1 import arbiter_pb2

    try:
        play = arbiter_pb2.SubmitPlayRequest.FromString(request)
    except Exception:  # unparsable: the core refuses it
        return None
    return play.game_id, play.turn_id


def event_type(message: bytes) -> int:
    """A GameEvent's type read from its first bytes (the core writes ``seq`` (1) and
    ``type`` (2) first, as protobuf serializes fields in number order); 0 if not there."""
    i = 1 if message[:1] == b"\x08" else 0
    if i:
        while i < len(message) and message[i] & 0x80:
            i += 1
        i += 1
    if message[i : i + 1] == b"\x10" and i + 1 < len(message):
        return message[i + 1]  # (the event types are all < 128: one byte)
    return 0


class Sends:
    """When this front first sent each game's current turn to the seat that must play it
    (a TURN_STARTED with legal plays), on CLOCK_MONOTONIC: the side's clock runs from then.
    A game is forgotten when its end is forwarded, or (its end never came this way: no
    stream was open) once ``most`` games' turns were sent after its own."""

    def __init__(self, most: int = 100_000) -> None:
        from nardy.v1 import game_pb2

        self._event = game_pb2.GameEvent
        self._turn = game_pb2.EVENT_TYPE_TURN_STARTED
        self._over = (game_pb2.EVENT_TYPE_GAME_FINISHED, game_pb2.EVENT_TYPE_GAME_ABORTED)
        self.most = most
        self.turns: OrderedDict[str, tuple[int, float]] = OrderedDict()  # game -> (turn, sent)

    def sending(self, message: bytes) -> None:
        """``message`` (a GameEvent) is about to be written to its stream."""
        kind = event_type(message)
        if kind == self._turn:
            st = self._event.FromString(message).state
            mine = st.legal_plays and st.side_to_move == st.your_color
            if mine and self.turns.get(st.game_id, (None,))[0] != st.turn_id:
                self.turns[st.game_id] = (st.turn_id, time.perf_counter())
                self.turns.move_to_end(st.game_id)
                if len(self.turns) > self.most:
                    self.turns.popitem(last=False)
        elif kind in self._over:
            self.turns.pop(self._event.FromString(message).state.game_id, None)

    def sent(self, game_id: str, turn_id: int) -> float | None:
        turn, at = self.turns.get(game_id, (None, None))
        return at if turn == turn_id else None


class InFlight:
    """SubmitPlays stamped here and not yet answered by the core, per game."""

    def __init__(self) -> None:
        self._plays: dict[str, dict[int, float]] = {}
        self._done: dict[str, asyncio.Event] = {}
        self._ids = 0

    def add(self, game_id: str, stamp: float) -> int:
        self._ids += 1
        self._plays.setdefault(game_id, {})[self._ids] = stamp
        return self._ids

    def remove(self, game_id: str, play: int) -> None:
        plays = self._plays.get(game_id)
        if plays is not None:
            plays.pop(play, None)
            if not plays:
                del self._plays[game_id]
        done = self._done.pop(game_id, None)
        if done is not None:
            done.set()

    async def wait(self, game_id: str, before: float) -> bool:
        """Until no play of ``game_id`` stamped before ``before`` is in flight; True if
        one was."""
        waited = False
        while any(t < before for t in self._plays.get(game_id, {}).values()):
            waited = True
            await self._done.setdefault(game_id, asyncio.Event()).wait()
        return waited


class Forwarder(grpc.GenericRpcHandler):
    """Every known method, forwarded as bytes to the core over ``channel``."""

    def __init__(
        self, channel: grpc.aio.Channel, key: str, inflight: InFlight, sends: Sends
    ) -> None:
        self.channel = channel
        self.key = key
        self.inflight = inflight
        self.sends = sends
        self.handlers = {path: self._handler(path, *kind) for path, kind in methods().items()}

    def service(self, handler_call_details):
        return self.handlers.get(handler_call_details.method)

    def _metadata(
        self, context, arrival: float | None = None, sent: float | None = None
    ) -> list[tuple[str, str | bytes]]:
        md = [
            (k, v)
            for k, v in context.invocation_metadata() or ()
            if not k.startswith(PREFIX) and k != "user-agent"
        ]
        md += [(KEY, self.key), (PEER, context.peer() or "")]
        if arrival is not None:
            md.append((ARRIVAL, repr(arrival)))
        if sent is not None:
            md.append((SENT, repr(sent)))
        return md

    def _handler(self, path: str, streaming_in: bool, streaming_out: bool):
        if not streaming_in and not streaming_out:
            call = self.channel.unary_unary(path)
            if path == PLAY:
                return grpc.unary_unary_rpc_method_handler(self._play(call))
            return grpc.unary_unary_rpc_method_handler(self._unary(call))
        if not streaming_in:
            multi = self.channel.unary_stream(path)
            watch = self.sends.sending if path == EVENTS else None
            return grpc.unary_stream_rpc_method_handler(self._stream(multi, watch))
        if not streaming_out:
            return grpc.stream_unary_rpc_method_handler(
                self._unary(self.channel.stream_unary(path))
            )
        return grpc.stream_stream_rpc_method_handler(self._stream(self.channel.stream_stream(path)))

    def _unary(self, multi):
        async def handler(request, context):
            return await self._answer(multi, request, context, self._metadata(context))

        return handler

    def _play(self, multi):
        async def handler(request: bytes, context):
            arrival = received()  # when its request was received (AcceptAhead)
            if arrival is None:  # (accepted by grpc.aio itself)
                arrival = time.perf_counter()  # first: the side is charged up to here
            turn = turn_of_play(request)
            if turn is None:
                return await self._answer(multi, request, context, self._metadata(context))
            game_id, turn_id = turn
            play = self.inflight.add(game_id, arrival)
            md = self._metadata(context, arrival, self.sends.sent(game_id, turn_id))
            try:
                return await self._answer(multi, request, context, md)
            finally:
                self.inflight.remove(game_id, play)

        return handler

    async def _answer(self, multi, request, context, metadata):
        call = multi(request, metadata=metadata, timeout=context.time_remaining())
        try:
            response = await call
        except grpc.aio.AioRpcError as e:
            await context.abort(e.code(), e.details() or "", tuple(e.trailing_metadata() or ()))
        finally:
            call.cancel()  # (a no-op once it is over; the caller went away otherwise)
        trailing = await call.trailing_metadata()
        if trailing:
            context.set_trailing_metadata(tuple(trailing))
        return response

    def _stream(self, multi, watch=None):
        """Messages forwarded as they come, with grpc.aio's reader/writer calls (async
        generators on both sides cost ~8% more of the front's CPU under load); ``watch``
        (if given) sees each just before it is written."""

        async def handler(request, context) -> None:
            call = multi(
                request, metadata=self._metadata(context), timeout=context.time_remaining()
            )
            try:
                while (message := await call.read()) is not grpc.aio.EOF:
                    if watch is not None:
                        watch(message)
                    await context.write(message)
                trailing = await call.trailing_metadata()
            except grpc.aio.AioRpcError as e:
                await context.abort(e.code(), e.details() or "", tuple(e.trailing_metadata() or ()))
            finally:
                call.cancel()
            if trailing:
                context.set_trailing_metadata(tuple(trailing))

        return handler


def fence_handler(inflight: InFlight, sends: Sends, key: str):
    async def fence(request: bytes, context) -> bytes:
        if dict(context.invocation_metadata() or ()).get(KEY) != key:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the core")
        before, turn_id = _FENCE.unpack_from(request)
        game_id = request[_FENCE.size :].decode()
        waited = await inflight.wait(game_id, before)
        sent = sends.sent(game_id, turn_id)
        return _FENCED.pack(waited, math.nan if sent is None else sent)

    return grpc.unary_unary_rpc_method_handler(fence)


async def serve(config: dict) -> None:
    """Serve until stdin closes (or SIGTERM)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the core decides when to stop

    def readable() -> None:
        if not os.read(sys.stdin.fileno(), 4096):
            stop.set()

    loop.add_reader(sys.stdin.fileno(), readable)
    key = config["key"]
    channel = grpc.aio.insecure_channel(
        f"unix:{config['core']}", options=[("grpc.max_receive_message_length", -1)]
    )
    inflight, sends = InFlight(), Sends()
    public = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", config["max_message_bytes"]),
            ("grpc.keepalive_time_ms", 20_000),
            ("grpc.keepalive_timeout_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=config["max_concurrent_rpcs"],
    )
    forwarder = Forwarder(channel, key, inflight, sends)
    public.add_generic_rpc_handlers((forwarder,))
    services: dict[str, dict] = {}
    for path, handler in forwarder.handlers.items():
        service, name = path[1:].split("/")
        services.setdefault(service, {})[name] = handler
    for service, handlers in services.items():  # each method accepted by a loop of its own
        public.add_registered_method_handlers(service, handlers)
    address = f"{config['host']}:{config['port']}"
    if config.get("tls_cert"):
        with open(config["tls_key"], "rb") as k, open(config["tls_cert"], "rb") as c:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        port = public.add_secure_port(address, creds)
    else:
        port = public.add_insecure_port(address)
    private = grpc.aio.server()
    private.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                FENCE.split("/")[1], {"Fence": fence_handler(inflight, sends, key)}
            ),
        )
    )
    private.add_insecure_port(f"unix:{config['fence']}")
    await private.start()
    await public.start()
    # plays accepted several at a time, as in the core's transport (measured: bench clock)
    ahead = AcceptAhead(public, PLAY, forwarder.handlers[PLAY], config["max_concurrent_rpcs"])
    ahead.start(config["accept_ahead"])
    if config.get("freeze_gc"):  # as the core: no full pass over the long-lived objects
        FrozenGenerations().install()
    print(port, flush=True)
    await stop.wait()
    await public.stop(STOP_GRACE_S)
    ahead.stop()
    await private.stop(0)
    await channel.close()


def main() -> None:
    config = json.loads(sys.stdin.readline())
    if config.get("avoid_cpu") is not None:  # the core's CPU (server.cpu): use the others
        avoid(config["avoid_cpu"])
    logging.basicConfig(
        level=config.get("log_level", logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    with asyncio.Runner(loop_factory=DrainFirst) as runner:
        runner.run(serve(config))


if __name__ == "__main__":
    main()
