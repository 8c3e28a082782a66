"""`nardy ladder`: a local tournament between engine processes on an embedded arbiter.

The runner starts the arbiter on the given SQLite file, registers each engine as a bot,
launches each engine command as its own process (with ``NARDY_SERVER`` and ``NARDY_TOKEN``
in its environment), enters them into a server-hosted ladder and watches the standings
until the number of games is reached or the SPRT decides. An engine that exits is
restarted; the games it was playing are lost by it on its clock (as disconnects). Running
again with the same ``--db`` continues: finished games are kept and only the rest are played.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from nardy.stats import SprtState
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.app import EmbeddedServer
from server.errors import ArbiterError

LADDER = "local"
CRASH_LIMIT = 5  # an engine that dies this often before any game ends is broken
log = logging.getLogger("nardy.ladder")


@dataclass
class EngineProcess:
    """One engine command, supervised: restarted when it exits."""

    name: str
    cmd: list[str]
    token: str = ""
    proc: subprocess.Popen | None = None
    crashes: int = 0
    log_path: Path | None = None
    started: list[float] = field(default_factory=list)
    counted: bool = False  # this exit is already counted as a crash

    def start(self, address: str, log_dir: Path) -> None:
        self.log_path = log_dir / f"{self.name}.log"
        # The runner's own interpreter directory first on PATH: `python` and `nardy` in an
        # engine command mean the installation the runner itself runs from.
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        env = {**os.environ, "PATH": path, "NARDY_SERVER": address, "NARDY_TOKEN": self.token}
        out = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(
            self.cmd,
            env=env,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        out.close()
        self.started.append(time.monotonic())
        self.counted = False

    def check(self, address: str, log_dir: Path) -> bool:
        """Restart the engine if it has exited (at most once a second); True if restarted."""
        if self.proc is None or self.proc.poll() is None:
            return False
        if not self.counted:
            self.crashes += 1
            self.counted = True
        if time.monotonic() - self.started[-1] < 1.0:
            return False
        self.start(address, log_dir)
        return True

    def log_tail(self, lines: int = 5) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:]) or "(empty)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the runner dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def parse_engines(specs: list[str]) -> list[EngineProcess]:
    engines = []
    for spec in specs:
        name, sep, cmd = spec.partition("=")
        if not sep or not name or not cmd.strip():
            raise SystemExit(f"nardy ladder: --engine takes NAME=COMMAND, not {spec!r}")
        engines.append(EngineProcess(name.strip(), shlex.split(cmd)))
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
        return SprtState(elo0, elo1, alpha, beta)
    except ValueError as e:
        raise SystemExit(f"nardy ladder: --sprt takes elo0,elo1,alpha,beta ({e})") from None


def run(args: argparse.Namespace) -> int:
    engines = parse_engines(args.engine)
    sprt = parse_sprt(args.sprt)
    if sprt is not None and len(engines) != 2:
        raise SystemExit("nardy ladder: --sprt compares exactly two engines")
    console = Console()
    if not console.is_terminal:
        console = Console(width=150)
    db = args.db or str(Path(tempfile.mkdtemp(prefix="nardy-ladder-")) / "ladder.db")
    log_dir = Path(tempfile.mkdtemp(prefix="nardy-ladder-logs-"))
    with EmbeddedServer(db=db) as server:
        channel = grpc.insecure_channel(server.address)
        arbiter = api_grpc.ArbiterServiceStub(channel)
        ladders = ladder_grpc.LadderServiceStub(channel)
        games = 0 if sprt is not None else args.games
        options = lpb.LadderOptions(
            turn_time_ms=args.time_per_move,
            max_games=games,
            max_games_per_bot=max(2, args.concurrency + args.concurrency % 2),
            max_concurrent_games=max(2, args.concurrency),
        )
        created = ladders.CreateLadder(
            lpb.CreateLadderRequest(name=LADDER, options=options),
            metadata=_auth(server.admin_token),
        )
        target = created.options.max_games
        if not created.created:
            console.print(
                f"continuing the ladder in {db}: {target or 'no'} game limit, "
                f"{created.options.turn_time_ms} ms per turn (its first settings)"
            )
        for engine in engines:
            engine.token = _token(server, arbiter, engine.name)
            engine.start(server.address, log_dir)
            ladders.JoinLadder(
                lpb.JoinLadderRequest(ladder=LADDER, ready=True), metadata=_auth(engine.token)
            )
        console.print(f"ladder on {server.address}, db {db}; engine logs in {log_dir}")
        try:
            standings = _watch(console, ladders, engines, server.address, log_dir, target, sprt)
        except KeyboardInterrupt:
            console.print("interrupted: finished games are kept in the db; run again to go on")
            standings = ladders.GetStandings(lpb.GetStandingsRequest(ladder=LADDER))
        finally:
            for engine in engines:
                with contextlib.suppress(grpc.RpcError):
                    ladders.JoinLadder(
                        lpb.JoinLadderRequest(ladder=LADDER, ready=False),
                        metadata=_auth(engine.token),
                        timeout=2,
                    )
            for engine in engines:
                engine.stop()
        cross = ladders.GetCrosstable(lpb.GetCrosstableRequest(ladder=LADDER))
        console.print(standings_table(standings, engines))
        console.print(crosstable(cross, [e.name for e in engines]))
        if sprt is not None:
            a, b = engines[0].name, engines[1].name
            verdict = {
                "H1": f"H1 accepted: {a} is stronger than {b} by at least {sprt.elo1:g} Elo",
                "H0": f"H0 accepted: {a} is not stronger than {b} by {sprt.elo1:g} Elo",
            }.get(sprt.decision() or "", "no decision yet")
            console.print(
                f"SPRT {a} vs {b}, elo0 {sprt.elo0:g}, elo1 {sprt.elo1:g}: {sprt}\n{verdict}"
            )
        if args.records:
            from clients.export import export_ladder

            n = export_ladder(arbiter, server.address, LADDER, Path(args.records))
            console.print(f"{n} game records written to {args.records}")
        channel.close()
    return 0


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
        return server.call(server.arbiter.reissue_token, name)
    except ArbiterError as e:
        raise SystemExit(f"nardy ladder: {e}") from None


def _watch(
    console: Console,
    ladders,
    engines: list[EngineProcess],
    address: str,
    log_dir: Path,
    target: int,
    sprt: SprtState | None,
) -> lpb.GetStandingsResponse:
    """Show live progress until the target or the SPRT decision; return the standings."""
    start = None
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TextColumn("{task.fields[leader]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("games", total=target or None, rate="", leader="")
        while True:
            st = ladders.GetStandings(lpb.GetStandingsRequest(ladder=LADDER))
            done = st.finished_games
            for engine in engines:
                engine.check(address, log_dir)
                if engine.crashes >= CRASH_LIMIT and not done:
                    raise SystemExit(
                        f"nardy ladder: engine {engine.name} exited "
                        f"{engine.crashes} times before any game finished; "
                        f"its log ({engine.log_path}) ends:\n{engine.log_tail()}"
                    )
            if start is None:
                start = (time.monotonic(), done)
            elapsed = time.monotonic() - start[0]
            rate = (done - start[1]) / elapsed if elapsed > 0 else 0.0
            leader = st.rows[0].player.name if st.rows and done else ""
            extra = ""
            if sprt is not None:
                cross = ladders.GetCrosstable(lpb.GetCrosstableRequest(ladder=LADDER))
                sprt.counts = pair_counts(cross, engines[0].name, engines[1].name)
                extra = f"  {sprt}"
            progress.update(
                task,
                completed=done,
                rate=f"{rate:.2f} games/s",
                leader=f"leader: {leader}{extra}" if leader else extra,
            )
            if target and done >= target and not st.games_in_progress:
                return st
            if sprt is not None and sprt.decision() is not None:
                return st
            time.sleep(0.25)


def pair_counts(cross: lpb.GetCrosstableResponse, a: str, b: str) -> tuple[int, int, int]:
    for c in cross.cells:
        if c.player == a and c.opponent == b:
            return c.pairs_lost, c.pairs_split, c.pairs_won
    return 0, 0, 0


def standings_table(
    st: lpb.GetStandingsResponse, engines: list[EngineProcess] | None = None
) -> Table:
    crashes = {e.name: e.crashes for e in engines or []}
    t = Table(
        title=f"standings: {st.finished_games} games"
        + (f", {st.voided_games} voided" if st.voided_games else "")
    )
    for col in (
        "#",
        "engine",
        "Elo (95%)",
        "skill μ-3σ",
        "games",
        "W-L",
        "points",
        "mars W/L",
        "timeouts",
        "crashes",
        "ms/move",
    ):
        t.add_column(col, justify="left" if col == "engine" else "right")
    for r in st.rows:
        elo = r.elo
        if not r.games:
            elo_text = "-"
        elif abs(elo.value) >= 2000:  # every pair won (or lost): no finite estimate
            elo_text = "all won" if elo.value > 0 else "all lost"
        else:
            elo_text = f"{elo.value:+.0f} [{_bound(elo.low)}, {_bound(elo.high)}]"
        t.add_row(
            str(r.rank),
            r.player.name,
            elo_text,
            f"{r.skill_conservative:.2f}",
            str(r.games),
            f"{r.wins}-{r.losses}",
            f"{r.points_for}-{r.points_against}",
            f"{r.mars_wins}/{r.mars_losses}",
            str(r.timeouts + r.disconnects),
            str(crashes.get(r.player.name, 0)),
            f"{r.avg_move_ms:.1f}",
        )
    return t


def _bound(x: float) -> str:
    return f"{x:+.0f}" if abs(x) < 2000 else ("+inf" if x > 0 else "-inf")


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
