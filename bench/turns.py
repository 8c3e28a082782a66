"""What a turn costs at the arbiter against the transport alone.

Servers, each its own process(es) on loopback, started once and measured in alternating
rounds (this machine is noisy):

- ``nardy serve`` (fresh SQLite file, default options: its edge and its core), driven by
  instant bots in three ways: over the bidirectional ``Play`` stream (the seat's own turns
  down, plays up, each play answered on the stream); over SubscribeGame filtered to the
  seat's own turns (EVENT_FILTER_OWN_TURNS) and a SubmitPlay unary call per play; and the
  same unary way with streams that follow every event (two PLAY_MADE and two TURN_STARTED
  per turn), as clients that do not ask for the filter;
- a **relay** speaking the same ArbiterService messages and doing nothing else: per turn
  one stream message to the side to move (a GameEvent captured from the arbiter's own
  TURN_STARTED, with its legal plays) and one SubmitPlay unary call back: the unary way's
  messages;
- the same relay over one bidirectional stream per seat (``/bench.Relay/Play``: turns
  down, plays up, and a small acknowledgement down to the mover, as the Play stream's
  answer): the Play stream's messages;
- a raw grpc.aio echo server: one unary call with a 64-byte payload, ping-pong.

Turn round trip at one game: a seat receives its TURN_STARTED, sends its play, the answer
comes back and the next turn's event reaches the other seat; p50 against the raw unary
ping-pong p50. Turns per second at 1 and at 8 concurrent games, each way of the arbiter
against the relay that sends the same messages (targets: the Play stream >= 80% of the
bidirectional relay, the unary way >= 60% of the unary relay), with each server's CPU per
turn (/proc; the arbiter's edge and core together, and each).

``python -m bench turns [--quick]``; ``python -m bench.turns relay PORT EVENTS`` runs the
relay. ``python -m bench.turns --against DIR``: also the arbiter of another checkout of the
code in DIR (e.g. the commit before a change: ``git archive COMMIT | tar -x -C DIR``, then
``python setup.py build_ext --inplace`` there), run by the same interpreter, over the Play
stream and the unary way, each compared with this checkout's round by round.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import statistics
import sys
import tempfile
import time

import grpc

from bench.arbiter import ECHO_SERVER, arbiter, children, free_port, pct, process, raw_ping
from bench.bots import ADMIN_ENV, bearer
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

RELAY_TURNS = 80  # turns in one relay game (a long nardy game is ~100-160)
OWN, EVERY, BIDI, PLAY = "own turns", "every event", "bidi", "Play stream"  # how bots play
AGAINST = "other checkout, "  # the servers of --against


# -- the relay -------------------------------------------------------------------------------
class Relay(api_grpc.ArbiterServiceServicer):
    """Two seats per game; one stream message to the mover, one unary call back."""

    def __init__(self, events: list[pb.GameEvent]) -> None:
        self.templates = events  # a TURN_STARTED as seat 0 and as seat 1 see it
        self.finished = pb.GameEvent(type=pb.EVENT_TYPE_GAME_FINISHED)
        self.games: dict[str, list] = {}  # id -> [turn, queue of seat 0, queue of seat 1]

    async def CreateMatch(self, request, context):
        game_id = secrets.token_hex(6)
        self.games[game_id] = [0, asyncio.Queue(), asyncio.Queue(), 0]
        return api.CreateMatchResponse(
            match_id=game_id, game_id=game_id, first_seat_token="0", second_seat_token="1"
        )

    def _turn(self, game: list, turn: int) -> None:
        game[0] = turn
        seat = turn % 2
        if turn > RELAY_TURNS:
            game[1].put_nowait(self.finished)
            game[2].put_nowait(self.finished)
            return
        msg = pb.GameEvent()
        msg.CopyFrom(self.templates[seat])
        msg.state.turn_id = turn
        game[1 + seat].put_nowait(msg)

    async def SubscribeGame(self, request, context):
        seat = int(dict(context.invocation_metadata())["authorization"].split()[-1])
        game = self.games[request.game_id]
        game[3] += 1
        if game[3] == 2:
            self._turn(game, 1)
        queue = game[1 + seat]
        while True:
            msg = await queue.get()
            yield msg
            if msg.type == pb.EVENT_TYPE_GAME_FINISHED:
                return

    async def SubmitPlay(self, request, context):
        game = self.games[request.game_id]
        if request.turn_id != game[0]:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "not the turn")
        self._turn(game, game[0] + 1)
        if game[0] > RELAY_TURNS:
            del self.games[request.game_id]
        return api.SubmitPlayResponse(notation="-", end_position=request.end_position)

    async def Play(self, requests, context):
        """One bidirectional stream per seat: a first request (turn 0) joins the game,
        then each request is a play; down go the turns and an ack per play."""
        seat = int(dict(context.invocation_metadata())["authorization"].split()[-1])
        queue: asyncio.Queue = asyncio.Queue()
        ack = pb.GameEvent(type=pb.EVENT_TYPE_PLAY_MADE)

        async def read() -> None:
            async for req in requests:
                game = self.games.get(req.game_id)
                if game is None:
                    return
                if req.turn_id == 0:
                    game[1 + seat] = queue
                    game[3] += 1
                    if game[3] == 2:
                        self._turn(game, 1)
                elif req.turn_id == game[0]:
                    queue.put_nowait(ack)
                    self._turn(game, game[0] + 1)
                    if game[0] > RELAY_TURNS:
                        del self.games[req.game_id]

        reader = asyncio.create_task(read())
        try:
            while True:
                msg = await queue.get()
                yield msg
                if msg.type == pb.EVENT_TYPE_GAME_FINISHED:
                    return
        finally:
            reader.cancel()


async def relay_main(port: int, path: str) -> None:
    with open(path, "rb") as f:
        events = [pb.GameEvent.FromString(f.read(int(n))) for n in f.readline().split()]
    server = grpc.aio.server()
    relay = Relay(events)
    api_grpc.add_ArbiterServiceServicer_to_server(relay, server)
    play = grpc.stream_stream_rpc_method_handler(
        relay.Play,
        request_deserializer=api.SubmitPlayRequest.FromString,
        response_serializer=pb.GameEvent.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Relay", {"Play": play}),)
    )
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


# -- the bots --------------------------------------------------------------------------------
class Round:
    def __init__(self) -> None:
        self.turns = 0
        self.handover: list[float] = []  # turn event received -> the next mover's event
        self.last_turn_event = 0.0


async def seat(stub, game_id: str, token: str, tally: Round, single: bool, own: bool) -> None:
    """An instant bot; ``own``: its stream filtered to its own turns."""
    md = bearer(token)
    which = api.EVENT_FILTER_OWN_TURNS if own else api.EVENT_FILTER_UNSPECIFIED
    request = api.SubscribeGameRequest(game_id=game_id, filter=which)
    async for ev in stub.SubscribeGame(request, metadata=md):
        st = ev.state
        if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
            return
        if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.legal_plays:
            if st.side_to_move != st.your_color:
                continue
            now = time.perf_counter()
            if single and tally.last_turn_event:
                tally.handover.append(now - tally.last_turn_event)
            tally.last_turn_event = now
            with contextlib.suppress(grpc.RpcError):
                await stub.SubmitPlay(
                    api.SubmitPlayRequest(
                        game_id=game_id,
                        turn_id=st.turn_id,
                        end_position=st.legal_plays[0].end_position,
                    ),
                    metadata=md,
                )
                tally.turns += 1


async def bidi_seat(ch, game_id: str, token: str, tally: Round, single: bool) -> None:
    """The bot of ``seat`` over one bidirectional stream (the relay's /bench.Relay/Play)."""
    play = ch.stream_stream(
        "/bench.Relay/Play",
        request_serializer=api.SubmitPlayRequest.SerializeToString,
        response_deserializer=pb.GameEvent.FromString,
    )
    call = play(metadata=bearer(token))
    await call.write(api.SubmitPlayRequest(game_id=game_id, turn_id=0))
    while (ev := await call.read()) is not grpc.aio.EOF:
        st = ev.state
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            break
        if ev.type == pb.EVENT_TYPE_PLAY_MADE:
            tally.turns += 1  # the ack: as SubmitPlay's answer
        elif ev.type == pb.EVENT_TYPE_TURN_STARTED and st.side_to_move == st.your_color:
            now = time.perf_counter()
            if single and tally.last_turn_event:
                tally.handover.append(now - tally.last_turn_event)
            tally.last_turn_event = now
            end = st.legal_plays[0].end_position
            await call.write(
                api.SubmitPlayRequest(game_id=game_id, turn_id=st.turn_id, end_position=end)
            )
    await call.done_writing()


async def play_seat(stub, game_id: str, token: str, tally: Round, single: bool) -> None:
    """The bot of ``seat`` over the arbiter's bidirectional Play stream."""
    call = stub.Play(metadata=bearer(token))
    await call.write(api.PlayRequest(subscribe=api.SubscribeGameRequest(game_id=game_id)))
    while (response := await call.read()) is not grpc.aio.EOF:
        if response.WhichOneof("kind") == "played":
            tally.turns += 1
            continue
        ev = response.event
        st = ev.state
        if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
            break
        if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.legal_plays:
            now = time.perf_counter()
            if single and tally.last_turn_event:
                tally.handover.append(now - tally.last_turn_event)
            tally.last_turn_event = now
            end = st.legal_plays[0].end_position
            play = api.SubmitPlayRequest(turn_id=st.turn_id, end_position=end)
            await call.write(api.PlayRequest(play=play))
    await call.done_writing()


async def drive(address: str, games: int, seconds: float, admin: str, bots: str) -> Round:
    """``games`` concurrent games, new ones as they end, for ``seconds``; ``bots``: OWN
    (streams filtered to their own turns), EVERY (unfiltered), BIDI (/bench.Relay/Play) or
    PLAY (the arbiter's own bidirectional Play stream)."""
    tally = Round()
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)

        def player(game_id: str, token: str):
            if bots == BIDI:
                return bidi_seat(ch, game_id, token, tally, games == 1)
            if bots == PLAY:
                return play_seat(stub, game_id, token, tally, games == 1)
            return seat(stub, game_id, token, tally, games == 1, bots == OWN)

        async def slot(i: int) -> None:
            while True:
                r = await stub.CreateMatch(
                    api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=60_000)),
                    metadata=bearer(admin),
                )
                tally.last_turn_event = 0.0
                await asyncio.gather(
                    player(r.game_id, r.first_seat_token), player(r.game_id, r.second_seat_token)
                )

        tasks = [asyncio.create_task(slot(i)) for i in range(games)]
        await asyncio.sleep(seconds)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return tally


