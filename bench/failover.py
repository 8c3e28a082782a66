"""The failover drill: three ``nardy serve`` instances on one PostgreSQL under a ladder's
load; kill -9 the leader, then an instance running games in progress.

Each round, on a fresh database: three instances (each two processes, edge and core, in a
process group of its own), a ladder, and bot processes (bench.notingbot: the bundled
random and greedy engines through the SDK, half over the Play stream, half unary) spread
over the instances (``NARDY_SERVER`` lists all three, each bot's own first). Once the
ladder is under way, two kills, in alternating order from round to round:

- **leader**: the instance holding the ladder's advisory lock (the one that pairs);
- **owner**: the instance (not the leader) holding the leases of the most games in
  progress (waited for, if none holds any at that moment).

A kill is SIGKILL to the instance's process group, edge and core at once (as a machine
that dies; a kill -9 of the edge alone lets its core hand its games over gracefully).
The killed instance is started again on its port once another has claimed its games (as
``Restart=on-failure`` would). Measured from the journal's
event times (the instances' wall clock; the killed one writes nothing after the kill):

- **takeover**: from the kill to the first play accepted in a game the dead instance
  ran (and to the last of those games going on): the lease running out, the claim, the
  rebuild from the journal, and the bots' own retries until they reach the new owner;
- **pairing**: from the kill to the first play of a game paired after it (after a leader's
  death, another instance must take the ladder's lock first);
- **nothing lost** (bench.audit, from the bots' notes): every play acknowledged to a bot
  is in the journal, no
  turn twice, every game a bot saw end is stored with that result and in the ladder's
  books; **abnormal endings**: games aborted, unfinished after the drain, or ended by a
  timeout, an abandonment or illegal plays rather than at the board.

``python -m bench.failover [--rounds 4] [--lease-ms 10000] [--bots 6]`` (``make
failover``); PostgreSQL is the project's throwaway server (tools/pg.sh, or NARDY_TEST_PG).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from bench.arbiter import free_port
from bench.audit import Audit, audit, rows
from bench.bots import ADMIN_ENV, bearer
from bench.cluster import instance_args
from bench.notingbot import enter_bots, leave, notes_of, start_bots
from bench.store import fresh_pg, pg_server
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.core.cluster import LADDER_LOCK
from server.core.journal import EventType, Status

LADDER = "drill"
INSTANCES = 3


class Instance:
    """One ``nardy serve`` on a port of its own, in a process group of its own; its
    database sessions named after its port (``application_name``)."""

    def __init__(self, work: Path, db: str, port: int, lease_ms: int) -> None:
        self.work, self.port, self.lease_ms = work, port, lease_ms
        self.db = f"{db}?application_name=nardy-{port}"
        self.address = f"127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        args = instance_args(self.port, self.db, self.lease_ms)
        args[args.index("--log-level") + 1] = "INFO"  # takeovers and leadership, logged
        with open(self.work / f"instance-{self.port}.log", "ab") as log:
            self.proc = subprocess.Popen(args, stderr=log, start_new_session=True)

    def wait_serving(self, timeout: float = 60.0) -> None:
        channel = grpc.insecure_channel(self.address)
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            log = (self.work / f"instance-{self.port}.log").read_text().splitlines()
            raise RuntimeError(
                f"the instance on port {self.port} did not serve: " + "\n".join(log[-15:])
            ) from None
        finally:
            channel.close()

    def kill(self) -> None:
        """kill -9 of the edge and its core at once."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def leader_port(db: str) -> int | None:
    """The port of the instance whose session holds the ladder lock."""
    found = rows(
        db,
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        f"WHERE l.locktype = 'advisory' AND l.granted AND l.classid = {LADDER_LOCK >> 32} "
        f"AND l.objid = {LADDER_LOCK & 0xFFFFFFFF}",
    )
    return int(found[0][0].removeprefix("nardy-")) if found else None


def running(db: str) -> dict[str, list[str]]:
    """Games not over (the store writes a game's status when it ends), by the address of
    the instance holding their lease."""
    out: dict[str, list[str]] = {}
    for address, game_id in rows(
        db,
        "SELECT i.address, g.id FROM games g JOIN leases l ON l.match_id = g.match_id "
        "JOIN instances i ON i.id = l.owner "
        f"WHERE g.status NOT IN ({Status.FINISHED:d}, {Status.ABORTED:d})",
    ):
        out.setdefault(address, []).append(game_id)
    return out


def instance_id(db: str, address: str) -> str:
    """The id of the live instance at ``address`` (the newest one there)."""
    found = rows(
        db, f"SELECT id FROM instances WHERE address = '{address}' ORDER BY started DESC LIMIT 1"
    )
    return found[0][0]


