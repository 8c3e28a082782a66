"""The one SDK: the blocking SimpleClient is the trio Client run on a background loop, so it
has the same player events, retries, resumes and shutdown handling, and the ladder calls."""

from __future__ import annotations

import random
import signal
import threading

import pytest

from nardy.client import ClientClosed, SimpleClient
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from tests.server.test_recovery import free_port, start_server


def engine(seed: int, on_turn=None):
    rng = random.Random(seed)

    def choose(turn):
        if on_turn is not None:
            on_turn(turn)
        return rng.choice(turn.legal)

    return choose


def run_threads(*targets) -> None:
    errors: list[BaseException] = []

    def guarded(fn):
        try:
            fn()
        except BaseException as e:  # reported in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a blocking client never returned"
    if errors:
        raise errors[0]


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["play", "unary"])
def test_the_blocking_client_rides_out_a_server_restart(tmp_path, transport):
    """SIGTERM mid-game: both blocking seats get SERVER_SHUTDOWN (on their Play streams, or
    their SubscribeGame streams), wait, resume on the restarted server (same port, same
    journal) and finish the game."""
    port, db = free_port(), str(tmp_path / "r.db")
    address = f"127.0.0.1:{port}"
    proc = start_server(port, db)
    midgame = threading.Event()
    resumed = threading.Event()
    try:
        with SimpleClient(address) as admin:
            r = admin.create_match(seed=8, options=pb.GameOptions(auto_play_forced=True))
        finals = {}

        def seat(name, token, seed, on_turn=None):
            def run():
                with SimpleClient(address, token, transport=transport) as c:
                    finals[name] = c.play(r.game_id, engine(seed, on_turn))

            return run

        def pause_on_turn_5(turn):
            if turn.state.turn_id >= 5 and not midgame.is_set():
                midgame.set()
                assert resumed.wait(60)  # the play is sent to the restarted server

        def restart():
            assert midgame.wait(60)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
            procs.append(start_server(port, db))
            resumed.set()

        procs = [proc]
        run_threads(
            seat("a", r.first_seat_token, 1, pause_on_turn_5),
            seat("b", r.second_seat_token, 2, pause_on_turn_5),
            restart,
        )
        assert finals["a"].status == finals["b"].status == pb.GAME_STATUS_FINISHED
        assert finals["a"].result == finals["b"].result
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def test_ladder_calls_and_player_events_from_the_blocking_client(tmp_path):
    with (
        EmbeddedServer(db=str(tmp_path / "l.db")) as srv,
        SimpleClient(srv.address, srv.admin_token) as c,  # the operator creates ladders
    ):
        tokens = {}
        for name in ("alpha", "beta"):
            with SimpleClient(srv.address) as reg:
                tokens[name] = reg.register(name, owner="tests")
        created = c.create_ladder("club", turn_time_ms=2000, max_games=2)
        assert created.created and created.options.max_games == 2
        assert not c.create_ladder("club").created  # idempotent by name

        def bot(name, seed):
            def run():
                with SimpleClient(srv.address, tokens[name]) as me:
                    me.join_ladder("club")
                    me.serve_games(engine(seed), max_games=2)

            return run

        run_threads(bot("alpha", 1), bot("beta", 2))
        table = c.standings("club")
        assert table.finished_games == 2 and table.games_in_progress == 0
        assert {row.player.name for row in table.rows} == {"alpha", "beta"}
        assert sum(row.wins for row in table.rows) == 2
        cells = {(x.player, x.opponent): x for x in c.crosstable("club").cells}
        pair = cells["alpha", "beta"]
        assert pair.pairs_won + pair.pairs_split + pair.pairs_lost == 1
        assert pair.wins + pair.losses == 2

        with (
            SimpleClient(srv.address, tokens["alpha"]) as alpha,
            SimpleClient(srv.address, tokens["beta"]) as beta,
        ):
            challenge = alpha.create_match(
                first=api.SeatSpec(player_name="alpha"), second=api.SeatSpec(player_name="beta")
            )
            assert challenge.challenge
            announced = beta.player_events()
            ev = next(announced)
            assert ev.type == api.PLAYER_EVENT_TYPE_CHALLENGE and ev.opponent.name == "alpha"
            assert beta.accept_challenge(ev.match_id).game_id == challenge.game_id
            ev = next(announced)
            assert ev.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED
            assert ev.game_id == challenge.game_id
            announced.close()


def test_closing_cuts_a_blocking_call_short(tmp_path):
    """close() from another thread ends a blocking stream read with ClientClosed."""
    with EmbeddedServer(db=str(tmp_path / "c.db")) as srv:
        c = SimpleClient(srv.address)
        r = c.create_match()
        stream = c.events(r.game_id)
        assert next(stream).type == pb.EVENT_TYPE_SNAPSHOT  # then nothing: the game waits
        started = threading.Event()
        outcome: list[BaseException] = []

        def read():
            started.set()
            try:
                next(stream)
            except BaseException as e:
                outcome.append(e)

        reader = threading.Thread(target=read)
        reader.start()
        started.wait()
        c.close()
        reader.join(10)
        assert not reader.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], ClientClosed)
        with pytest.raises(ClientClosed):
            c.get_game(r.game_id)
