"""Consent from the command line: `nardy challenge`, `challenges`, `accept`,
`decline` as real processes against a real server, and strangers trying to answer for the
challenged player."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import trio

from nardy.client import Client, serve_games
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc, ladder_pb2_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from server.app import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]


def nardy(srv: EmbeddedServer, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NARDY_TOKEN", "NARDY_ADMIN_TOKEN")}
    if token is not None:
        env["NARDY_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "clients", *args, "--server", srv.address],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "NO_COLOR": "1"},
    )


def stub(srv: EmbeddedServer):
    ch = grpc.insecure_channel(srv.address)
    return ch, arbiter_pb2_grpc.ArbiterServiceStub(ch)


def register(srv: EmbeddedServer, name: str) -> str:
    ch, s = stub(srv)
    with ch:
        return s.RegisterPlayer(api.RegisterPlayerRequest(name=name, bot=True), timeout=10).token


def field(out: str, key: str) -> str:
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(key))


@pytest.mark.slow
def test_a_player_lists_accepts_and_declines_challenges_from_the_command_line(arbiter):
    alice, bob, carol = (register(arbiter, n) for n in ("cli-alice", "cli-bob", "cli-carol"))
    # the challenges wait up to 10 min (the most a player may ask): CLI processes are slow
    # to start on a loaded machine, and an expired challenge's match is gone
    wait = ("--start-timeout-ms", "600000")
    made = nardy(
        arbiter, "challenge", "cli-bob", "--as", "cli-alice", "--points", "3", *wait, token=alice
    )
    assert made.returncode == 0, made.stderr
    match, game = field(made.stdout, "match"), field(made.stdout, "game")
    assert "cli-bob is challenged" in made.stdout

    listed = nardy(arbiter, "challenges", token=bob)
    assert listed.returncode == 0, listed.stderr
    assert match in listed.stdout and "from cli-alice" in listed.stdout
    assert "3 points" in listed.stdout and "120 s per turn" in listed.stdout
    assert "1 challenge waiting" in listed.stderr
    # nobody else sees it, and nobody else may answer it
    assert match not in nardy(arbiter, "challenges", token=carol).stdout
    for who in (alice, carol):
        out = nardy(arbiter, "accept", match, token=who)
        assert out.returncode == 1 and "FAILED_PRECONDITION" in out.stderr, out.stderr
    out = nardy(arbiter, "accept", match, token="made-up")
    assert out.returncode == 1 and "UNAUTHENTICATED" in out.stderr
    out = nardy(arbiter, "challenges")
    assert out.returncode == 2 and "NARDY_TOKEN" in out.stderr

    ch, s = stub(arbiter)
    with ch:
        bob_md = (("authorization", f"Bearer {bob}"),)
        with pytest.raises(grpc.RpcError) as info:  # not seated before accepting
            s.GetGame(api.GetGameRequest(game_id=game), metadata=bob_md, timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        accepted = nardy(arbiter, "accept", match, token=bob)
        assert accepted.returncode == 0, accepted.stderr
        assert f"accepted: game {game}" in accepted.stdout
        state = s.GetGame(api.GetGameRequest(game_id=game), metadata=bob_md, timeout=10).state
        assert state.status == pb.GAME_STATUS_WAITING and state.rated
        assert match not in nardy(arbiter, "challenges", token=bob).stdout  # answered

        made = nardy(arbiter, "challenge", "cli-bob", "--as", "cli-alice", *wait, token=alice)
        second, game2 = field(made.stdout, "match"), field(made.stdout, "game")
        declined = nardy(arbiter, "decline", second, token=bob)
        assert declined.returncode == 0, declined.stderr
        state = s.GetGame(api.GetGameRequest(game_id=game2), timeout=10).state
        assert state.status == pb.GAME_STATUS_ABORTED
        out = nardy(arbiter, "challenges", token=bob)
        assert out.returncode == 0 and "0 challenges waiting" in out.stderr, out.stderr


def test_list_challenges_needs_a_player_token(arbiter):
    ch, s = stub(arbiter)
    with ch:
        with pytest.raises(grpc.RpcError) as info:
            s.ListChallenges(api.ListChallengesRequest(), timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        r = s.CreateMatch(api.CreateMatchRequest(), timeout=10)  # two open seats
        seat = (("authorization", f"Bearer {r.first_seat_token}"),)
        with pytest.raises(grpc.RpcError) as info:
            s.ListChallenges(api.ListChallengesRequest(), metadata=seat, timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_issued_tokens_never_look_like_an_option(arbiter):
    """Player, seat and operator tokens begin with ``nardy_``, never ``-``: `--token TOKEN`
    with a space works on every command line (a token_urlsafe string begins with '-' one
    time in 64, and argparse took it for an option)."""
    tokens = [register(arbiter, f"cli-prefix-{i}") for i in range(3)]
    ch, s = stub(arbiter)
    with ch:
        r = s.CreateMatch(api.CreateMatchRequest(), timeout=10)
    tokens += [r.first_seat_token, r.second_seat_token, arbiter.admin_token]
    assert all(t.startswith("nardy_") and len(t) > 40 for t in tokens), tokens
    out = nardy(arbiter, "challenges", "--token", tokens[0])
    assert out.returncode == 0 and "0 challenges waiting" in out.stderr, out.stderr


def test_the_operator_sets_up_short_nardy_from_the_command_line(arbiter, monkeypatch):
    """`nardy admin create-match` and `create-ladder` take `--variant`, as `nardy challenge`
    and `nardy ladder` do (the operator could set up long nardy only)."""
    monkeypatch.setenv("NARDY_ADMIN_TOKEN", arbiter.admin_token)

    def admin(*args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "NO_COLOR": "1"}
        return subprocess.run(
            [sys.executable, "-m", "clients", "admin", "--server", arbiter.address, *args],
            cwd=ROOT, capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip

    made = admin("create-match", "--variant", "short")
    assert made.returncode == 0, made.stderr
    ch, s = stub(arbiter)
    with ch:
        game = s.GetGame(api.GetGameRequest(game_id=field(made.stdout, "game")), timeout=10)
    assert game.state.options.variant == "short"
    made = admin("create-ladder", "club", "--variant", "short")
    assert made.returncode == 0 and "short nardy" in made.stdout, made.stderr
    # and every option a ladder takes
    extra = ("--time-bank-ms", "5000", "--max-concurrent-games", "4")
    made = admin("create-ladder", "banked", *extra)
    assert made.returncode == 0, made.stderr
    with grpc.insecure_channel(arbiter.address) as ch:
        ladders = ladder_pb2_grpc.LadderServiceStub(ch)
        r = ladders.GetStandings(lpb.GetStandingsRequest(ladder="banked"), timeout=10)
    assert (r.options.time_bank_ms, r.options.max_concurrent_games) == (5000, 4)
    # a bank a match could not have is refused at once (each pairing was refused instead)
    made = admin("create-ladder", "vast", "--time-bank-ms", str(25 * 3600 * 1000))
    assert made.returncode != 0 and "time_bank_ms is 0..86400000" in made.stderr, made.stderr


@pytest.mark.slow
def test_bundled_engines_join_a_servers_ladder_from_the_command_line(arbiter):
    """`nardy engine NAME --ladder L`: ready in the server's ladder while it runs (it took
    a program of one's own, JoinLadder through the SDK). Two engines play the ladder's
    games; an unknown ladder is said in one line."""
    ch = grpc.insecure_channel(arbiter.address)
    ladders = ladder_pb2_grpc.LadderServiceStub(ch)
    admin = (("authorization", f"Bearer {arbiter.admin_token}"),)
    options = lpb.LadderOptions(turn_time_ms=3000, max_games=2)
    ladders.CreateLadder(lpb.CreateLadderRequest(name="club", options=options), metadata=admin)
    empty = nardy(arbiter, "standings", "--ladder", "club")  # (it drew empty boxes)
    assert empty.returncode == 0 and "no bot has joined it yet" in empty.stdout
    engines = []
    try:
        for name in ("eng-a", "eng-b"):
            env = {**os.environ, "NARDY_TOKEN": register(arbiter, name)}
            command = ["engine", "random", "--server", arbiter.address, "--ladder", "club"]
            engines.append(
                subprocess.Popen([sys.executable, "-m", "clients", *command], cwd=ROOT, env=env)
            )
        deadline = time.monotonic() + 120
        while (
            st := ladders.GetStandings(lpb.GetStandingsRequest(ladder="club"))
        ).finished_games < 2:
            assert time.monotonic() < deadline, st
            assert all(e.poll() is None for e in engines)
            time.sleep(0.2)
        assert sorted(row.player.name for row in st.rows) == ["eng-a", "eng-b"]
        table = nardy(arbiter, "standings", "--ladder", "club").stdout  # to a pipe: not cut
        assert "eng-a" in table and "engine" in table and "…" not in table, table
    finally:
        for e in engines:
            e.terminate()
            e.wait(30)
        ch.close()
    token = register(arbiter, "eng-c")
    gone = nardy(arbiter, "engine", "random", "--ladder", "nope", token=token)
    assert gone.returncode == 1 and "no ladder 'nope'" in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr


def test_a_player_registers_itself_from_the_command_line(arbiter):
    """`nardy register NAME`: no operator needed where registration is open (the docs had
    only the operator's `nardy admin register`). The token works at once."""
    made = nardy(arbiter, "register", "cli-self", "--human", "--owner", "me")
    assert made.returncode == 0, made.stderr
    token = field(made.stdout, "token")
    listed = nardy(arbiter, "challenges", token=token)
    assert listed.returncode == 0 and "0 challenges waiting for you" in listed.stderr
    again = nardy(arbiter, "register", "CLI-self")
    assert again.returncode == 1 and "ALREADY_EXISTS" in again.stderr, again.stderr


def test_an_engine_stopped_by_sigterm_leaves_its_ladder(arbiter):
    """`systemctl stop`, `docker stop` and supervisors send SIGTERM: the engine stopped
    without leaving its ladders, which went on pairing it, and it lost every game by
    abandonment. It leaves them now, as on Ctrl-C, and exits 0."""
    ch = grpc.insecure_channel(arbiter.address)
    ladders = ladder_pb2_grpc.LadderServiceStub(ch)
    admin = (("authorization", f"Bearer {arbiter.admin_token}"),)
    options = lpb.LadderOptions(turn_time_ms=3000)
    ladders.CreateLadder(lpb.CreateLadderRequest(name="term", options=options), metadata=admin)

    def ready() -> bool | None:
        rows = ladders.GetStandings(lpb.GetStandingsRequest(ladder="term")).rows
        return next((row.ready for row in rows if row.player.name == "eng-term"), None)

    env = {**os.environ, "NARDY_TOKEN": register(arbiter, "eng-term")}
    command = ["engine", "random", "--server", arbiter.address, "--ladder", "term"]
    engine = subprocess.Popen(
        [sys.executable, "-m", "clients", *command], cwd=ROOT, env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert time.monotonic() < deadline and engine.poll() is None
            time.sleep(0.1)
        engine.terminate()
        assert engine.wait(30) == 0, engine.stderr.read()
        assert ready() is False
    finally:
        engine.kill()
        engine.wait()
        ch.close()


async def test_an_engine_stopped_by_sigterm_plays_its_pair_out(arbiter):
    """A SIGTERM in the middle of a ladder's pair stopped the engine at once: it lost both
    games by abandonment, its opponent won two games it had not played. The engine leaves
    its ladders at once now, plays out the games it has, then exits 0."""
    env = {**os.environ, "NARDY_TOKEN": register(arbiter, "eng-drain")}
    command = ["engine", "random", "--server", arbiter.address, "--ladder", "drain"]

    def slow(turn):  # (a game of a few seconds: the SIGTERM comes in the middle of it)
        time.sleep(0.03)
        return turn.legal[0]

    async with Client(arbiter.address, arbiter.admin_token) as operator:
        await operator.create_ladder("drain", turn_time_ms=5000)
        opponent = Client(arbiter.address)
        await opponent.register("slow-drain")
        await opponent.join_ladder("drain")
        engine = subprocess.Popen(
            [sys.executable, "-m", "clients", *command], cwd=ROOT, env=env, stderr=subprocess.PIPE
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve_games, opponent, slow)
                playing = pb.GAME_STATUS_IN_PROGRESS
                with trio.fail_after(60):
                    while not (await operator.list_games(ladder="drain", status=playing)).games:
                        await trio.sleep(0.05)  # (the ladder's progress, polled)
                engine.terminate()
                assert await trio.to_thread.run_sync(engine.wait, 120) == 0
                nursery.cancel_scope.cancel()
            rows = {r.player.name: r for r in (await operator.standings("drain")).rows}
            mine = rows["eng-drain"]
            assert (mine.games, mine.timeouts, mine.disconnects) == (2, 0, 0), str(mine)
            assert not mine.ready
            assert "finishing the games being played" in engine.stderr.read().decode()
        finally:
            engine.kill()
            engine.wait()
            opponent.close()


@pytest.mark.slow
@pytest.mark.parametrize("joined_by", ["engine", "runner"])
def test_an_engine_whose_arbiter_is_gone_stops_at_once_on_sigterm(tmp_path, joined_by):
    """A SIGTERM lets the games being played finish; an engine whose arbiter is gone
    (a ladder runner killed: its engines are sent SIGTERM) has none to finish, and stops
    at once rather than waiting out --give-up for an arbiter that will not come back;
    so does one that the runner joined to its ladder (it has none to leave: it waited
    for its game forever, an orphan left by every runner killed)."""
    from tests.server.test_recovery import free_port, start_server

    port, admin = free_port(), secrets.token_urlsafe(32)
    server = start_server(port, str(tmp_path / "g.db"), admin_token=admin)
    address = f"127.0.0.1:{port}"
    engines = []
    try:
        ch = grpc.insecure_channel(address)
        ladders = ladder_pb2_grpc.LadderServiceStub(ch)
        md = (("authorization", f"Bearer {admin}"),)
        options = lpb.LadderOptions(turn_time_ms=5000)
        ladders.CreateLadder(lpb.CreateLadderRequest(name="gone", options=options), metadata=md)
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        for name in ("gone-a", "gone-b"):
            token = stub.RegisterPlayer(api.RegisterPlayerRequest(name=name, bot=True)).token
            command = ["engine", "random", "--server", address]
            if joined_by == "engine":
                command += ["--ladder", "gone"]
            else:
                request = lpb.JoinLadderRequest(ladder="gone", ready=True)
                ladders.JoinLadder(request, metadata=(("authorization", f"Bearer {token}"),))
            engines.append(
                subprocess.Popen(
                    [sys.executable, "-m", "clients", *command],
                    cwd=ROOT,
                    env={**os.environ, "NARDY_TOKEN": token},
                    stderr=subprocess.PIPE,
                )
            )
        playing = api.ListGamesRequest(ladder="gone", status=pb.GAME_STATUS_IN_PROGRESS)
        deadline = time.monotonic() + 60
        while not stub.ListGames(playing).games:  # (the ladder's progress, polled)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        ch.close()
        server.kill()
        server.wait()
        engines[0].terminate()
        assert engines[0].wait(30) == 0  # (it waited up to --give-up, 120 s)
    finally:
        for proc in (server, *engines):
            proc.kill()
            proc.wait()
