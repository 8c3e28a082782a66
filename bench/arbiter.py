"""The arbiter under load, as separate processes on loopback, against raw gRPC in the same run.

1. Turn round trip (turn event received -> play accepted -> next event) against a raw gRPC
   unary ping-pong to a trivial grpc.aio server.
2. 5,000 idle subscriptions: server memory per subscription and its thread count.
3. 1,000 games whose clocks all run out: how late the timeouts fire (p50/p99/max), with
   the server otherwise idle and under full play load.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import grpc

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

ECHO_SERVER = """
import asyncio, grpc, sys
async def main():
    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler("bench.Echo", {
        "Ping": grpc.unary_unary_rpc_method_handler(lambda req, ctx: req)})
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("127.0.0.1:" + sys.argv[1])
    await server.start()
    await server.wait_for_termination()
asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def process(args: list[str], port: int):
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{args} did not start") from None
                time.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def arbiter():
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        args = [
            sys.executable,
            "-m",
            "nardy",
            "serve",
            "--port",
            str(port),
            "--db",
            db,
            "--log-level",
            "WARNING",
            "--rate",
            "100000",
        ]
        with process(args, port) as proc:
            yield f"127.0.0.1:{port}", proc


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                out[key] = int(value.split()[0])
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# -- 1. round trips --------------------------------------------------------------------------
async def raw_ping(address: str, n: int) -> list[float]:
    async with grpc.aio.insecure_channel(address) as ch:
        ping = ch.unary_unary("/bench.Echo/Ping")
        payload = b"x" * 64
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await ping(payload)
            times.append(time.perf_counter() - t0)
        return times


async def turn_round_trips(address: str, games: int) -> list[float]:
    """Both seats answer at once; time from a seat's TURN_STARTED to the next event."""
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        times: list[float] = []
        for g in range(games):
            r = await stub.CreateMatch(api.CreateMatchRequest(seed=g))

            async def seat(token: str, game_id: str = r.game_id) -> None:
                md = (("authorization", f"Bearer {token}"),)
                stream = stub.SubscribeGame(api.SubscribeGameRequest(game_id=game_id), metadata=md)
                t0 = None
                async for ev in stream:
                    if t0 is not None:
                        times.append(time.perf_counter() - t0)
                        t0 = None
                    st = ev.state
                    if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                        return
                    if st.legal_plays and st.side_to_move == st.your_color:
                        t0 = time.perf_counter()
                        await stub.SubmitPlay(
                            api.SubmitPlayRequest(
                                game_id=game_id,
                                turn_id=st.turn_id,
                                end_position=st.legal_plays[0].end_position,
                            ),
                            metadata=md,
                        )

            await asyncio.gather(seat(r.first_seat_token), seat(r.second_seat_token))
        return times


def round_trip(quick: bool) -> None:
    port = free_port()
    with process([sys.executable, "-c", ECHO_SERVER, str(port)], port):
        asyncio.run(raw_ping(f"127.0.0.1:{port}", 200))  # warm up
        raw = asyncio.run(raw_ping(f"127.0.0.1:{port}", 1000 if quick else 3000))
    with arbiter() as (address, _):
        asyncio.run(turn_round_trips(address, 1))  # warm up
        turns = asyncio.run(turn_round_trips(address, 3 if quick else 20))
    r50, t50 = statistics.median(raw), statistics.median(turns)
    print(
        f"raw gRPC unary ping-pong: p50 {r50 * 1e3:.3f} ms  p99 {pct(raw, 0.99) * 1e3:.3f} ms "
        f"({len(raw)} calls)"
    )
    print(
        f"turn round trip         : p50 {t50 * 1e3:.3f} ms  p99 {pct(turns, 0.99) * 1e3:.3f} ms "
        f"({len(turns)} turns)"
    )
    print(f"ratio turn / raw (p50)  : {t50 / r50:.2f}  (target <= 2)")


# -- 2. idle subscriptions ------------------------------------------------------------------
async def hold_subscriptions(address: str, n: int, report) -> None:
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        r = await stub.CreateMatch(api.CreateMatchRequest(start_timeout_ms=600_000))
        streams = []
        got = 0
        for i in range(n):
            call = stub.SubscribeGame(api.SubscribeGameRequest(game_id=r.game_id))
            streams.append(call)
            await call.read()  # the snapshot: the subscription is live
            got += 1
            if i % 500 == 499:
                await asyncio.sleep(0)
        report(got)
        for call in streams:
            call.cancel()


