"""Ladders: the server-hosted ladder over real gRPC and the `nardy ladder` runner as a process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.app import EmbeddedServer

HERE = Path(__file__).parent
RANDOM = f"{sys.executable} {HERE.parent / 'clients' / 'fixtures' / 'random_engine.py'}"
STALL = f"{sys.executable} {HERE.parent / 'clients' / 'fixtures' / 'stall_engine.py'}"
CRASH = f"{sys.executable} {HERE / 'fixtures' / 'crash_engine.py'}"
GREEDY = f"{sys.executable} -m clients engine greedy"


def ladder(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clients", "ladder", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def finished_ids(db: Path) -> set[str]:
    try:
        with sqlite3.connect(db) as con:
            return {row[0] for row in con.execute("SELECT game_id FROM ladder_games")}
    except sqlite3.OperationalError:  # the runner has not created its tables yet
        return set()


@pytest.mark.slow
def test_short_ladder_runs_to_completion(tmp_path):
    db = tmp_path / "l.db"
    out = ladder(
        "--engine",
        f"random={RANDOM}",
        "--engine",
        f"greedy={GREEDY}",
        "--games",
        "6",
        "--concurrency",
        "2",
        "--turn-time-ms",
        "2000",
        "--db",
        str(db),
        "--records",
        str(tmp_path / "records"),
    )
    assert out.returncode == 0, out.stderr
    assert "standings: 6 games" in out.stdout
    assert len(finished_ids(db)) == 6
    records = sorted((tmp_path / "records").glob("*.nrd"))
    assert len(records) == 6
    from nardy.record import load, replay

    for path in records:  # every record replays legally to its stated result (§5)
        (game,) = load(path)
        replay(game)
        assert game.result is not None


@pytest.mark.slow
def test_pairs_share_dice_with_colours_swapped(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "a.db")) as srv:
        ch = grpc.insecure_channel(srv.address)
        stub, lstub = api_grpc.ArbiterServiceStub(ch), ladder_grpc.LadderServiceStub(ch)
        lstub.CreateLadder(
            lpb.CreateLadderRequest(
                name="dup", options=lpb.LadderOptions(turn_time_ms=3000, max_games=2)
            ),
            metadata=(("authorization", f"Bearer {srv.admin_token}"),),
        )
        procs = []
        try:
            for name in ("a", "b"):
                token = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name, bot=True)).token
                procs.append(
                    subprocess.Popen(
                        [*RANDOM.split()],
                        env={**os.environ, "NARDY_SERVER": srv.address, "NARDY_TOKEN": token},
                    )
                )
                lstub.JoinLadder(
                    lpb.JoinLadderRequest(ladder="dup", ready=True),
                    metadata=(("authorization", f"Bearer {token}"),),
                )
            deadline = time.monotonic() + 60
            while lstub.GetStandings(lpb.GetStandingsRequest(ladder="dup")).finished_games < 2:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            for p in procs:
                p.kill()
        games = stub.ListGames(api.ListGamesRequest(ladder="dup")).games
        assert len(games) == 2
        rolls, whites, seeds = [], [], []
        for g in games:
            events = list(
                stub.SubscribeGame(api.SubscribeGameRequest(game_id=g.game_id, from_start=True))
            )
            rolls.append(
                [
                    tuple(e.play.dice)
                    for e in events
                    if e.type in (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED)
                ]
            )
            whites.append(events[-1].state.white.name)
            final = events[-1].state
            assert final.rated and not final.seeded  # a secret seed, shared by the pair
            # revealed once both games ended: in GetGame (and the later game's last event)
            now = stub.GetGame(api.GetGameRequest(game_id=g.game_id)).state
            seeds.append((final.dice_commitment, now.server_seed, tuple(final.client_seeds)))
            # (and in a fresh subscription's SNAPSHOT, as game.proto says)
            snapshot = next(stub.SubscribeGame(api.SubscribeGameRequest(game_id=g.game_id)))
            assert snapshot.type == pb.EVENT_TYPE_SNAPSHOT
            assert snapshot.state.server_seed == now.server_seed
        n = min(map(len, rolls))
        assert n > 5 and rolls[0][:n] == rolls[1][:n]  # the same dice, turn by turn
        assert whites[0] != whites[1]  # with the colours swapped
        assert seeds[0] == seeds[1] and len(seeds[0][2]) == 4  # one seed, revealed to both
        assert seeds[0][1]
        ch.close()
        # the terminal client shows the ladder's table from the ladder RPCs
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "clients",
                "standings",
                "--server",
                srv.address,
                "--ladder",
                "dup",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "standings: 2 games" in out.stdout and "crosstable" in out.stdout
        assert " a " in out.stdout and " b " in out.stdout


def test_crashing_engine_is_restarted_and_charged(tmp_path):
    out = ladder(
        "--engine",
        f"crashy={CRASH}",
        "--engine",
        f"random={RANDOM}",
        "--games",
        "2",
        "--turn-time-ms",
        "800",
        "--db",
        str(tmp_path / "c.db"),
    )
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "crashy" in line and "│" in line)
    cells = [c.strip() for c in row.split("│")]
    # columns: #, engine, Elo, skill, games, W-L, points, mars, out of time, illegal, crashes,
    # ms/move
    assert cells[2] == "crashy"
    assert int(cells[9]) >= 1, row  # lost games on its clock while dead (disconnects)
    assert int(cells[11]) >= 1, row  # and the runner counted and restarted the crash


@pytest.mark.slow
def test_stalling_engine_times_out(tmp_path):
    out = ladder(
        "--engine",
        f"staller={STALL}",
        "--engine",
        f"random={RANDOM}",
        "--games",
        "2",
        "--turn-time-ms",
        "300",
        "--db",
        str(tmp_path / "s.db"),
    )
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "staller" in line and "│" in line)
    cells = [c.strip() for c in row.split("│")]
    assert cells[6] == "0-2" and int(cells[9]) == 2, row


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [2])
def test_resume_after_the_runner_is_killed_loses_no_finished_game(tmp_path, kill_after):
    db = tmp_path / "r.db"
    args = [
        sys.executable,
        "-m",
        "clients",
        "ladder",
        "--engine",
        f"r1={RANDOM}",
        "--engine",
        f"r2={RANDOM}",
        "--games",
        "8",
        "--concurrency",
        "2",
        "--turn-time-ms",
        "2000",
        "--db",
        str(db),
    ]
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not db.exists() or len(finished_ids(db)) < kill_after:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner, the arbiter in it, and its engines
        proc.wait()
    before = finished_ids(db)
    assert len(before) >= kill_after
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    after = finished_ids(db)
    assert before <= after  # nothing finished was lost
    # a kill between the two games of a pair leaves 7: the runner says so and stops
    assert "standings: 8 games" in out.stdout or "stops at 7 of 8 games" in out.stdout, out.stdout


@pytest.mark.slow
def test_sprt_mode_stops_when_the_test_decides(tmp_path):
    out = ladder(
        "--engine",
        f"greedy={GREEDY}",
        "--engine",
        f"random={RANDOM}",
        "--sprt",
        "0,50,0.05,0.05",
        "--concurrency",
        "4",
        "--turn-time-ms",
        "2000",
        "--db",
        str(tmp_path / "sprt.db"),
    )
    assert out.returncode == 0, out.stderr
    assert "H1 accepted: greedy is stronger than random" in out.stdout
    assert "LLR" in out.stdout and "(-2.94, 2.94)" in out.stdout
    # the games still being played when it decided are voided: stopping the engines lost
    # them on the clock of the engine stopped first, counted in the report and the db (or,
    # with a longer turn, left them to count when the db is run again)
    with sqlite3.connect(tmp_path / "sprt.db") as con:
        unfinished = con.execute(
            "SELECT count(*) FROM games WHERE status IN (?, ?)",
            (pb.GAME_STATUS_WAITING, pb.GAME_STATUS_IN_PROGRESS),
        ).fetchone()[0]
    assert unfinished == 0
    assert "were voided: they do not count" in out.stdout, out.stdout


@pytest.mark.slow
def test_unattended_runner_prints_progress_lines(tmp_path):
    """stdout is a pipe: no progress bar, but a line every --progress seconds as fastchess
    prints it (games, score, Elo with its interval, LLR with its bounds)."""
    out = ladder(
        "--engine",
        f"greedy={GREEDY}",
        "--engine",
        f"random={RANDOM}",
        "--sprt",
        "0,50,0.05,0.05",
        "--concurrency",
        "2",
        "--turn-time-ms",
        "2000",
        "--progress",
        "0.5",
        "--db",
        str(tmp_path / "p.db"),
    )
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("Games: ")]
    assert len(lines) >= 2, out.stdout
    last = lines[-1]
    assert "greedy vs random: " in last and "Elo " in last
    assert "LLR " in last and "(-2.94, 2.94)" in last
    assert "\r" not in out.stdout and "\x1b[" not in out.stdout  # no bar, no escape codes
    assert "0 = an even score" in out.stdout  # the Elo column says what it is relative to


def long_ladder(*options: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`nardy ladder` of two random engines for 1,000 games (stopped long before), with a
    progress line every 0.2 s on its stdout."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clients",
            "ladder",
            "--engine",
            f"a={RANDOM}",
            "--engine",
            f"b={RANDOM}",
            "--games",
            "1000",
            "--turn-time-ms",
            "2000",
            "--progress",
            "0.2",
            *options,
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_ladder_with_its_standings_and_no_temporary_files(tmp_path, sig, code):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = long_ladder(env={**os.environ, "TMPDIR": str(tmp)})
    try:
        for line in proc.stdout:  # wait until games have finished, then stop it
            if line.startswith("Games: ") and not line.startswith(("Games: 0/", "Games: 1/")):
                break
        else:
            raise AssertionError(f"no progress: {proc.stderr.read()}")
        assert any(tmp.iterdir())  # its temporary database and logs exist while it runs
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert f"stopped by {signal.Signals(sig).name}" in rest
    assert "standings: " in rest and "crosstable" in rest
    row = next(
        ln for ln in rest.splitlines() if ln.count("│") > 5 and ln.split("│")[2].strip() == "a"
    )
    assert int(row.split("│")[5]) >= 2  # games counted
    assert list(tmp.iterdir()) == []  # the temporary database and engine logs are gone


@pytest.mark.slow
def test_records_are_written_as_the_games_finish(tmp_path):
    """--records were written only when the ladder ended: a run killed (kill -9, the
    machine) kept none, and a long run's oldest games had left ListGames by then."""
    records = tmp_path / "records"
    proc = long_ladder("--records", str(records))
    try:
        for line in proc.stdout:  # (a progress line every 0.2 s)
            if line.startswith("Games: ") and len(list(records.glob("*.nrd"))) >= 2:
                break
        else:
            raise AssertionError(f"no records while it ran: {proc.stderr.read()}")
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    for path in records.glob("*.nrd"):  # whole records, each of a finished game, with its
        text = path.read_text()  # seed (a pair's game written before its partner ended,
        assert "Result" in text and "ServerSeed" in text  # the seed unrevealed: unverifiable)


