"""`nardy ladder`: a local tournament between engine processes on an embedded arbiter.

The runner starts the arbiter on the given SQLite file, registers each engine as a bot,
launches each engine command as its own process (:mod:`clients.supervisor`: environment,
logs, orphan guard, restart, crash loop), enters them into a server-hosted ladder and
watches the standings until the number of games is reached or the SPRT decides. An engine
that exits is restarted; the games it was playing are lost by it on its clock (as
disconnects). Running again with the same ``--db`` continues: finished games are kept and
only the rest are played.

Unattended (stdout not a terminal) it prints a progress line every ``--progress`` seconds
instead of a bar. SIGINT and SIGTERM end it early, still printing the standings, the
crosstable and the records, with exit status 130 and 143. Temporary files (the database,
the engine logs) are removed at the end unless ``--db`` / ``--logs`` named them. The
``--records`` are written as the games finish (a run killed keeps those).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import grpc
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clients.supervisor import EngineProcess, LaunchError
from clients.term import report_console
from nardy.match import DEFAULT_VARIANT
from nardy.stats import SprtState, elo_pairs, elo_text
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.app import EmbeddedServer
from server.errors import ArbiterError

LADDER = "local"
POLL_S = 0.25
RECORDS_S = 2.0  # --records written this often while the ladder runs
ELO_NOTE = (
    "Elo: each engine's duplicate-pair score against the opponents it met, "
    "0 = an even score; [95% interval]"
)
log = logging.getLogger("nardy.ladder")


class Stopped(Exception):
    """SIGINT or SIGTERM arrived: finish early, printing what was played."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass(eq=False)
class Entrant:
    """An engine in the ladder: its name, command, token and supervised process."""

    name: str
    cmd: list[str]
    token: str = ""
    process: EngineProcess | None = field(default=None, repr=False)

    @property
    def crashes(self) -> int:
        return self.process.crashes if self.process else 0


def parse_engines(specs: list[str]) -> list[Entrant]:
    engines = []
    for spec in specs:
        name, sep, cmd = spec.partition("=")
        if not sep or not name or not cmd.strip():
            raise SystemExit(f"nardy ladder: --engine takes NAME=COMMAND, not {spec!r}")
        engines.append(Entrant(name.strip(), shlex.split(cmd)))
    names = [e.name for e in engines]
    if len(set(names)) != len(names):
        raise SystemExit("nardy ladder: engine names must differ")
    if len(engines) < 2:
        raise SystemExit("nardy ladder: give at least two --engine NAME=COMMAND")
    return engines


def parse_sprt(text: str | None) -> SprtState | None:
    if not text:
        return None
    try:
        elo0, elo1, alpha, beta = (float(x) for x in text.split(","))
        if not all(math.isfinite(x) for x in (elo0, elo1)):
            raise ValueError("elo0 and elo1 must be finite")
        return SprtState(elo0, elo1, alpha, beta)
    except ValueError as e:
        raise SystemExit(f"nardy ladder: --sprt takes elo0,elo1,alpha,beta ({e})") from None


def _check_args(args: argparse.Namespace) -> None:
    for flag, value, low in (
        ("--games", args.games, 2),
        ("--concurrency", args.concurrency, 1),
        ("--turn-time-ms", args.turn_time_ms, 1),
    ):
        if value < low:
            raise SystemExit(f"nardy ladder: {flag} must be at least {low}, not {value}")
    if args.games % 2:
        raise SystemExit(
            f"nardy ladder: --games must be even, not {args.games}: games are played in "
            "pairs with the same dice, colours swapped"
        )
    if getattr(args, "progress", 5.0) <= 0:
        raise SystemExit("nardy ladder: --progress takes a number of seconds above 0")


def _on_signal(signum, frame) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # one is enough: finish the report undisturbed
    raise Stopped(signum)


def run(args: argparse.Namespace) -> int:
    engines = parse_engines(args.engine)
    sprt = parse_sprt(args.sprt)
    if sprt is not None and len(engines) != 2:
        raise SystemExit("nardy ladder: --sprt compares exactly two engines")
    _check_args(args)
    console = report_console()
    unattended = not console.is_terminal
    temporary: list[Path] = []
    if args.db:
        db = args.db
    else:
        temporary.append(Path(tempfile.mkdtemp(prefix="nardy-ladder-")))
        db = str(temporary[-1] / "ladder.db")
    if getattr(args, "logs", None):
        log_dir = Path(args.logs)
        log_dir.mkdir(parents=True, exist_ok=True)
    else:
        temporary.append(Path(tempfile.mkdtemp(prefix="nardy-ladder-logs-")))
        log_dir = temporary[-1]
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _run(args, console, unattended, engines, sprt, db, log_dir)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for entrant in engines:
            if entrant.process is not None:
                entrant.process.stop()
        for path in temporary:
            shutil.rmtree(path, ignore_errors=True)


