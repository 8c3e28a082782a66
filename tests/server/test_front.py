"""The front process (``nardy serve --front``, server.front; issue 10 item 5): a real server
with its front, on loopback. A TLS client plays a game through it (health and reflection
pass through); a client cannot forge the front's arrival stamp or peer address; a play
stamped at the front before its deadline but held up before it reaches the core's
Arrivals is not refused for time (the fence); the front and the core stop together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from nardy.client import Client
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.front import ARRIVAL, KEY, PEER, Sends
from tests.server.conftest import the_play_is_made
from tests.server.test_tls import play_a_race, self_signed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TURN_MS = 1500


def _md(token: str, *more: tuple[str, str]):
    return (("authorization", f"Bearer {token}"), *more)


def front_of(srv: EmbeddedServer):
    return srv.arbiter.arrivals.upstream.__self__  # (server.fronted.Front)


async def test_a_tls_client_plays_a_game_through_the_front(tmp_path):
    cert, key = self_signed(tmp_path)
    srv = EmbeddedServer(
        db=str(tmp_path / "f.db"), front=True, tls_cert=str(cert), tls_key=str(key)
    )
    with srv:
        front = front_of(srv).process
        roots = cert.read_bytes()
        async with Client(srv.address, tls=True, root_certificates=roots) as client:
            seats, game_id = await play_a_race(client)
            # a refusal comes back with its status and details
            with pytest.raises(grpc.RpcError) as info:
                await seats[0].call(
                    "SubmitPlay", api.SubmitPlayRequest(game_id=game_id, notation="x")
                )
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION

        creds = grpc.ssl_channel_credentials(roots)
        with grpc.secure_channel(srv.address, creds) as ch:  # health and reflection
            check = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest())
            assert check.status == health_pb2.HealthCheckResponse.SERVING
            answers = reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")])
            )
            names = {s.name for a in answers for s in a.list_services_response.service}
            assert "nardy.v1.ArbiterService" in names
    assert front.returncode is not None  # the front stopped with the server


def _first_turn(stub, game):
    """Both seats subscribe; the mover's token, its first TURN_STARTED and the streams."""
    tokens = (game.first_seat_token, game.second_seat_token)
    streams = [
        stub.SubscribeGame(api.SubscribeGameRequest(game_id=game.game_id), metadata=_md(t))
        for t in tokens
    ]
    while True:
        for token, stream in zip(tokens, streams, strict=True):
            st = next(stream).state
            if st.legal_plays and st.side_to_move == st.your_color and st.turn_id:
                return token, st, streams


def _new_game(stub, srv):
    return stub.CreateMatch(
        api.CreateMatchRequest(seed=7, options=pb.GameOptions(turn_time_ms=TURN_MS)),
        metadata=_md(srv.admin_token),
        timeout=30,
    )


def test_a_client_cannot_forge_the_fronts_stamp_or_peer():
    with EmbeddedServer(front=True, rate_per_s=1.0, rate_burst=3.0) as srv:
        with grpc.insecure_channel(srv.address) as ch:
            stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
            # the rate limit of anonymous callers stays keyed on their real peer
            codes = []
            for n in range(8):
                try:
                    stub.GetGame(
                        api.GetGameRequest(game_id="none"),
                        metadata=((PEER, f"ipv4:10.0.0.{n}:1"), (KEY, "guess")),
                    )
                except grpc.RpcError as e:
                    codes.append(e.code())
            assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes
        # a forged stamp "arrived at the turn's start" is ignored, through the front and
        # straight at the core's socket with a wrong key: the side is charged what it took
        front = front_of(srv)
        for address in (srv.address, f"unix:{front.core_socket}"):
            time.sleep(1.5)  # (the rate limit refills)
            with grpc.insecure_channel(address) as ch:
                stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
                token, st, streams = _first_turn(stub, _new_game(stub, srv))
                forged = repr(time.perf_counter() - 10)
                time.sleep(0.3)  # the bot's thinking
                answer = stub.SubmitPlay(
                    api.SubmitPlayRequest(
                        game_id=st.game_id,
                        turn_id=st.turn_id,
                        end_position=st.legal_plays[0].end_position,
                    ),
                    metadata=_md(token, (ARRIVAL, forged), (KEY, "guess")),
                    timeout=30,
                )
                assert answer.used_ms >= 300
                for stream in streams:
                    stream.cancel()