async def capture(address: str, admin: str) -> list[pb.GameEvent]:
    """A TURN_STARTED with legal plays as each seat sees it (the relay's messages)."""
    found: dict[int, pb.GameEvent] = {}
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        while len(found) < 2:
            r = await stub.CreateMatch(api.CreateMatchRequest(), metadata=bearer(admin))

            async def one(token: str, index: int, game_id: str = r.game_id) -> None:
                md = bearer(token)
                async for ev in stub.SubscribeGame(
                    api.SubscribeGameRequest(game_id=game_id), metadata=md
                ):
                    st = ev.state
                    if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                        return
                    if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.side_to_move == st.your_color:
                        if st.legal_plays and len(st.legal_plays) >= 15 and st.turn_id > 10:
                            found.setdefault(index, ev)
                        await stub.SubmitPlay(
                            api.SubmitPlayRequest(
                                game_id=game_id,
                                turn_id=st.turn_id,
                                end_position=st.legal_plays[0].end_position,
                            ),
                            metadata=md,
                        )

            await asyncio.gather(one(r.first_seat_token, 0), one(r.second_seat_token, 1))
    return [found[0], found[1]]


def cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds of process ``pid`` and of the processes it started (the edge's core)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own, sum(sum(cpu_s(child)) for child in children(pid))


def main(
    quick: bool = False, vs: tuple[str, ...] = (), against: str | None = None, rounds: int = 0
) -> None:
    """The rounds (``rounds``: how many, 0 for the default); ``vs``: more arbiters, each
    started with these ``nardy serve`` options; ``against``: the arbiter of another checkout
    (its directory), played over the Play stream and the unary way as this one is, each
    compared with this one round by round."""
    os.environ.setdefault(ADMIN_ENV, secrets.token_urlsafe(32))
    admin = os.environ[ADMIN_ENV]
    seconds = 6.0 if quick else 12.0
    rounds = rounds or (2 if quick else 3)
    echo_port, relay_port = free_port(), free_port()
    print(f"  load average at start: {os.getloadavg()[0]:.1f}")
    with (
        tempfile.TemporaryDirectory() as tmp,
        arbiter() as (address, proc),
        contextlib.ExitStack() as more,
    ):
        others = {f"arbiter {o}": more.enter_context(arbiter(*o.split())) for o in vs}
        if against is not None:
            there, there_proc = more.enter_context(arbiter(checkout=against))
        events = asyncio.run(capture(address, admin))
        path = os.path.join(tmp, "events.bin")
        with open(path, "wb") as f:
            blobs = [e.SerializeToString() for e in events]
            f.write((" ".join(str(len(b)) for b in blobs) + "\n").encode() + b"".join(blobs))
        print(f"  relay messages: TURN_STARTED with {len(events[0].state.legal_plays)} legal plays")
        relay_cmd = [sys.executable, "-m", "bench.turns", "relay", str(relay_port), path]
        echo_cmd = [sys.executable, "-c", ECHO_SERVER, str(echo_port)]
        with process(relay_cmd, relay_port) as relay, process(echo_cmd, echo_port):
            relay_at = f"127.0.0.1:{relay_port}"
            servers = {  # name: (address, pid, bots)
                "arbiter, Play stream": (address, proc.pid, PLAY),
                "arbiter, unary": (address, proc.pid, OWN),
                "arbiter, every event": (address, proc.pid, EVERY),
                "relay": (relay_at, relay.pid, EVERY),
                "bidi relay": (relay_at, relay.pid, BIDI),
            }
            servers.update({k: (a, p.pid, OWN) for k, (a, p) in others.items()})
            if against is not None:
                servers[AGAINST + PLAY] = (there, there_proc.pid, PLAY)
                servers[AGAINST + "unary"] = (there, there_proc.pid, OWN)
            asyncio.run(raw_ping(f"127.0.0.1:{echo_port}", 300))  # warm up
            # (turns/s, server CPU ms per turn: all, the edge's or relay's own, the core's)
            results: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
            handover: dict[str, list[float]] = {name: [] for name in servers}
            pings: list[float] = []
            for r in range(rounds):
                order = tuple(servers)[:: 1 if r % 2 == 0 else -1]
                for games in (1, 8):
                    for name in order:
                        where, pid, bots = servers[name]
                        edge0, core0 = cpu_s(pid)
                        tally = asyncio.run(drive(where, games, seconds, admin, bots))
                        edge1, core1 = cpu_s(pid)
                        rate = tally.turns / seconds
                        edge, core = (
                            (t1 - t0) / max(1, tally.turns) * 1e3
                            for t0, t1 in ((edge0, edge1), (core0, core1))
                        )
                        results.setdefault((name, games), []).append(
                            (rate, edge + core, edge, core)
                        )
                        handover[name] += tally.handover
                        print(
                            f"  round {r + 1} {name:28s} {games} game(s): {rate:7.0f} turns/s, "
                            f"server CPU {edge + core:.2f} ms/turn (edge {edge:.2f}, "
                            f"core {core:.2f})",
                            flush=True,
                        )
                    if games == 1:
                        pings += asyncio.run(raw_ping(f"127.0.0.1:{echo_port}", 2000))
    print(f"  load average at end: {os.getloadavg()[0]:.1f}")
    raw = statistics.median(pings)
    print(f"raw unary ping-pong p50 {raw * 1e3:.3f} ms, p99 {pct(pings, 0.99) * 1e3:.3f} ms")
    for name, h in handover.items():
        print(
            f"{name}: turn round trip (turn received -> play answered -> next turn received) "
            f"p50 {statistics.median(h) * 1e3:.3f} ms, p99 {pct(h, 0.99) * 1e3:.3f} ms = "
            f"{statistics.median(h) / raw:.2f}x the raw ping-pong"
        )

    def ratios_of(name: str, relay: str, games: int) -> list[float]:
        pairs = zip(results[name, games], results[relay, games], strict=True)
        return [a[0] / b[0] for a, b in pairs]

    same = {"arbiter, Play stream": ("bidi relay", 0.8), "arbiter, unary": ("relay", 0.6)}
    for games in (1, 8):
        for name in [k for k in servers if k.startswith(("arbiter", AGAINST))]:
            arb = statistics.median(x[0] for x in results[name, games])
            for relay in ("bidi relay", "relay"):
                rel = statistics.median(x[0] for x in results[relay, games])
                ratios = ratios_of(name, relay, games)
                target = same.get(name)
                goal = ""
                if target is not None and target[0] == relay:
                    met = statistics.median(ratios) >= target[1]
                    goal = f" (target >= {target[1]:.0%}: {'met' if met else 'NOT met'})"
                print(
                    f"{games} game(s): {name} {arb:.0f} turns/s vs {relay} {rel:.0f}: per round "
                    f"{', '.join(f'{x:.0%}' for x in ratios)}{goal}"
                )
        if against is not None:
            for way in (PLAY, "unary"):
                ratios = ratios_of(f"arbiter, {way}", AGAINST + way, games)
                print(
                    f"{games} game(s): arbiter, {way} vs {AGAINST + way}: per round "
                    f"{', '.join(f'{x:.0%}' for x in ratios)}"
                )
        for k in servers:
            cpu = [statistics.median(x[i] for x in results[k, games]) for i in (1, 2, 3)]
            print(
                f"{games} game(s): server CPU per turn, {k}: {cpu[0]:.2f} ms "
                f"(edge {cpu[1]:.2f}, core {cpu[2]:.2f})"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["relay"]:
        asyncio.run(relay_main(int(sys.argv[2]), sys.argv[3]))
    else:
        import argparse

        ap = argparse.ArgumentParser(prog="python -m bench.turns")
        ap.add_argument("--quick", action="store_true")
        ap.add_argument(
            "--vs",
            action="append",
            default=[],
            metavar="OPTIONS",
            help="also an arbiter with these `nardy serve` options (e.g. "
            "--vs='--rate 100'), its bots following their own turns",
        )
        ap.add_argument(
            "--against",
            metavar="DIR",
            help="also the arbiter of another checkout of the code (e.g. the commit before "
            "a change, extracted with its accelerators built), over the Play stream and "
            "the unary way",
        )
        ap.add_argument("--rounds", type=int, default=0, help="rounds (default 3, --quick 2)")
        args = ap.parse_args()
        main(args.quick, tuple(args.vs), args.against, args.rounds)
