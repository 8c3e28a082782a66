"""The soak: a ladder of fast engines on a real ``nardy serve`` for hours.

``nardy serve`` (its edge and its core, two processes, as users run it) on a fresh SQLite
file, a server-hosted ladder, and bot processes (bench.notingbot: the bundled random and
greedy engines through the SDK, half over the Play stream, half over SubscribeGame and
SubmitPlay) kept running by the ladder runner's supervisor (clients.supervisor). Every
``--every`` seconds a line: games finished per hour, the RSS and open file descriptors of
the edge and of the core, the journal's size (the database file and its WAL), the load
average (the machine may be shared: it is part of the figure).

At the end:

- **restart**: SIGTERM the server, start it again on the same file, and time until health
  answers SERVING, until the first play is acknowledged to a bot, until the first game
  finishes: the ladder resumes by itself (the bots reconnect as any SDK bot does);
- **drain**: the bots leave the ladder, the games in progress are played out, the bots
  and the server stop;
- **nothing lost** (bench.audit, read from the file): every play acknowledged to a bot is
  in the journal, every game a bot saw finish is there with the result it was told, no
  turn is journaled twice, and the standings count exactly the ladder's finished games.

``python -m bench.soak --hours 2`` (``make soak HOURS=2``); ``--dir`` keeps the database,
the server's and the bots' logs and notes there (default: a temporary directory, removed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.arbiter import alive, children, free_port
from bench.audit import Audit, audit
from bench.bots import ADMIN_ENV, bearer
from bench.notingbot import ENGINES, enter_bots, leave, notes_of, start_bots
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc

LADDER = "soak"
MiB = 1024 * 1024


@dataclass
class Sample:
    """One interval's figures."""

    elapsed_s: float
    finished: int  # ladder games finished so far
    per_hour: float  # ... in this interval, per hour
    edge_rss: int  # KiB
    core_rss: int
    edge_fds: int
    core_fds: int
    db: int  # bytes: the database file
    wal: int  # ... and its WAL (and shared-memory index)
    load: float  # the 1-minute load average


def rss_kib(pid: int) -> int:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fds(pid: int) -> int:
    with contextlib.suppress(OSError):
        return len(os.listdir(f"/proc/{pid}/fd"))
    return 0


def size(path: Path) -> int:
    with contextlib.suppress(OSError):
        return path.stat().st_size
    return 0


class Server:
    """``nardy serve`` on the soak's file; its stderr appended to ``serve.log``."""

    def __init__(self, work: Path, port: int, http_port: int) -> None:
        self.work, self.port, self.http_port = work, port, http_port
        self.db = work / "soak.db"
        self.proc: subprocess.Popen | None = None
        self.address = f"127.0.0.1:{port}"

    def start(self) -> None:
        with open(self.work / "serve.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "clients", "serve", "--port", str(self.port)]
                + ["--db", str(self.db), "--http-port", str(self.http_port)]
                + ["--log-level", "WARNING"],
                stdout=log,
                stderr=log,
            )

    def serving(self, timeout: float = 120.0) -> float:
        """Seconds until health answers SERVING."""
        t0 = time.monotonic()
        with grpc.insecure_channel(self.address) as ch:
            health = health_pb2_grpc.HealthStub(ch)
            while True:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise RuntimeError(f"nardy serve exited ({self.proc.returncode}): serve.log")
                with contextlib.suppress(grpc.RpcError):
                    answer = health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if answer.status == health_pb2.HealthCheckResponse.SERVING:
                        return time.monotonic() - t0
                if time.monotonic() - t0 > timeout:
                    raise RuntimeError("nardy serve did not answer SERVING")
                time.sleep(0.02)

    def stop(self) -> tuple[float, float]:
        """SIGTERM: seconds until the edge exited, and until its core had too."""
        assert self.proc is not None
        core = self.core
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        edge_s = time.monotonic() - t0
        while core and alive(core) and time.monotonic() - t0 < 60:
            time.sleep(0.01)
        return edge_s, time.monotonic() - t0

    @property
    def core(self) -> int:
        assert self.proc is not None
        found = children(self.proc.pid)
        return found[0] if found else 0


