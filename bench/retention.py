"""Journal retention: restart time and journal size as history grows, before and after
archiving finished games (``nardy admin archive``).

For each history size N the journal is filled with N finished games written directly
through the store (copies of a few real games played once on an embedded arbiter, their
ends spread over the last ``--days`` days, half of them ladder pairs with their results in
the books) and a few matches still waiting to start. The database is then copied: one copy
keeps its history, the other is archived (games that ended more than ``--keep`` days ago)
by the arbiter itself, through AdminService.ArchiveGames, while a probe commits a journal
write every 10 ms (how long a live game's commit waits meanwhile). Restart time (a fresh
process each time: open the store, restore, serve) is then measured on both copies in
alternating rounds, with each one's size (SQLite file, rows of the journal's tables).

``python -m bench retention [--quick]``; ``python -m bench.retention --games 1000,10000
--rounds 3 --store sqlite|postgresql|both``; ``--no-archive`` measures restarts only (for
an arbiter without ArchiveGames).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import trio

TABLES = ("matches", "games", "events", "seat_tokens", "ladder_games", "archive")
TEMPLATES = 4  # real games played once, copied N times
LIVE = 8  # matches still waiting to start (restart runs them again)
BOTS = 8
DAY = 86400.0


# -- the history ---------------------------------------------------------------------------
def templates(tmp: str) -> list[dict]:
    """A few real games (random bots, long nardy) played on an embedded arbiter: the rows
    each left in the journal."""
    from nardy.client import Client, play_game
    from server.app import EmbeddedServer

    db = os.path.join(tmp, "templates.db")

    def engine(seed: int):
        rng = random.Random(seed)
        return lambda turn: rng.choice(turn.legal)

    async def play() -> None:
        async with Client(srv.address) as client:
            for i in range(TEMPLATES):
                r = await client.create_match(seed=100 + i)
                seats = [client.with_token(t) for t in (r.first_seat_token, r.second_seat_token)]
                async with trio.open_nursery() as nursery:
                    for k, seat in enumerate(seats):
                        nursery.start_soon(play_game, seat, r.game_id, engine(2 * i + k))

    with EmbeddedServer(db=db) as srv:
        trio.run(play)
    out = []
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        for match in conn.execute("SELECT * FROM matches ORDER BY rowid"):
            game = conn.execute("SELECT * FROM games WHERE match_id=?", (match["id"],)).fetchone()
            events = conn.execute(
                "SELECT seq, type, time, data FROM events WHERE game_id=? ORDER BY seq",
                (game["id"],),
            ).fetchall()
            out.append({"match": dict(match), "game": dict(game), "events": events})
    return out


def columns(store) -> set[tuple[str, str]]:
    """(table, column) of this store's schema (the bench fills older schemas too)."""

    async def read() -> set[tuple[str, str]]:
        if store.order == "rowid":
            return {
                (table, row[1])
                for table in ("matches", "games")
                for row in await store.query(f"PRAGMA table_info({table})")
            }
        rows = await store.query(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public'"
        )
        return {(table, column) for table, column in rows}

    return trio.run(read)


def insert(table: str, values: dict, schema: set[tuple[str, str]]) -> tuple[str, tuple]:
    """An INSERT of the ``values`` whose columns ``table`` has in ``schema``."""
    cols = [c for c in values if (table, c) in schema]
    sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    return sql, tuple(values[c] for c in cols)


def fill(db: str, games: int, days: float, tmpl: list[dict]) -> None:
    """``games`` finished games (half of them ladder pairs, counted in the ladder's books)
    ending over the last ``days`` days, and LIVE matches waiting to start."""
    from server.core.main import open_store

    store = open_store(db)
    schema = columns(store)
    now = time.time()
    bots = [(secrets.token_hex(6), f"bench-bot-{i}") for i in range(BOTS)]
    head = [
        (
            "INSERT INTO players (id, name, bot, token_hash, owner) VALUES (?,?,?,?,?)",
            (pid, name, 1, secrets.token_hex(32), ""),
        )
        for pid, name in bots
    ]
    ladder_options = {"turn_time_ms": 1000, "max_games_per_bot": 2}
    head.append(
        ("INSERT INTO ladders (name, options) VALUES (?,?)", ("bench", json.dumps(ladder_options)))
    )
    batches: list[list] = [head]
    batch: list = []
    for i in range(games):
        t = tmpl[i % len(tmpl)]
        end = now - days * DAY * (games - i) / games
        ladder = i % 4 < 2  # pairs: games 4k and 4k+1
        pair = f"p{i // 2:08x}" if ladder else ""
        batch += copy_game(t, end, pair, bots, i, schema)
        if len(batch) >= 4000:
            batches.append(batch)
            batch = []
    for _ in range(LIVE):
        m, match_id, game_id = tmpl[0]["match"], secrets.token_hex(6), secrets.token_hex(6)
        batch.append(insert("matches", dict(m, id=match_id, created=now), schema))
        game = {"id": game_id, "match_id": match_id, "number": 1, "status": 1, "created": now}
        batch.append(insert("games", dict(game, server_seed=secrets.token_hex(32)), schema))
        lease = {"match_id": match_id, "grp": match_id, "owner": "", "epoch": 0}
        if ("leases", "owner") in schema:  # (several instances: owned by nobody, taken at once)
            batch.append(insert("leases", lease, schema))
    batches.append(batch)

    async def write() -> None:
        for b in batches:
            await store.write(b)
        await store.close()

    trio.run(write)