@pytest.mark.slow
def test_a_short_nardy_ladder_with_records_that_import(tmp_path):
    """RULES.md §8-9: a ladder of short nardy games between random and greedy over the real
    server; every record names its variant and `nardy import` checks it by the rules."""
    records = tmp_path / "records"
    out = ladder(
        "--variant",
        "short",
        "--engine",
        f"random={RANDOM}",
        "--engine",
        f"greedy={GREEDY}",
        "--games",
        "4",
        "--concurrency",
        "2",
        "--turn-time-ms",
        "3000",
        "--db",
        str(tmp_path / "s.db"),
        "--records",
        str(records),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    files = sorted(records.glob("*.nrd"))
    assert len(files) == 4
    for f in files:
        text = f.read_text()
        assert "Variant: short" in text
        assert "\nServerSeed: " in text  # both games of a pair (the first's revealed later)
        assert any(k in text for k in (" single ", " gammon ", " backgammon "))
        check = subprocess.run(
            [sys.executable, "-m", "clients", "import", str(f)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert check.returncode == 0, check.stderr
        assert ": legal" in check.stdout


@pytest.mark.slow
def test_demo_runs_every_bundled_engine_to_its_standings(tmp_path):
    """`nardy demo` (make demo), the main job: every long-nardy engine of the registry plays
    to the standings, no game lost by a crash. (The clock is generous here: a test must not
    depend on the machine's load; engines' speed is measured in bench/.)"""
    from engines.registry import names

    db = tmp_path / "demo.db"
    out = subprocess.run(
        [sys.executable, "-m", "clients", "demo", "--games", "12", "--db", str(db)]
        + ["--turn-time-ms", "30000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "standings: 12 games" in out.stdout
    with sqlite3.connect(db) as con:
        records = [json.loads(r) for (r,) in con.execute("SELECT record FROM ladder_games")]
    assert len(records) == 12
    assert {r["white"] for r in records} | {r["black"] for r in records} == set(names("long"))
    assert [r for r in records if r["termination"] != "normal"] == []
