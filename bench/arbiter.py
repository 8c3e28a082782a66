"""The arbiter under load, as separate processes on loopback (the edge and its core).

1. 5,000 idle subscriptions: server memory per subscription and its thread count.
2. Timeouts: 900 idle games (both seats subscribed, nobody plays) whose clocks all run
   out, with the server otherwise idle and then while 100 more games are played flat out
   (1,000 concurrent games) by instant bots whose streams are filtered to their own turns
   (as the SDK's bots do): memory per idle game, and how late the timeouts fire, from the
   games' event times and from the server's own ``nardy_clock_lateness_seconds`` (target:
   p99 within 50 ms of the deadline).

``python -m bench arbiter [--quick]``; ``python -m bench.arbiter --idle-only`` runs only
the idle games on an otherwise idle server; ``--load-only`` only the case under play
load, ``--every-event`` with the load's bots following every event (no filter);
``--vs OPTIONS --rounds N``: against servers with other options, in alternating rounds.
Turn round trip and throughput against the raw transport: ``bench/turns.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager

import grpc

from bench.bots import ADMIN_ENV, bearer, instant_seat
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


CREATORS = 4  # idle games created at a time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def process(args: list[str], port: int, cwd: str | None = None):
    """``args`` started (in ``cwd``), once it listens on ``port``."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    try:
        deadline = time.time() + 60  # a loaded machine starts Python slowly
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
def arbiter(*extra: str, checkout: str | None = None):
    """``nardy serve`` on a fresh SQLite file (``extra``: more options); (address, process).
    ``checkout``: the server of another checkout of the code (its directory), run by this
    interpreter (its own packages first on the path)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        args = [
            sys.executable,
            "-m",
            "clients",
            "serve",
            "--port",
            str(port),
            "--db",
            db,
            "--log-level",
            "WARNING",
            "--rate",
            "100000",
            "--streams",  # its idle subscriptions are one spectator's
            "1000000",
            *extra,
        ]
        with process(args, port, checkout) as proc:
            yield f"127.0.0.1:{port}", proc


def proc_status(pid: int) -> dict[str, int]:
    """RSS (KiB) and threads of process ``pid`` and of the processes it started (the
    edge's core)."""
    out = {"VmRSS": 0, "Threads": 0}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in out:
                out[key] += int(value.split()[0])
    for child in children(pid):
        for key, value in proc_status(child).items():
            out[key] += value
    return out


def children(pid: int) -> list[int]:
    """The processes ``pid``'s threads started (the edge's core)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as f:
                out += map(int, f.read().split())
    return out


def alive(pid: int) -> bool:
    """``pid`` runs (it exists and is not a zombie)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# -- raw unary ping-pong (the round trip's baseline, bench/turns.py) --------------------
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


# -- 1. idle subscriptions ------------------------------------------------------------------
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


# -- 2. idle games, timeouts under load -------------------------------------------------------
def scrape(url: str) -> dict[str, float]:
    """The nardy_clock_lateness_seconds histogram's cumulative buckets ({le: count})."""
    with urllib.request.urlopen(url, timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("nardy_clock_lateness_seconds_bucket"):
            le = line.split('le="')[1].split('"')[0]
            out[le] = float(line.rsplit(" ", 1)[1])
    return out


async def idle_games(
    address: str, pid: int, games: int, turn_ms: int, load_games: int, own: bool, out: dict
):
    """``games`` idle games (both seats subscribed, nobody plays) whose clocks all run out,
    while ``load_games`` games are played flat out (``own``: by bots following their own
    turns only); RSS per idle game and, per timeout, its lateness (s) from the server's own
    event times."""
    admin = bearer(os.environ[ADMIN_ENV])
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        lateness: list[float] = []
        seen: list[float] = []  # as the seat saw it: its turn received -> the loss received

        async def idle_seat(call, record: bool) -> None:
            started = received = None
            while (ev := await call.read()) is not grpc.aio.EOF:
                if ev.type == pb.EVENT_TYPE_TURN_STARTED and started is None:
                    started = ev.time.ToNanoseconds() / 1e9
                    received = time.perf_counter()
                if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                    if record and started is not None and received is not None:
                        end = ev.time.ToNanoseconds() / 1e9
                        lateness.append(end - started - turn_ms / 1000)
                        seen.append(time.perf_counter() - received - turn_ms / 1000)
                    return

        async def busy_game(seed: int) -> None:
            while True:
                r = await stub.CreateMatch(
                    api.CreateMatchRequest(
                        seed=seed, options=pb.GameOptions(auto_play_forced=True)
                    ),
                    metadata=admin,
                )
                await asyncio.gather(
                    instant_seat(stub, r.game_id, r.first_seat_token, own),
                    instant_seat(stub, r.game_id, r.second_seat_token, own),
                )
                seed += load_games

        load = []
        for i in range(load_games):  # one after another: a burst overruns grpc.aio
            load.append(asyncio.create_task(busy_game(i)))
            await asyncio.sleep(0.01)
        out["before"] = proc_status(pid)["VmRSS"]
        # A few creators at a time, each opening its streams one after another: thousands
        # at once overrun grpc.aio's limits on pending requests,
        # one at a time takes many minutes under the play load.
        waiters = []
        t0 = time.perf_counter()
        count = iter(range(games))

        async def creator() -> None:
            for _ in count:
                r = await stub.CreateMatch(
                    api.CreateMatchRequest(
                        options=pb.GameOptions(turn_time_ms=turn_ms), start_timeout_ms=600_000
                    ),
                    metadata=admin,
                )
                for token, record in ((r.first_seat_token, True), (r.second_seat_token, False)):
                    md = bearer(token)
                    request = api.SubscribeGameRequest(game_id=r.game_id)
                    call = stub.SubscribeGame(request, metadata=md)
                    await call.read()  # the snapshot: the subscription is live
                    waiters.append(asyncio.create_task(idle_seat(call, record)))

        await asyncio.gather(*(creator() for _ in range(CREATORS)))
        out["created_s"] = time.perf_counter() - t0
        out["after"] = proc_status(pid)["VmRSS"]
        await asyncio.gather(*waiters)
        for task in load:
            task.cancel()
        out["lateness"] = lateness
        out["seen"] = seen


def timeout_lateness(
    quick: bool, cases: str = "both", own: bool = True, servers: tuple[str, ...] = ("",)
) -> None:
    """1,000 concurrent games, 100 of them flat out; the other 900 idle until their
    clocks run out (target: p99 <= 50 ms late; memory <= 100 KB per idle game). ``cases``:
    "both", "idle" or "load"; ``own``: the load's bots follow their own turns only;
    ``servers``: ``nardy serve`` options, one server each, in alternating rounds."""
    os.environ.setdefault(ADMIN_ENV, secrets.token_urlsafe(32))
    busy = 20 if quick else 100
    games = 200 if quick else 900
    turn_ms = 20_000 if quick else 60_000  # longer than creating them all takes
    runs = {"idle": [("idle server", 0)], "load": [("under play load", busy)]}
    runs["both"] = runs["idle"] + runs["load"]
    for label, load, options in ((*r, o) for r in runs[cases] for o in servers):
        http = free_port()
        if options:
            label += f", {options}"
        with arbiter("--http-port", str(http), *options.split()) as (address, proc):
            out: dict = {}
            asyncio.run(idle_games(address, proc.pid, games, turn_ms, load, own, out))
            hist = scrape(f"http://127.0.0.1:{http}/metrics")
        ms = [x * 1e3 for x in out["lateness"]]
        seen = [x * 1e3 for x in out["seen"]]
        total = hist.get("+Inf", 0.0)
        within = hist.get("0.05", 0.0) / total if total else 0.0
        per_game = (out["after"] - out["before"]) / games
        print(
            f"  {games} idle games ({label}"
            + (f", {load} games flat out, {'own turns' if own else 'every event'}" if load else "")
            + f"): RSS {out['before'] / 1024:.0f} -> {out['after'] / 1024:.0f} MiB, "
            f"{per_game:.1f} KiB per idle game (2 streams each; target <= 100 KB); "
            f"created in {out['created_s']:.0f} s"
        )
        print(
            f"    timeouts from event times: p50 {pct(ms, 0.5):.1f} ms, p99 {pct(ms, 0.99):.1f} "
            f"ms, max {max(ms):.1f} ms late ({len(ms)} timeouts); as a seat saw them (turn "
            f"received -> loss received): p50 {pct(seen, 0.5):.1f} ms, p99 "
            f"{pct(seen, 0.99):.1f} ms; server histogram: "
            f"{within:.1%} of {total:.0f} fired within 50 ms of the deadline "
            "(target p99 <= 50 ms: " + ("met" if within >= 0.99 else "NOT met") + "; load "
            f"average {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def main(
    quick: bool = False, cases: str = "both", own: bool = True, servers: tuple[str, ...] = ("",)
) -> None:
    print(f"  load average: {os.getloadavg()[0]:.1f}")
    if cases == "both":
        idle_subscriptions(quick)
    timeout_lateness(quick, cases, own, servers)
    print(f"  load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench.arbiter")
    ap.add_argument("--quick", action="store_true")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--idle-only", action="store_true", help="only the idle-server case")
    which.add_argument("--load-only", action="store_true", help="only the case under play load")
    ap.add_argument("--every-event", action="store_true", help="the load's bots see every event")
    ap.add_argument(
        "--vs",
        action="append",
        default=[],
        metavar="OPTIONS",
        help="also a server with these `nardy serve` options (e.g. --vs='--rate 100'), "
        "in alternating rounds with the default one",
    )
    ap.add_argument("--rounds", type=int, default=1, help="rounds of each server")
    args = ap.parse_args()
    only = "idle" if args.idle_only else "load" if args.load_only else "both"
    servers = ("", *args.vs) * args.rounds
    main(args.quick, only, not args.every_event, servers)