def copy_game(t: dict, end: float, pair: str, bots, i: int, schema: set) -> list:
    """The rows of a copy of template game ``t``, ending at ``end`` (a ladder game of the
    duplicate pair ``pair``, or a casual one)."""
    m, g, events = t["match"], t["game"], t["events"]
    shift = end - events[-1]["time"]
    match_id, game_id = secrets.token_hex(6), secrets.token_hex(6)
    options = json.loads(m["options"])
    seats = json.loads(m["seats"])
    k = i // 2  # a pair: two bots, never one against itself
    a, b = bots[k % BOTS], bots[(k + 1 + (k // BOTS) % (BOTS - 1)) % BOTS]
    ladder = bool(pair)
    if ladder:
        options.update(ladder="bench", pair_id=pair)
        first, second = (a, b) if i % 2 == 0 else (b, a)
        for seat, (pid, name) in zip(seats, (first, second), strict=True):
            seat.update(name=name, player_id=pid, bot=True)
    start = events[0]["time"] + shift
    match = dict(m, id=match_id, options=json.dumps(options), seats=json.dumps(seats))
    game = dict(g, id=game_id, match_id=match_id, created=start, ended=end, archived=0)
    rows = [
        insert("matches", dict(match, created=start, pair=pair), schema),
        insert("games", game, schema),
        *(
            (
                "INSERT INTO seat_tokens (match_id, seat, token_hash, creator) VALUES (?,?,?,?)",
                (match_id, seat, secrets.token_hex(32), ""),
            )
            for seat in (0, 1)
            if not ladder
        ),
        *(
            (
                "INSERT INTO events (game_id, seq, type, time, data) VALUES (?,?,?,?,?)",
                (game_id, e["seq"], e["type"], e["time"] + shift, bytes(e["data"])),
            )
            for e in events
        ),
    ]
    if ladder:
        result = json.loads(g["result"])
        white, black = seats[g["white_seat"]]["name"], seats[1 - g["white_seat"]]["name"]
        record = {
            "pair_id": pair,
            "game_id": game_id,
            "white": white,
            "black": black,
            "winner": white if result["winner"] == "w" else black,
            "points": result["points"],
            "kind": result["kind"],
            "termination": result["termination"],
            "voided": False,
            "used_ms": [1000, 1000],
            "plays": [30, 30],
        }
        rows.append(
            (
                "INSERT INTO ladder_games (ladder, game_id, record) VALUES (?,?,?)",
                ("bench", game_id, json.dumps(record)),
            )
        )
    return rows


# -- what it costs -------------------------------------------------------------------------
def sizes(db: str) -> tuple[int, int, dict[str, int]]:
    """(bytes the database takes, bytes of it free for reuse, rows of each journal table)."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
            rows = {}
            for table in TABLES:
                exists = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0]
                if exists:
                    rows[table] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            return size, 0, rows
    size = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p))
    with sqlite3.connect(db) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        rows = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES if t in names
        }
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        free *= conn.execute("PRAGMA page_size").fetchone()[0]
    return size, free, rows


def copy_db(db: str, tmp: str, name: str, target: str | None = None) -> str:
    """A copy of database ``db`` (to ``target``: an SQLite path, or an empty PostgreSQL
    database's URL; default a new one named after ``name``)."""
    if db.startswith("postgresql://"):
        import psycopg

        base, source = db.rsplit("/", 1)
        if target is not None:
            drop_pg(target)
        name = target.rsplit("/", 1)[1] if target else f"{source}_{name}"
        with psycopg.connect(base + "/postgres", autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name} TEMPLATE {source}")
        return f"{base}/{name}"
    target = target or os.path.join(tmp, f"{name}.db")
    with sqlite3.connect(db) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def restart_seconds(db: str) -> tuple[float, float]:
    """(seconds, CPU seconds) from the start of an arbiter on ``db`` until it serves, in a
    fresh process: the store opened (and migrated), the games restored, the port open."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.retention", "--restart-once", db],
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def restart_once(db: str) -> None:
    from server.app import EmbeddedServer

    t0, c0 = time.perf_counter(), time.process_time()
    srv = EmbeddedServer(db=db, log_level="WARNING").start()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    srv.stop()
    print(f"{wall:.4f} {cpu:.4f}")


@dataclass
class Archiving:
    """What archiving cost: its time, and how long a live game's commit waited meanwhile
    (a probe committing every 10 ms, first alone then while it archives), and the store's
    time for each batch (the read of its events, its transaction)."""

    seconds: float = 0.0
    games: int = 0
    alone: list[float] = field(default_factory=list)  # the probe's commits, alone
    during: list[float] = field(default_factory=list)  # ... while archiving
    reads: list[float] = field(default_factory=list)
    writes: list[float] = field(default_factory=list)


def timed_store(db: str, cost: Archiving):
    """The arbiter's store, timing each archive batch's read and transaction in its thread."""
    from server.core.main import open_store

    store = open_store(db)
    write, query = store._write_sync, store._query_sync

    def timed_write(batch):
        t0 = time.perf_counter()
        write(batch)
        if any(sql.startswith("INSERT INTO archive") for sql, _ in batch):
            cost.writes.append(time.perf_counter() - t0)

    def timed_query(sql, params):
        t0 = time.perf_counter()
        rows = query(sql, params)
        if sql.startswith("SELECT game_id, seq, type, time, data FROM events"):
            cost.reads.append(time.perf_counter() - t0)
        return rows

    store._write_sync, store._query_sync = timed_write, timed_query
    return store


def archive(db: str, before: float) -> Archiving:
    """Archive the games that ended before ``before`` on an embedded arbiter."""
    import grpc
    from google.protobuf.timestamp_pb2 import Timestamp

    from nardy.v1 import admin_pb2 as admin_pb
    from nardy.v1 import admin_pb2_grpc as admin_grpc
    from server.app import EmbeddedServer
    from server.core.statements import set_setting

    cost = Archiving()
    factory = lambda path: timed_store(path, cost)  # noqa: E731
    with EmbeddedServer(db=db, log_level="WARNING", store_factory=factory) as srv:
        phase = {"waits": cost.alone}

        async def probe() -> None:
            writer = srv.arbiter.writer
            i = 0
            while (waits := phase["waits"]) is not None:
                t0 = trio.current_time()
                await writer.commit(set_setting("bench_probe", str(i)))
                waits.append(trio.current_time() - t0)
                i += 1
                await trio.sleep(0.01)

        prober = threading.Thread(target=srv.call, args=(probe,))
        prober.start()
        time.sleep(3.0)  # the probe alone
        phase["waits"] = cost.during
        md = (("authorization", f"Bearer {srv.admin_token}"),)
        with grpc.insecure_channel(srv.address) as ch:
            admin = admin_grpc.AdminServiceStub(ch)
            t0 = time.perf_counter()
            at = Timestamp()
            at.FromNanoseconds(int(before * 1e9))
            admin.ArchiveGames(admin_pb.ArchiveGamesRequest(before=at), metadata=md)
            while True:
                got = admin.GetRetention(admin_pb.GetRetentionRequest(), metadata=md)
                if not got.retention.run.running:
                    break
                time.sleep(0.05)
            cost.seconds = time.perf_counter() - t0
        phase["waits"] = None
        prober.join()
    cost.games = got.retention.run.archived
    return cost


def spread(values: list[float]) -> str:
    """Median, 99th percentile and maximum of ``values`` (seconds), in milliseconds."""
    v = sorted(values)
    if not v:
        return "none"
    return (
        f"median {statistics.median(v) * 1e3:.1f} ms, 99th percentile "
        f"{v[min(len(v) - 1, int(len(v) * 0.99))] * 1e3:.1f} ms, max {v[-1] * 1e3:.1f} ms"
    )


def fresh(kind: str, tmp: str, server: str | None, name: str) -> str:
    if kind == "sqlite":
        return os.path.join(tmp, f"{name}.db")
    from bench.store import fresh_pg

    assert server is not None
    return fresh_pg(server)


def drop_pg(url: str) -> None:
    import psycopg

    base, name = url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def one_size(kind: str, n: int, args, tmp: str, tmpl, server: str | None) -> None:
    db = fresh(kind, tmp, server, f"h{n}")
    if args.source:
        copy_db(args.source, tmp, "h", db)
        print(f"{kind}: the history of {args.source}")
    else:
        t0 = time.perf_counter()
        fill(db, n, args.days, tmpl)
        print(f"{kind} N={n}: filled in {time.perf_counter() - t0:.1f} s")
    if args.save:  # (PostgreSQL: a database of the same server)
        if kind == "sqlite":
            saved = copy_db(db, tmp, "saved", os.path.join(args.save, f"h{n}.db"))
        else:
            saved = copy_db(db, tmp, "saved", f"{db.rsplit('/', 1)[0]}/nardy_saved_h{n}")
        print(f"  saved as {saved}")
    first = restart_seconds(db)  # (an older schema is migrated here)
    print(f"  first start: {first[0]:.2f} s ({first[1]:.2f} s CPU)", flush=True)
    kept = copy_db(db, tmp, "kept")
    print(f"  journal: {describe(kept)}", flush=True)
    dbs = {"kept": kept}
    if not args.no_archive:
        archived = copy_db(db, tmp, "archived")
        cost = archive(archived, time.time() - args.keep * DAY)
        print(
            f"  archived {cost.games} games (ended more than {args.keep:g} days ago) in "
            f"{cost.seconds:.1f} s ({cost.games / cost.seconds:.0f} games/s)\n"
            f"  a live game's commit alone: {spread(cost.alone)}; while archiving: "
            f"{spread(cost.during)}\n"
            f"  each batch's read: {spread(cost.reads)}; its transaction: {spread(cost.writes)}",
            flush=True,
        )
        print(f"  journal after archiving: {describe(archived)}", flush=True)
        dbs["archived"] = archived
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in dbs}
    for r in range(args.rounds):
        order = list(dbs) if r % 2 == 0 else list(reversed(dbs))
        for name in order:
            times[name].append(restart_seconds(dbs[name]))
    medians = {
        name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
        for name, t in times.items()
    }
    for name, t in times.items():
        rounds = " ".join(f"{w:.2f}" for w, _ in t)
        print(
            f"  restart, {name}: {medians[name][0]:.2f} s, {medians[name][1]:.2f} s CPU "
            f"(median of {len(t)}; rounds {rounds} s)",
            flush=True,
        )
    if "archived" in medians:
        wall = medians["archived"][0] / medians["kept"][0]
        cpu = medians["archived"][1] / medians["kept"][1]
        print(f"  restart archived/kept: {wall:.2f} ({cpu:.2f} CPU)", flush=True)
    if kind == "postgresql":
        for url in (db, *dbs.values()):
            drop_pg(url)


def describe(db: str) -> str:
    size, free, counts = sizes(db)
    listed = ", ".join(f"{t} {c}" for t, c in counts.items())
    unused = f" ({free / 2**20:.1f} MiB of it free pages)" if free else ""
    return f"{size / 2**20:.1f} MiB{unused}; rows: {listed}"


def main(quick: bool = False, argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.retention")
    p.add_argument("--games", default="1000,10000", help="history sizes (default 1000,10000)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--store", choices=("sqlite", "postgresql", "both"), default="sqlite")
    p.add_argument("--days", type=float, default=90.0, help="history spread over this long")
    p.add_argument("--keep", type=float, default=30.0, help="archive games older than this")
    p.add_argument("--no-archive", action="store_true", help="restarts only (older servers)")
    p.add_argument("--save", metavar="DIR", help="keep each generated history (SQLite) here")
    p.add_argument("--from", dest="source", metavar="DB", help="a saved history, not a new one")
    p.add_argument("--restart-once", metavar="DB", help=argparse.SUPPRESS)
    args = p.parse_args(argv if argv is not None else [])
    if args.restart_once:
        restart_once(args.restart_once)
        return
    if quick:
        args.games, args.rounds = "1000", 2
    kinds = ["sqlite", "postgresql"] if args.store == "both" else [args.store]
    if args.source:
        kinds = ["postgresql" if args.source.startswith("postgresql://") else "sqlite"]
    server = None
    if "postgresql" in kinds:
        from bench.store import pg_server

        server = pg_server()
    with tempfile.TemporaryDirectory() as tmp:
        tmpl = [] if args.source else templates(tmp)
        if tmpl:
            events = sum(len(t["events"]) for t in tmpl) / len(tmpl)
            print(f"{TEMPLATES} template games, {events:.0f} journal entries each on average")
        for n in [0] if args.source else (int(x) for x in args.games.split(",")):
            for kind in kinds:
                one_size(kind, n, args, tmp, tmpl, server)
                for name in os.listdir(tmp):
                    if name.startswith(("h", "kept", "archived")):
                        path = os.path.join(tmp, name)
                        os.remove(path) if os.path.isfile(path) else shutil.rmtree(path)


if __name__ == "__main__":
    main(argv=sys.argv[1:])