def idle_subscriptions(quick: bool) -> None:
    n = 1000 if quick else 5000
    with arbiter() as (address, proc):
        before = proc_status(proc.pid)
        result = {}

        def report(got: int) -> None:
            result.update(got=got, after=proc_status(proc.pid))

        asyncio.run(hold_subscriptions(address, n, report))
    after = result["after"]
    per = (after["VmRSS"] - before["VmRSS"]) * 1024 / max(1, result["got"])
    print(
        f"{result['got']} idle subscriptions: server RSS {before['VmRSS'] / 1024:.0f} -> "
        f"{after['VmRSS'] / 1024:.0f} MiB ({per / 1024:.1f} KiB each); threads "
        f"{before['Threads']} -> {after['Threads']}"
    )


# -- 3. timeouts -------------------------------------------------------------------------------
async def timeouts(address: str, games: int, turn_ms: int, load_games: int) -> list[float]:
    """Lateness (s) of each game's timeout, from the server's own event times."""
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        lateness: list[float] = []

        async def subscribe(game_id: str, token: str):
            """Open a seat's stream and wait for its first event (the snapshot)."""
            md = (("authorization", f"Bearer {token}"),)
            call = stub.SubscribeGame(api.SubscribeGameRequest(game_id=game_id), metadata=md)
            await call.read()
            return call

        async def idle_seat(call, record: bool) -> None:
            started = None
            while (ev := await call.read()) is not grpc.aio.EOF:
                if ev.type == pb.EVENT_TYPE_TURN_STARTED and started is None:
                    started = ev.time.ToNanoseconds() / 1e9
                if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                    if record and started is not None:
                        end = ev.time.ToNanoseconds() / 1e9
                        lateness.append(end - started - turn_ms / 1000)
                    return

        async def busy_game(seed: int) -> None:
            r = await stub.CreateMatch(
                api.CreateMatchRequest(seed=seed, options=pb.GameOptions(auto_play_forced=True))
            )

            async def seat(token: str) -> None:
                md = (("authorization", f"Bearer {token}"),)
                async for ev in stub.SubscribeGame(
                    api.SubscribeGameRequest(game_id=r.game_id), metadata=md
                ):
                    st = ev.state
                    if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                        return
                    if st.legal_plays and st.side_to_move == st.your_color:
                        await stub.SubmitPlay(
                            api.SubmitPlayRequest(
                                game_id=r.game_id,
                                turn_id=st.turn_id,
                                end_position=st.legal_plays[0].end_position,
                            ),
                            metadata=md,
                        )

            await asyncio.gather(seat(r.first_seat_token), seat(r.second_seat_token))

        load = [asyncio.create_task(busy_game(i)) for i in range(load_games)]
        # Both seats must be present for a game to start; only the first seat's stream
        # records. Streams are opened one after another: thousands at once overrun
        # grpc.aio's pending request limits (notes/grpc-trio.md, pitfall 7).
        waiters = []
        for _ in range(games):
            r = await stub.CreateMatch(
                api.CreateMatchRequest(
                    options=pb.GameOptions(turn_time_ms=turn_ms), start_timeout_ms=600_000
                )
            )
            for token, record in ((r.first_seat_token, True), (r.second_seat_token, False)):
                call = await subscribe(r.game_id, token)
                waiters.append(asyncio.create_task(idle_seat(call, record)))
        await asyncio.gather(*waiters)
        for task in load:
            task.cancel()
        return lateness


def timeout_lateness(quick: bool) -> None:
    games = 200 if quick else 1000
    for label, load in (("idle server", 0), ("under play load", 20 if quick else 100)):
        with arbiter() as (address, _):
            late = asyncio.run(timeouts(address, games, 10_000, load))
        ms = [x * 1e3 for x in late]
        print(
            f"{games} clocks running out, {label:15s}: lateness p50 {pct(ms, 0.5):6.2f} ms  "
            f"p99 {pct(ms, 0.99):6.2f} ms  max {max(ms):6.2f} ms  ({len(ms)} timeouts"
            + (f", {load} games playing" if load else "")
            + ")"
        )


def main(quick: bool = False) -> None:
    round_trip(quick)
    idle_subscriptions(quick)
    timeout_lateness(quick)


if __name__ == "__main__":
    main("--quick" in sys.argv)