def test_a_play_stamped_in_time_and_held_up_before_the_core_is_not_refused():
    """The core's transport is held inside the stamp of a play that the front stamped in
    time, until the turn's deadline has passed and the core asks the front's fence; then
    let go. The play is accepted and charged up to the front's stamp."""
    with EmbeddedServer(front=True) as srv:
        arrivals = srv.arbiter.arrivals
        stamp, fence = arrivals.stamp, arrivals.upstream
        reached, fenced, release = threading.Event(), threading.Event(), threading.Event()

        def held_stamp(game_id, at=None, sent=None):  # in the core's transport thread
            if at is not None:
                reached.set()
                assert release.wait(60)  # held there
            return stamp(game_id, at, sent)

        async def watched_fence(game_id, turn_id, before):  # the core asks: a play in flight?
            fenced.set()
            return await fence(game_id, turn_id, before)

        with grpc.insecure_channel(srv.address) as ch:
            stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
            token, st, streams = _first_turn(stub, _new_game(stub, srv))
            arrivals.stamp, arrivals.upstream = held_stamp, watched_fence
            answer = stub.SubmitPlay.future(
                api.SubmitPlayRequest(
                    game_id=st.game_id,
                    turn_id=st.turn_id,
                    end_position=st.legal_plays[0].end_position,
                ),
                metadata=_md(token),
                timeout=60,
            )
            try:
                assert reached.wait(30)  # stamped at the front, held before the core's Arrivals
                assert fenced.wait(30)  # the deadline has passed: the core asks the front
            finally:
                release.set()
            used = answer.result().used_ms  # accepted, not refused for time
            assert used < TURN_MS
            the_play_is_made(streams)


def _serve(tmp_path, *extra: str) -> tuple[subprocess.Popen, int]:
    """``nardy serve --front``; (the core's process, the front's pid) once serving."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nardy",
            "serve",
            "--front",
            "--port",
            "0",
            "--db",
            str(tmp_path / "s.db"),
            *extra,
        ],  # fmt: skip
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NARDY_ADMIN_TOKEN": "t" * 32},
    )
    for line in proc.stderr:
        if "serving nardy.v1" in line:
            break
    children = []
    for task in os.listdir(f"/proc/{proc.pid}/task"):  # (spawned from a worker thread)
        with open(f"/proc/{proc.pid}/task/{task}/children") as f:
            children += map(int, f.read().split())
    (front,) = children
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # (drained)
    return proc, front


def _gone(pid: int, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True  # exited (a zombie until its parent reaps it)
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_the_front_stops_when_the_core_dies_and_the_core_when_the_front_dies(tmp_path):
    core, front = _serve(tmp_path)
    os.kill(core.pid, signal.SIGKILL)
    core.wait(20)
    assert _gone(front)  # its stdin closed: no orphan

    core, front = _serve(tmp_path)
    try:
        os.kill(front, signal.SIGKILL)
        assert core.wait(30) == 2  # the core stops too, and says it failed
    finally:
        core.kill()


def test_the_front_reads_a_seats_turn_from_the_events_first_bytes():
    sends = Sends()
    legal = [pb.LegalPlay(notation="6-5: 24/18 24/19")]
    mine = pb.GameState(
        game_id="g", turn_id=3, side_to_move=pb.COLOR_WHITE, your_color=pb.COLOR_WHITE
    )
    mine.legal_plays.extend(legal)
    theirs = pb.GameState(game_id="g", turn_id=3, side_to_move=pb.COLOR_WHITE)
    for seq, state in ((300, theirs), (0, theirs), (301, mine)):  # (seq 0: not on the wire)
        event = pb.GameEvent(seq=seq, type=pb.EVENT_TYPE_TURN_STARTED, state=state)
        sends.sending(event.SerializeToString())
        assert (sends.sent("g", 3) is None) == (state is theirs)
    first = sends.sent("g", 3)
    sends.sending(
        pb.GameEvent(seq=302, type=pb.EVENT_TYPE_TURN_STARTED, state=mine).SerializeToString()
    )
    assert sends.sent("g", 3) == first and sends.sent("g", 4) is None  # the first send counts
    over = pb.GameEvent(seq=303, type=pb.EVENT_TYPE_GAME_FINISHED, state=pb.GameState(game_id="g"))
    sends.sending(over.SerializeToString())
    assert sends.turns == {}


def test_a_bot_that_does_not_play_behind_the_front_loses_on_time():
    with EmbeddedServer(front=True) as srv, grpc.insecure_channel(srv.address) as ch:
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        game = stub.CreateMatch(
            api.CreateMatchRequest(seed=3, options=pb.GameOptions(turn_time_ms=300)),
            metadata=_md(srv.admin_token),
            timeout=30,
        )
        token, st, streams = _first_turn(stub, game)
        ev = next(streams[0])
        while ev.type != pb.EVENT_TYPE_GAME_FINISHED:
            ev = next(streams[0])
        assert ev.state.result.termination == pb.TERMINATION_TIMEOUT
        for stream in streams:
            stream.cancel()


def test_the_fronts_turn_sends_stay_bounded():
    """The front remembers when it sent each game's current turn, and forgot it only when
    it forwarded the game's end. A game that ends with no stream open (its seats left, then
    one resigned) was remembered for good: a stranger's games leaked ~270 bytes each in the
    front, hundreds a second. The newest turns are kept, the oldest forgotten."""
    sends = Sends(most=10)
    for n in range(50):
        state = pb.GameState(
            game_id=f"g{n}",
            turn_id=1,
            side_to_move=pb.COLOR_WHITE,
            your_color=pb.COLOR_WHITE,
            legal_plays=[pb.LegalPlay(notation="24/18")],
        )
        sends.sending(
            pb.GameEvent(seq=2, type=pb.EVENT_TYPE_TURN_STARTED, state=state).SerializeToString()
        )
    assert len(sends.turns) == 10
    assert sends.sent("g49", 1) is not None and sends.sent("g0", 1) is None
