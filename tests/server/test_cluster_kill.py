"""Three arbiter processes on one PostgreSQL, a ladder of bot processes connected to
different instances, and one instance killed with kill -9 in the middle of its games:
every game finishes, every play is in the journal once, no result is lost,
and the standings read the same from every instance that is left."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import trio

from nardy.client import Client
from server.core.journal import EventType

LEASE_MS = 3000
GAMES = 4  # two duplicate pairs, all in progress at once
TOKEN = "operator-token-for-the-kill-test"
SERVING = re.compile(r"serving nardy\.v1 on 127\.0\.0\.1:(\d+) .*instance=([0-9a-f]+)")


def rows(url: str, sql: str, *params) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def poll(check, what: str, timeout: float):
    """``check()``'s first true value, polled until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Instance:
    """One ``nardy serve`` process on a free loopback port."""

    def __init__(self, db: str, log: Path) -> None:
        self.log = log
        env = {**os.environ, "NARDY_ADMIN_TOKEN": TOKEN}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clients", "serve", "--port", "0", "--db", db]
            + ["--lease-ms", str(LEASE_MS)],
            stderr=log.open("w"),
            env=env,
        )

    def wait_serving(self) -> None:
        def serving():
            assert self.proc.poll() is None, self.log.read_text()
            return SERVING.search(self.log.read_text())

        found = poll(serving, "an instance to serve", 60)
        self.port, self.id = int(found[1]), found[2]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def signal_all(self, signum: int) -> None:
        """Signal its processes: the edge and the core it started (killed alone, the edge
        takes its core with it, but that core would stop cleanly, a lesser test)."""
        pid = self.proc.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        for p in [pid, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signum)


@pytest.mark.slow
def test_a_ladder_on_three_instances_survives_a_kill_9(pg_db, tmp_path):
    instances = [Instance(pg_db, tmp_path / f"instance{i}.log") for i in range(3)]
    bots: list[subprocess.Popen] = []
    try:
        for inst in instances:
            inst.wait_serving()
        addresses = [inst.address for inst in instances]

        async def set_up() -> list[str]:
            async with Client(addresses[0], TOKEN) as operator:
                await operator.create_ladder(
                    "cluster", max_games=GAMES, max_games_per_bot=2, turn_time_ms=20_000
                )
            tokens = []
            for i in range(4):  # each bot registers and joins on an instance of its own
                async with Client(addresses[i % 3]) as bot:
                    tokens.append(await bot.register(f"bot{i}"))
                    await bot.join_ladder("cluster")
            return tokens

        tokens = trio.run(set_up)
        for i, token in enumerate(tokens):
            home = ",".join(addresses[(i + k) % 3] for k in range(3))  # its own one first
            bots.append(
                subprocess.Popen(
                    [sys.executable, "-m", "clients", "engine", "random", "--seed", str(i)]
                    + ["--server", home, f"--token={token}"],
                    stderr=(tmp_path / f"bot{i}.log").open("w"),
                )
            )

        # mid-game: a match under lease whose game has gone some way
        def busy_owner():
            found = rows(
                pg_db,
                "SELECT l.owner FROM leases l JOIN games g ON g.match_id = l.match_id "
                "JOIN events e ON e.game_id = g.id GROUP BY l.owner, g.id "
                "HAVING count(*) >= 20 LIMIT 1",
            )
            return found[0][0] if found else None

        def stopped_owner():
            """That game's instance, stopped while it still holds leases, and its matches
            (on a loaded machine its games may end, or move, between a look and a kill)."""
            owner = busy_owner()
            if owner is None:
                return None
            victim = next(inst for inst in instances if inst.id == owner)
            victim.signal_all(signal.SIGSTOP)
            held = rows(pg_db, "SELECT match_id FROM leases WHERE owner=%s", owner)
            if held:
                return victim, {m for (m,) in held}
            victim.signal_all(signal.SIGCONT)
            return None

        victim, taken = poll(stopped_owner, "a game in progress", 120)
        victim.signal_all(signal.SIGKILL)
        victim.proc.wait()
        killed_at = time.time()
        survivors = [inst for inst in instances if inst is not victim]

        def done():
            finished = rows(
                pg_db,
                "SELECT count(*) FROM ladder_games WHERE ladder='cluster' "
                "AND record::json->>'voided' = 'false'",
            )[0][0]
            return finished >= GAMES

        poll(done, "every ladder game to finish", 240)

        # every game finished (none voided or left behind), each result counted once
        games = rows(
            pg_db,
            "SELECT g.id, g.match_id, g.status FROM games g JOIN matches m ON m.id = g.match_id "
            "WHERE m.options::json->>'ladder' = 'cluster'",
        )
        assert len(games) == GAMES and {status for _, _, status in games} == {3}
        records = rows(pg_db, "SELECT game_id, record FROM ladder_games WHERE ladder='cluster'")
        assert sorted(g for g, _ in records) == sorted(g for g, _, _ in games)
        assert rows(pg_db, "SELECT count(*) FROM leases") == [(0,)]

        # the journal: seqs 1..n, every turn played at most once, the turn a dead owner
        # left waiting offered again with the same dice (the recovery rule)
        resumed = 0
        first_turn_after_kill = None
        for game_id, match_id, _ in games:
            events = rows(
                pg_db,
                "SELECT seq, type, time, data FROM events WHERE game_id=%s ORDER BY seq",
                game_id,
            )
            assert [seq for seq, *_ in events] == list(range(1, len(events) + 1))
            entries = [(kind, t, json.loads(bytes(data))) for _, kind, t, data in events]
            played = [e["play"][3] for kind, _, e in entries if "play" in e]
            assert len(played) == len(set(played)), f"a turn of {game_id} played twice"
            offered = collections.defaultdict(list)
            for kind, t, e in entries:
                if kind == EventType.TURN_STARTED:
                    offered[e["turn"]].append(e["dice"])
                    if match_id in taken and t > killed_at:
                        first_turn_after_kill = min(first_turn_after_kill or t, t)
            for turn, dice in offered.items():
                assert all(d == dice[0] for d in dice), f"turn {turn} re-offered other dice"
                resumed += len(dice) > 1
        assert first_turn_after_kill is not None, "the taken-over games went on"
        print(
            f"taken over {len(taken)} matches; {resumed} waiting turns re-offered; first "
            f"turn {first_turn_after_kill - killed_at:.2f} s after kill -9 (lease {LEASE_MS} ms)"
        )

        async def standings() -> list:
            out = []
            for inst in survivors:
                async with Client(inst.address) as c:
                    out.append(await c.standings("cluster"))
            return out

        seen = trio.run(standings)
        assert seen[0] == seen[1]
        assert seen[0].finished_games == GAMES and seen[0].games_in_progress == 0
        assert sum(row.wins for row in seen[0].rows) == GAMES
    finally:
        for proc in bots + [inst.proc for inst in instances]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in bots + [inst.proc for inst in instances]:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