def _run(args, console, unattended, engines, sprt, db, log_dir) -> int:
    stopped: Stopped | None = None
    with EmbeddedServer(db=db) as server:
        channel = grpc.insecure_channel(server.address)
        arbiter = api_grpc.ArbiterServiceStub(channel)
        ladders = ladder_grpc.LadderServiceStub(channel)
        try:
            target = _set_up(args, console, server, arbiter, ladders, engines, sprt, db, log_dir)
            record = _recorder(args, arbiter, server.address, sealed_too=False)
            _watch(console, unattended, args, ladders, engines, target, sprt, record)
        except Stopped as e:
            stopped = e
            console.print(
                f"stopped by {e}: finished games are kept"
                + (f" in {db}; run again with --db to go on" if args.db else "")
            )
        finally:
            for entrant in engines:
                with contextlib.suppress(grpc.RpcError):
                    if entrant.token:
                        ladders.JoinLadder(
                            lpb.JoinLadderRequest(ladder=LADDER, ready=False),
                            metadata=_auth(entrant.token),
                            timeout=2,
                        )
            _void_unfinished(console, server, channel)
            for entrant in engines:
                if entrant.process is not None:
                    entrant.process.stop()
        final = _recorder(args, arbiter, server.address, sealed_too=True)
        _report(console, args, ladders, engines, sprt, final)
        channel.close()
    return 0 if stopped is None else 128 + stopped.signum


def _void_unfinished(console, server: EmbeddedServer, channel: grpc.Channel) -> None:
    """Void the ladder's games not over when the run stops (the SPRT decided, or a signal):
    stopping their engines would lose them by abandonment, the first engine stopped losing
    them all, in the report, the --db and the verdict. A voided game never counts."""
    arbiter = api_grpc.ArbiterServiceStub(channel)
    admin = admin_grpc.AdminServiceStub(channel)
    voided = 0
    with contextlib.suppress(grpc.RpcError):
        for status in (pb.GAME_STATUS_IN_PROGRESS, pb.GAME_STATUS_WAITING):
            games = arbiter.ListGames(
                api.ListGamesRequest(ladder=LADDER, status=status, limit=500), timeout=5
            ).games
            for g in games:
                admin.VoidGame(
                    admin_pb.VoidGameRequest(game_id=g.game_id),
                    metadata=_auth(server.admin_token),
                    timeout=5,
                )
                voided += 1
    if voided:
        console.print(f"{voided} games not over were voided: they do not count")


def _set_up(args, console, server, arbiter, ladders, engines, sprt, db, log_dir) -> int:
    """Create (or resume) the ladder, start every engine; the ladder's game target."""
    options = lpb.LadderOptions(
        turn_time_ms=args.turn_time_ms,
        max_games=0 if sprt is not None else args.games,
        max_games_per_bot=max(2, args.concurrency + args.concurrency % 2),
        max_concurrent_games=max(2, args.concurrency),
        variant=getattr(args, "variant", DEFAULT_VARIANT),
    )
    created = ladders.CreateLadder(
        lpb.CreateLadderRequest(name=LADDER, options=options),
        metadata=_auth(server.admin_token),
    )
    target = created.options.max_games
    if not created.created:
        console.print(
            f"continuing the ladder in {db}: {target or 'no'} game limit, "
            f"{created.options.turn_time_ms} ms per turn (its first settings; for other "
            "settings or more games, start a ladder in another --db)"
        )
    for entrant in engines:
        entrant.token = _token(server, arbiter, entrant.name)
        entrant.process = EngineProcess(
            entrant.name,
            entrant.cmd,
            log_dir / f"{entrant.name}.log",
            env={"NARDY_SERVER": server.address, "NARDY_TOKEN": entrant.token},
        )
        try:
            entrant.process.start()
        except LaunchError as e:
            raise SystemExit(f"nardy ladder: engine {entrant.name}: {e}") from None
        ladders.JoinLadder(
            lpb.JoinLadderRequest(ladder=LADDER, ready=True), metadata=_auth(entrant.token)
        )
    goal = f"SPRT {sprt.elo0:g},{sprt.elo1:g}" if sprt is not None else f"{target} games"
    console.print(
        f"ladder of {len(engines)} engines ({goal}, {created.options.turn_time_ms} ms per "
        f"turn) on {server.address}; db {db}; engine logs in {log_dir}"
    )
    return target