@dataclass
class Kill:
    """One kill and what followed it."""

    kind: str  # "leader" or "owner"
    port: int
    leader: bool
    owned: list[str]  # games in progress the killed instance ran
    at: float  # wall clock
    known: set[str] = field(default_factory=set)  # every game that existed at the kill
    claimed_s: float | None = None  # until no lease of it was left
    first_s: float | None = None  # until the first play in one of its games
    last_s: float | None = None  # until every one of its games had a play again
    resumed: int = 0  # of its games, those with a play after the kill
    paired_s: float | None = None  # until the first play of a game paired after the kill


@dataclass
class Round:
    kills: list[Kill]
    audit: Audit
    standings_ok: bool


def measure(kill: Kill, db: str) -> None:
    """Takeover and pairing times of ``kill`` from the journal: when the plays after it
    were written (by the instances left: the killed one writes nothing more). A bot's own
    note of an acknowledgement may come later than that on a busy machine."""
    firsts = dict(
        rows(
            db,
            "SELECT game_id, min(time) FROM events "
            f"WHERE type = {EventType.PLAY_MADE:d} AND time > {kill.at!r} GROUP BY game_id",
        )
    )
    taken = {g: t for g, t in firsts.items() if g in kill.owned}
    kill.resumed = len(taken)
    if taken:
        kill.first_s = min(taken.values()) - kill.at
        kill.last_s = max(taken.values()) - kill.at
    fresh = [t for g, t in firsts.items() if g not in kill.known]
    if fresh:
        kill.paired_s = min(fresh) - kill.at


def drill_round(server: str, args: argparse.Namespace, r: int, work: Path) -> Round:
    db = fresh_pg(server)
    ports = [free_port() for _ in range(INSTANCES)]
    instances = {p: Instance(work, db, p, args.lease_ms) for p in ports}
    addresses = [i.address for i in instances.values()]
    bots = []
    kills: list[Kill] = []
    try:
        for inst in instances.values():
            inst.start()
        for inst in instances.values():
            inst.wait_serving()
        options = lpb.LadderOptions(
            turn_time_ms=args.turn_time_ms,
            max_games_per_bot=2,
            max_concurrent_games=args.bots,
        )
        tokens = enter_bots(addresses[0], os.environ[ADMIN_ENV], LADDER, options, args.bots)
        bots = start_bots(
            work,
            tokens,
            lambda i: ",".join(addresses[(i + k) % INSTANCES] for k in range(INSTANCES)),
        )
        time.sleep(args.warm)
        order = ("leader", "owner") if r % 2 == 0 else ("owner", "leader")
        for kind in order:
            kills.append(kill_one(db, instances, kind))
            time.sleep(args.settle)
        leave(next(i.address for i in instances.values() if i.proc.poll() is None), LADDER, tokens)
        drain(instances, time.monotonic() + 180)
        standings = standings_of(instances)
    finally:
        for bot in bots:
            bot.stop()
        for inst in instances.values():
            inst.stop()
    for kill in kills:
        measure(kill, db)
    a = audit(db, notes_of(work), LADDER)
    ok = standings.finished_games == a.ladder_counted == sum(x.wins for x in standings.rows)
    return Round(kills, a, ok)


def kill_one(db: str, instances: dict[int, Instance], kind: str) -> Kill:
    """kill -9 the leader or the busiest other owner; start it again once its games are
    claimed."""
    lead = leader_port(db)
    games = running(db)
    if kind == "leader" and lead is not None:
        port = lead
    else:
        others = [p for p in instances if p != lead] or list(instances)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # (games come and go: wait for one running)
            if any(games.get(instances[p].address) for p in others):
                break
            time.sleep(0.05)
            lead, games = leader_port(db), running(db)
        port = max(others, key=lambda p: len(games.get(instances[p].address, [])))
    victim = instances[port]
    victim_id = instance_id(db, victim.address)
    victim.kill()
    at = time.time()
    t0 = time.monotonic()
    # (its leases stay its until the lease runs out: read them after the kill)
    owned = running(db).get(victim.address, [])
    known = {g for (g,) in rows(db, "SELECT id FROM games")}
    kill = Kill(kind, port, port == lead, owned, at, known)
    while time.monotonic() - t0 < 120:
        left = rows(db, f"SELECT count(*) FROM leases WHERE owner = '{victim_id}'")[0][0]
        if not left:
            kill.claimed_s = time.monotonic() - t0
            break
        time.sleep(0.05)
    print(
        f"  kill -9 {kind} (port {port}{', the leader' if kill.leader else ''}, "
        f"{len(owned)} games in progress): its leases claimed after {fmt(kill.claimed_s)}",
        flush=True,
    )
    victim.start()  # as Restart=on-failure would
    victim.wait_serving()
    return kill


def live(instances: dict[int, Instance]) -> list[Instance]:
    return [i for i in instances.values() if i.proc is not None and i.proc.poll() is None]


def standings_of(instances: dict[int, Instance]) -> lpb.GetStandingsResponse:
    with grpc.insecure_channel(live(instances)[0].address) as ch:
        return ladder_grpc.LadderServiceStub(ch).GetStandings(
            lpb.GetStandingsRequest(ladder=LADDER),
            metadata=bearer(os.environ[ADMIN_ENV]),
            timeout=10,
        )