class Ladder:
    """The soak's ladder, asked as its operator."""

    def __init__(self, address: str, admin: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.ladders = ladder_grpc.LadderServiceStub(self.channel)
        self.admin = bearer(admin)

    def standings(self) -> lpb.GetStandingsResponse:
        for attempt in range(30):
            try:
                return self.ladders.GetStandings(
                    lpb.GetStandingsRequest(ladder=LADDER), metadata=self.admin, timeout=10
                )
            except grpc.RpcError:
                if attempt == 29:
                    raise
                time.sleep(1)
        raise AssertionError

    def close(self) -> None:
        self.channel.close()


class Tail:
    """The bots' notes from here on: the first play acknowledged after a moment."""

    def __init__(self, work: Path) -> None:
        self.files = {path: size(path) for path in notes_of(work)}

    def first_play(self, since: float) -> float | None:
        """Wall-clock time of the first play noted after ``since`` (None: none yet)."""
        found = []
        for path, offset in self.files.items():
            with open(path, "rb") as f:
                f.seek(offset)
                for raw in f.read().decode().splitlines():
                    if raw.startswith('{"k":"play"') and raw.endswith("}"):
                        t = json.loads(raw)["t"]
                        if t > since:
                            found.append(t)
        return min(found, default=None)


def sample(server: Server, ladder: Ladder, start: float, last: Sample | None) -> Sample:
    now = time.monotonic()
    finished = ladder.standings().finished_games
    if last is None:
        per_hour = 0.0
    else:
        per_hour = (finished - last.finished) / max(1e-9, now - start - last.elapsed_s) * 3600
    assert server.proc is not None
    edge, core = server.proc.pid, server.core
    wal = size(server.db.with_name(server.db.name + "-wal"))
    wal += size(server.db.with_name(server.db.name + "-shm"))
    return Sample(
        now - start,
        finished,
        per_hour,
        rss_kib(edge),
        rss_kib(core),
        fds(edge),
        fds(core),
        size(server.db),
        wal,
        os.getloadavg()[0],
    )


def line(s: Sample) -> str:
    return (
        f"{s.elapsed_s / 60:7.1f} min  {s.finished:7d} games  {s.per_hour:7.0f} games/h  "
        f"edge {s.edge_rss / 1024:6.1f} MiB {s.edge_fds:4d} fds  "
        f"core {s.core_rss / 1024:6.1f} MiB {s.core_fds:4d} fds  "
        f"journal {s.db / MiB:7.1f} MiB + WAL {s.wal / MiB:5.1f} MiB  load {s.load:4.1f}"
    )


def table(samples: list[Sample]) -> str:
    head = (
        f"{'minutes':>8} {'games':>7} {'games/h':>8} {'edge MiB':>9} {'core MiB':>9} "
        f"{'edge fds':>9} {'core fds':>9} {'db MiB':>8} {'WAL MiB':>8} {'load':>5}"
    )
    out = [head, "-" * len(head)]
    for s in samples:
        out.append(
            f"{s.elapsed_s / 60:8.1f} {s.finished:7d} {s.per_hour:8.0f} "
            f"{s.edge_rss / 1024:9.1f} {s.core_rss / 1024:9.1f} {s.edge_fds:9d} "
            f"{s.core_fds:9d} {s.db / MiB:8.1f} {s.wal / MiB:8.1f} {s.load:5.1f}"
        )
    return "\n".join(out)


def slope_per_hour(samples: list[Sample], value) -> float:
    """Growth per hour of ``value(sample)`` over the second half of the run (after warm-up):
    a least-squares slope."""
    half = samples[len(samples) // 2 :]
    if len(half) < 2:
        return 0.0
    xs = [s.elapsed_s / 3600 for s in half]
    return statistics.linear_regression(xs, [value(s) for s in half]).slope


def run(args: argparse.Namespace, work: Path) -> int:
    admin = "nardy_" + secrets.token_urlsafe(32)
    os.environ[ADMIN_ENV] = admin
    server = Server(work, free_port(), free_port())
    server.start()
    first_up = server.serving()
    print(
        f"soak: nardy serve (edge pid {server.proc.pid}, core pid {server.core}) on "
        f"{server.db}, up in {first_up:.2f} s; {args.bots} bots "
        f"({', '.join(ENGINES)}; Play stream and unary), at most {args.concurrency} games "
        f"at once, {args.turn_time_ms} ms a turn; {args.hours:g} h, a line every "
        f"{args.every:g} s; cores {os.cpu_count()}",
        flush=True,
    )
    options = lpb.LadderOptions(
        turn_time_ms=args.turn_time_ms, max_games_per_bot=2, max_concurrent_games=args.concurrency
    )
    tokens = enter_bots(server.address, admin, LADDER, options, args.bots)
    bots = start_bots(work, tokens, lambda i: server.address)
    ladder = Ladder(server.address, admin)
    samples: list[Sample] = []
    start = time.monotonic()
    deadline = start + args.hours * 3600
    incidents: list[str] = []
    try:
        samples.append(sample(server, ladder, start, None))
        next_line = start + args.every
        while time.monotonic() < deadline:
            time.sleep(1.0)
            for bot in bots:
                if (what := bot.check()) is not None:
                    incidents.append(what)
                    print(f"  bot: {what}", flush=True)
            if server.proc.poll() is not None:
                incidents.append(f"nardy serve exited with code {server.proc.returncode}")
                print(f"  {incidents[-1]}: started again", flush=True)
                server.start()
                server.serving()
            if time.monotonic() >= next_line or time.monotonic() >= deadline:
                samples.append(sample(server, ladder, start, samples[-1]))
                print(line(samples[-1]), flush=True)
                next_line += args.every

        # -- restart: stop the server, start it on the same file ----------------------
        before = ladder.standings().finished_games
        stop_s, core_s = server.stop()
        tail = Tail(work)
        restarted = time.time()
        t0 = time.monotonic()
        server.start()
        serving_s = server.serving()
        resumed = game_s = None
        while time.monotonic() - t0 < 300 and (resumed is None or game_s is None):
            time.sleep(0.1)
            if resumed is None and (t := tail.first_play(restarted)) is not None:
                resumed = t - restarted
            if game_s is None and ladder.standings().finished_games > before:
                game_s = time.monotonic() - t0
        print(
            f"restart: stopped (SIGTERM) in {stop_s:.2f} s (its core {core_s:.2f} s); "
            f"started again on the same file: health SERVING after {serving_s:.2f} s, the "
            f"first play acknowledged to a bot after {fmt(resumed)}, the first game finished "
            f"after {fmt(game_s)}",
            flush=True,
        )

        # -- drain: the bots leave, the games in progress end -------------------------
        leave(server.address, LADDER, tokens)
        drain = time.monotonic()
        while ladder.standings().games_in_progress and time.monotonic() - drain < 300:
            time.sleep(0.5)
        standings = ladder.standings()
    finally:
        ladder.close()
        for bot in bots:
            bot.stop()
        if server.proc is not None and server.proc.poll() is None:
            server.stop()

    a = audit(str(server.db), notes_of(work), LADDER)
    print()
    print(table(samples))
    print()
    summary(samples, a, standings, incidents, args)
    ok = a.lost == 0 and standings.finished_games == a.ladder_counted == sum_wins(standings)
    return 0 if ok and not a.unfinished else 1


def sum_wins(standings: lpb.GetStandingsResponse) -> int:
    return sum(row.wins for row in standings.rows)


def fmt(seconds: float | None) -> str:
    return "(never)" if seconds is None else f"{seconds:.2f} s"


def summary(samples, a: Audit, standings, incidents: list[str], args) -> None:
    hours = samples[-1].elapsed_s / 3600 if samples else 0.0
    rates = [s.per_hour for s in samples[1:]]
    print(
        f"{samples[-1].finished} ladder games in {hours:.2f} h: "
        f"{samples[-1].finished / max(hours, 1e-9):.0f} games/h on average, per interval "
        f"min {min(rates, default=0):.0f} / median {statistics.median(rates or [0]):.0f} / "
        f"max {max(rates, default=0):.0f}"
    )
    first, last = samples[1] if len(samples) > 1 else samples[0], samples[-1]
    for what, get in (
        ("edge RSS", lambda s: s.edge_rss / 1024),
        ("core RSS", lambda s: s.core_rss / 1024),
        ("edge fds", lambda s: s.edge_fds),
        ("core fds", lambda s: s.core_fds),
        ("journal (db + WAL)", lambda s: (s.db + s.wal) / MiB),
    ):
        print(
            f"{what}: {get(first):.1f} after the first interval, {get(last):.1f} at the end; "
            f"growth over the second half {slope_per_hour(samples, get):+.1f} per hour"
        )
    loads = [s.load for s in samples]
    print(
        f"load average (1 min) over the run: min {min(loads):.1f} / median "
        f"{statistics.median(loads):.1f} / max {max(loads):.1f} on {os.cpu_count()} cores "
        "(the machine may be shared)"
    )
    print(
        f"nothing lost: {a.acknowledged} plays acknowledged to the bots, {a.missing} missing "
        f"from the journal, {a.twice} turns journaled twice; {a.seen_ended} games the bots "
        f"saw end, {a.ended_missing} not in the store with that result, {a.uncounted} not in "
        f"the ladder's books; {a.unfinished} games unfinished after the drain "
        f"({'met' if a.lost == 0 and not a.unfinished else 'NOT met'})"
    )
    print(
        f"standings: {standings.finished_games} finished games (the books: "
        f"{a.ladder_counted}, wins summed: {sum_wins(standings)}), {standings.voided_games} "
        f"voided; terminations in the store: "
        + ", ".join(f"{k} {v}" for k, v in sorted(a.terminations.items()))
    )
    for what in a.examples:
        print(f"  e.g. {what}")
    print(f"incidents: {len(incidents)}" + "".join(f"\n  {i}" for i in incidents))


def main(quick: bool = False, argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n")[0])
    p.add_argument("--hours", type=float, default=2.0)
    p.add_argument("--every", type=float, default=300.0, help="seconds between lines")
    p.add_argument("--bots", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=4, help="ladder games at once")
    p.add_argument("--turn-time-ms", type=int, default=10_000)
    p.add_argument("--dir", help="keep the database, logs and notes here")
    args = p.parse_args(argv if argv is not None else [])
    if quick:
        args.hours, args.every = 0.02, 20.0
    if args.dir:
        work = Path(args.dir)
        work.mkdir(parents=True, exist_ok=True)
        return run(args, work)
    work = Path(tempfile.mkdtemp(prefix="nardy-soak-"))
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