def _auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _token(server: EmbeddedServer, arbiter, name: str) -> str:
    """Register the engine, or (when resuming on the same db) reissue its token."""
    try:
        return arbiter.RegisterPlayer(
            api.RegisterPlayerRequest(name=name, bot=True), metadata=_auth(server.admin_token)
        ).token
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.ALREADY_EXISTS:
            raise
    try:
        return server.call(server.arbiter.roster.reissue_token, name)
    except ArbiterError as e:
        raise SystemExit(f"nardy ladder: {e}") from None


def _supervise(console, engines: list[Entrant], done: int) -> None:
    for entrant in engines:
        process = entrant.process
        assert process is not None
        event = process.check()
        if event:
            console.print(f"engine {event}")
        if process.crash_loop:
            raise SystemExit(
                f"nardy ladder: engine {entrant.name} is in a crash loop "
                f"({process.crashes} exits; {done} games finished); its log ends:\n"
                + "\n".join(process.tail())
            )


def _recorder(args, arbiter, address: str, *, sealed_too: bool) -> Callable[[], int] | None:
    """With ``--records``: what writes the records of the games finished so far, those
    written already kept (the number of games); called every RECORDS_S while the ladder
    runs (``sealed_too=False``: a game whose pair is still played waits for its seed), so
    that a run killed keeps its records, and once at the end."""
    if not args.records:
        return None
    from clients.export import export_ladder

    out = Path(args.records)
    return partial(export_ladder, arbiter, address, LADDER, out, sealed_too=sealed_too)


def _watch(console, unattended, args, ladders, engines, target, sprt, record) -> None:
    """Follow the ladder until the target or the SPRT decision: a bar on a terminal, a
    progress line every few seconds otherwise; ``record`` (if any) as it goes."""
    if unattended:
        _watch_lines(console, args, ladders, engines, target, sprt, record)
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[line]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("games", total=target or None, line="")
        for st, line in _poll(console, ladders, engines, target, sprt, record):
            progress.update(task, completed=st.finished_games, line=line)


def _watch_lines(console, args, ladders, engines, target, sprt, record) -> None:
    every = getattr(args, "progress", 5.0)
    t0 = time.monotonic()
    next_line = t0 + every
    st = line = None
    for st, line in _poll(console, ladders, engines, target, sprt, record):
        if time.monotonic() >= next_line:
            next_line += every
            _progress_line(console, st, line, target, time.monotonic() - t0)
    if st is not None:
        _progress_line(console, st, line, target, time.monotonic() - t0)


def _progress_line(console, st, line: str, target: int, elapsed: float) -> None:
    games = f"{st.finished_games}/{target}" if target else str(st.finished_games)
    console.print(
        f"Games: {games} ({st.games_in_progress} playing), {elapsed:.0f} s; {line}",
        soft_wrap=True,
        highlight=False,
    )


def _poll(console, ladders, engines, target, sprt, record):
    """Yield (standings, summary) every POLL_S until the ladder is done."""
    records_due = time.monotonic() + RECORDS_S
    while True:
        if record is not None and time.monotonic() >= records_due:
            record()
            records_due = time.monotonic() + RECORDS_S
        st = ladders.GetStandings(lpb.GetStandingsRequest(ladder=LADDER))
        _supervise(console, engines, st.finished_games)
        cross = None
        if sprt is not None or len(engines) == 2:
            cross = ladders.GetCrosstable(lpb.GetCrosstableRequest(ladder=LADDER))
        yield st, summary(st, cross, engines, sprt)
        if target and not st.games_in_progress and st.finished_games + 2 > target:
            if st.finished_games < target:  # pairs come two games at a time
                console.print(
                    f"the ladder stops at {st.finished_games} of {target} games: a void or a "
                    "pair cut in half by a crash left fewer than a pair to play"
                )
            return
        if sprt is not None and sprt.decision() is not None:
            return
        time.sleep(POLL_S)


def summary(st, cross, engines: list[Entrant], sprt: SprtState | None) -> str:
    """One line as fastchess prints it: score, Elo with its interval, LLR with its bounds."""
    if cross is not None and len(engines) == 2:
        a, b = engines[0].name, engines[1].name
        counts = pair_counts(cross, a, b)
        if sprt is not None:
            sprt.counts = counts
        cell = next((c for c in cross.cells if c.player == a and c.opponent == b), None)
        wins, losses = (cell.wins, cell.losses) if cell else (0, 0)
        elo = elo_pairs(counts)
        text = (
            f"{a} vs {b}: {wins}-{losses} in games, pairs {counts[2]}-{counts[1]}-{counts[0]} "
            f"(W-split-L), Elo {elo_text(elo.elo, elo.low, elo.high, bool(sum(counts)))}"
        )
        if sprt is not None:
            text += f", {sprt}"
        return text
    parts = [
        f"{r.player.name} {r.wins}-{r.losses} "
        + elo_text(r.elo.value, r.elo.low, r.elo.high, bool(r.games))
        for r in st.rows
    ]
    return "; ".join(parts)