def drain(instances: dict[int, Instance], deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if not standings_of(instances).games_in_progress:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.5)


def fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def report(rounds: list[Round], lease_ms: int) -> bool:
    print()
    print(
        f"{'round':>5} {'kill':>6} {'leader':>6} {'games':>5} {'claimed':>8} "
        f"{'first play':>10} {'all resumed':>11} {'paired':>8}"
    )
    for n, rnd in enumerate(rounds, 1):
        for k in rnd.kills:
            print(
                f"{n:5d} {k.kind:>6} {'yes' if k.leader else 'no':>6} "
                f"{k.resumed:2d}/{len(k.owned):<2d} {fmt(k.claimed_s):>8} "
                f"{fmt(k.first_s):>10} {fmt(k.last_s):>11} {fmt(k.paired_s):>8}"
            )
    firsts = [k.first_s for rnd in rounds for k in rnd.kills if k.first_s is not None]
    lasts = [k.last_s for rnd in rounds for k in rnd.kills if k.last_s is not None]
    paired = [k.paired_s for rnd in rounds for k in rnd.kills if k.paired_s is not None]
    owned = sum(len(k.owned) for rnd in rounds for k in rnd.kills)
    resumed = sum(k.resumed for rnd in rounds for k in rnd.kills)
    if firsts:
        print(
            f"takeover (kill -9 -> first play accepted in a game the dead instance ran), "
            f"lease {lease_ms} ms: median {statistics.median(firsts):.2f} s, max "
            f"{max(firsts):.2f} s; every such game going on again: median "
            f"{statistics.median(lasts):.2f} s, max {max(lasts):.2f} s ({resumed} of {owned} "
            f"games taken over had a play after the kill)"
        )
    if paired:
        print(
            f"pairing after a kill (first play of a game paired since): median "
            f"{statistics.median(paired):.2f} s, max {max(paired):.2f} s"
        )
    total = Audit()
    for rnd in rounds:
        a = rnd.audit
        total.acknowledged += a.acknowledged
        total.missing += a.missing
        total.twice += a.twice
        total.seen_ended += a.seen_ended
        total.ended_missing += a.ended_missing
        total.uncounted += a.uncounted
        total.games += a.games
        total.unfinished += a.unfinished
        total.aborted += a.aborted
        total.terminations.update(a.terminations)
        total.examples += a.examples
    abnormal = (
        total.unfinished
        + total.aborted
        + sum(v for k, v in total.terminations.items() if k != "normal")
    )
    ok = total.lost == 0 and abnormal == 0 and all(rnd.standings_ok for rnd in rounds)
    print(
        f"plays: {total.acknowledged} acknowledged to the bots, {total.missing} missing from "
        f"the journal, {total.twice} turns journaled twice (target 0 lost: "
        f"{'met' if total.lost == 0 else 'NOT met'})"
    )
    print(
        f"games: {total.games} in all; {total.seen_ended} seen ending by the bots, "
        f"{total.ended_missing} not stored with that result, {total.uncounted} not in the "
        f"ladder's books; abnormal endings {abnormal} ({total.aborted} aborted, "
        f"{total.unfinished} unfinished after the drain; terminations: "
        + ", ".join(f"{k} {v}" for k, v in sorted(total.terminations.items()))
        + "); standings equal to the books in every round: "
        + ("yes" if all(rnd.standings_ok for rnd in rounds) else "NO")
    )
    for what in total.examples[:5]:
        print(f"  e.g. {what}")
    return ok


def main(quick: bool = False, argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.failover", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--lease-ms", type=int, default=10_000)
    p.add_argument("--bots", type=int, default=6)
    p.add_argument("--turn-time-ms", type=int, default=10_000)
    p.add_argument("--warm", type=float, default=10.0, help="seconds of play before a kill")
    p.add_argument("--settle", type=float, default=5.0, help="seconds after a restart")
    p.add_argument("--dir", help="keep the instances' and bots' logs and notes here")
    args = p.parse_args(argv if argv is not None else [])
    if quick:
        args.rounds, args.lease_ms = 2, 3000
    os.environ.setdefault(ADMIN_ENV, "nardy_" + secrets.token_urlsafe(32))
    server = pg_server()
    print(
        f"failover drill: {INSTANCES} instances on one PostgreSQL, {args.bots} bots, lease "
        f"{args.lease_ms} ms, {args.rounds} rounds (kill -9 leader then owner, and the other "
        f"way round); load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    top = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="nardy-failover-"))
    rounds = []
    try:
        for r in range(args.rounds):
            work = top / f"round{r + 1}"
            work.mkdir(parents=True, exist_ok=True)
            print(f"round {r + 1}:", flush=True)
            rounds.append(drill_round(server, args, r, work))
    finally:
        if not args.dir:
            shutil.rmtree(top, ignore_errors=True)
    ok = report(rounds, args.lease_ms)
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