def _report(console, args, ladders, engines, sprt, record) -> None:
    """Standings, crosstable, the SPRT verdict and the records: at the end, however it ends."""
    standings = ladders.GetStandings(lpb.GetStandingsRequest(ladder=LADDER))
    cross = ladders.GetCrosstable(lpb.GetCrosstableRequest(ladder=LADDER))
    console.print(standings_table(standings, engines, getattr(args, "variant", DEFAULT_VARIANT)))
    console.print(ELO_NOTE, highlight=False)
    console.print(crosstable(cross, [e.name for e in engines]))
    if sprt is not None:
        a, b = engines[0].name, engines[1].name
        if sprt.decision() is None:  # else the pairs it decided on (a game may end after)
            sprt.counts = pair_counts(cross, a, b)
        verdict = {
            "H1": f"H1 accepted: {a} is stronger than {b} (the pairs favour {a} by "
            f"{sprt.elo1:g} Elo over {sprt.elo0:g})",
            "H0": f"H0 accepted: {a} is not stronger than {b} by {sprt.elo1:g} Elo (the pairs "
            f"favour {sprt.elo0:g} over {sprt.elo1:g})",
        }.get(sprt.decision() or "", "no decision yet")
        console.print(
            f"SPRT {a} vs {b}, elo0 {sprt.elo0:g}, elo1 {sprt.elo1:g}: {sprt}\n{verdict}",
            highlight=False,
        )
    if record is not None:
        console.print(f"{record()} game records written to {args.records}")


def pair_counts(cross: lpb.GetCrosstableResponse, a: str, b: str) -> tuple[int, int, int]:
    for c in cross.cells:
        if c.player == a and c.opponent == b:
            return c.pairs_lost, c.pairs_split, c.pairs_won
    return 0, 0, 0


BIG_WINS = {"long": "mars", "short": "gammons"}  # a variant's wins for more than a point


def standings_table(
    st: lpb.GetStandingsResponse, engines: list[Entrant] | None = None, variant: str = ""
) -> Table:
    """The standings; with ``engines`` (a local ladder's processes), how often each crashed;
    the wins for more than a point named as ``variant`` names them (both, not given)."""
    crashes = {e.name: e.crashes for e in engines or []}
    t = Table(
        title=f"standings: {st.finished_games} games"
        + (f", {st.voided_games} voided" if st.voided_games else "")
    )
    columns = ["#", "engine", "Elo vs opponents", "skill μ-3σ", "games", "W-L", "points"]
    big = BIG_WINS.get(variant, "/".join(BIG_WINS.values()))
    columns += [
        f"{big} W/L",
        "out of time",
        "illegal",
        *(["crashes"] if engines else []),
        "ms/move",
    ]
    for col in columns:
        t.add_column(col, justify="left" if col == "engine" else "right")
    for r in st.rows:
        elo = elo_text(r.elo.value, r.elo.low, r.elo.high, bool(r.games))
        t.add_row(
            str(r.rank),
            r.player.name,
            elo,
            f"{r.skill_conservative:.2f}",
            str(r.games),
            f"{r.wins}-{r.losses}",
            f"{r.points_for}-{r.points_against}",
            f"{r.mars_wins}/{r.mars_losses}",
            str(r.timeouts + r.disconnects),  # lost on the clock: with a stream open or none
            str(r.illegal_play_losses),  # games lost by too many refused plays
            *([str(crashes.get(r.player.name, 0))] if engines else []),
            f"{r.avg_move_ms:.1f}",
        )
    return t


def crosstable(cross: lpb.GetCrosstableResponse, names: list[str]) -> Table:
    t = Table(title="crosstable: wins-losses (pairs won/split/lost)")
    t.add_column("")
    for n in names:
        t.add_column(n, justify="center")
    cells = {(c.player, c.opponent): c for c in cross.cells}
    for a in names:
        row = [a]
        for b in names:
            c = cells.get((a, b))
            row.append(
                ""
                if a == b
                else "-"
                if c is None
                else f"{c.wins}-{c.losses} ({c.pairs_won}/{c.pairs_split}/{c.pairs_lost})"
            )
        t.add_row(*row)
    return t


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return run(args)
