"""The bundled engines: legal choices in varied positions, and whole games over real gRPC
with each engine running as its own ``nardy engine`` process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import trio

from engines.evaluate import (
    POINTS,
    Values,
    estimates,
    evaluate,
    match_values,
    values_for,
)
from engines.expectimax import LEVELS, ROLLS, ExpectimaxEngine
from engines.neural import LEVELS as NETWORK_LEVELS
from engines.registry import make_engine, names
from nardy import Color, Position, legal_plays, result
from nardy.client import Client
from nardy.v1 import game_pb2 as pb

START = Position.start()
# white: one checker on 5, fourteen on 3 (RULES.md §7 bear-off example)
BEAR_OFF = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,1,0,14,0,0")
# a middle game position reached by play (both sides spread out)
MIDDLE = Position.parse("w/8,0,0,1,1,1,2,0,0,1,0,0,-7,0,0,0,-1,-1,-1,1,-2,-1,0,-2")
# both sides in their homes: a bear-off race, black to move
RACE = Position.parse("b/0,0,0,0,0,0,-3,-3,-3,-2,-2,-2,0,0,0,0,0,0,2,3,3,3,2,1")


def engines_under_test():
    out = [("random", None), ("greedy", None)]
    out += [("expectimax", level) for level in sorted(LEVELS)]
    out += [("network", level) for level in sorted(NETWORK_LEVELS)]
    return out


CASES = [
    ("start 6-5", START, (6, 5)),
    ("start 3-1", START, (3, 1)),
    ("first-turn 6-6", START, (6, 6)),
    ("first-turn 3-3", START, (3, 3)),
    ("first-turn 4-4", START, (4, 4)),
    (
        "black first-turn 4-4",
        Position.parse("b/14,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,1,0,0,0"),
        (4, 4),
    ),
    ("bear-off 6-2", BEAR_OFF, (6, 2)),
    ("bear-off 1-1", BEAR_OFF, (1, 1)),
    ("middle 5-2", MIDDLE, (5, 2)),
    ("middle 2-2", MIDDLE, (2, 2)),
    ("race 6-4", RACE, (6, 4)),
]


@pytest.mark.parametrize("name,level", engines_under_test())
@pytest.mark.parametrize("label,position,dice", CASES, ids=[c[0] for c in CASES])
def test_engine_returns_a_given_legal_play(name, level, label, position, dice):
    plays = legal_plays(position, dice)
    assert plays, label
    engine = make_engine(name, level=level, seed=7)
    play = engine.choose(position, dice, plays, time_left_ms=20_000, match=(3, 0, 0))
    assert any(play is p for p in plays)


@pytest.mark.parametrize("name", names("long"))
def test_forced_single_play_and_no_play(name):
    plays = legal_plays(START, (6, 5))
    assert len(plays) == 1  # 24/13 only (RULES.md §7)
    engine = make_engine(name, seed=1)
    assert engine.choose(START, (6, 5), plays) is plays[0]
    with pytest.raises(ValueError):
        engine.choose(START, (6, 5), [])


def test_random_engine_is_seedable():
    plays = legal_plays(MIDDLE, (5, 2))
    a = [make_engine("random", seed=3).choose(MIDDLE, (5, 2), plays) for _ in range(5)]
    b = [make_engine("random", seed=3).choose(MIDDLE, (5, 2), plays) for _ in range(5)]
    assert a == b


def test_rolls_cover_the_dice():
    assert len(ROLLS) == 21
    assert abs(sum(w for _, w in ROLLS) - 1) < 1e-12


def test_expectimax_falls_back_to_greedy_when_short_of_time():
    plays = legal_plays(MIDDLE, (2, 2))
    assert len(plays) > 3
    engine = ExpectimaxEngine()
    greedy = make_engine("greedy")
    play = engine.choose(MIDDLE, (2, 2), plays, time_left_ms=30)
    assert play is greedy.choose(MIDDLE, (2, 2), plays)
    assert engine.timeouts == 1


def test_expectimax_wins_at_once_in_the_bear_off():
    # white's last two checkers on its 1 point, 2-1: bearing both off wins
    pos = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,2")
    plays = legal_plays(pos, (2, 1))
    for name in ("greedy", "expectimax"):
        play = make_engine(name).choose(pos, (2, 1), plays)
        assert result(play.end) is not None and result(play.end).winner is Color.WHITE


def test_evaluation_is_antisymmetric_and_bounded():
    for pos in (START, MIDDLE, RACE, BEAR_OFF):
        w = evaluate(pos, Color.WHITE)
        b = evaluate(pos, Color.BLACK)
        assert abs(w + b) < 1e-9
        assert -2 <= w <= 2
        p, mw, ml = estimates(pos, Color.WHITE)
        assert 0 <= p <= 1 and 0 <= mw <= 1 and 0 <= ml <= 1
    # the side on roll at the start is a little better off
    assert evaluate(START, Color.WHITE) > 0


def test_match_values():
    assert values_for(None) == POINTS
    one = match_values(1, 0, 0)
    assert one.win == one.win_mars and one.loss == one.loss_mars  # mars is worth nothing
    m = match_values(5, 0, 0)
    assert m.win_mars > m.win > 0 > m.loss > m.loss_mars
    post = match_values(5, 4, 0)  # one point wins the match: no extra for a mars
    assert abs(post.win_mars - post.win) < 1e-9
    assert isinstance(values_for((3, 1, 1)), Values)


def test_mars_danger_is_seen():
    # white far ahead, black has nothing off and checkers far from home
    pos = Position.parse("b/0,0,0,0,-5,0,0,0,0,0,0,0,-10,0,0,0,0,0,0,0,0,3,6,6")
    p, mw, _ = estimates(pos, Color.WHITE)
    assert p > 0.9 and mw > 0.5
    assert evaluate(pos, Color.WHITE) > evaluate(pos, Color.WHITE, match_values(1, 0, 0))


# -- whole games over gRPC, one process per engine ----------------------------------------

TURN_MS = 20_000
GAME_TIMEOUT_S = 180  # generous: a loaded 2-core machine runs expectimax games slowly


def launch(name: str, address: str, token: str) -> subprocess.Popen:
    env = {**os.environ, "NARDY_SERVER": address, "NARDY_TOKEN": token}
    return subprocess.Popen(
        [sys.executable, "-m", "clients", "engine", name, "--max-games", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait(proc: subprocess.Popen, timeout: float) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return -9, err.decode(errors="replace")
    return proc.returncode, err.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.parametrize(
    "first,second,seed",
    [
        ("random", "greedy", 1),
        ("greedy", "expectimax", 2),
        ("random", "expectimax", 3),
        ("network", "greedy", 4),
    ],
)
async def test_engines_play_a_game_over_grpc(arbiter, first, second, seed):
    async with Client(arbiter.address) as client:
        r = await client.create_match(
            target_points=1,
            seed=seed,
            options=pb.GameOptions(turn_time_ms=TURN_MS, auto_play_forced=True),
        )
        procs = [
            launch(first, arbiter.address, r.first_seat_token),
            launch(second, arbiter.address, r.second_seat_token),
        ]
        outcomes = {}

        async def run(name, p):
            outcomes[name] = await trio.to_thread.run_sync(wait, p, GAME_TIMEOUT_S)

        async with trio.open_nursery() as nursery:
            for name, p in zip((first, second), procs, strict=True):
                nursery.start_soon(run, name, p)
        for name, (code, err) in outcomes.items():
            assert code == 0, err[-2000:]
            assert f"INFO [{name}]" in err  # logs at INFO with the engine name
        state = (await client.get_game(r.game_id)).state
        assert state.status == pb.GAME_STATUS_FINISHED
        assert state.result.termination == pb.TERMINATION_NORMAL
        pos = Position.parse(state.position)
        assert pos.winner is not None
        assert state.result.points == (1 if pos.borne_off(pos.winner.opponent) else 2)


def test_cli_unknown_engine_exits_2():
    proc = subprocess.run(
        [sys.executable, "-m", "clients", "engine", "nosuch", "--max-games", "1"],
        env={**os.environ, "NARDY_SERVER": "127.0.0.1:1", "NARDY_TOKEN": "x"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "unknown engine 'nosuch'" in proc.stderr
    assert "expectimax" in proc.stderr


def test_cli_max_games_at_once_below_one_exits_2():
    proc = subprocess.run(
        [sys.executable, "-m", "clients", "engine", "random", "--accept-challenges",
         "--max-games-at-once", "0"],
        env={**os.environ, "NARDY_SERVER": "127.0.0.1:1", "NARDY_TOKEN": "x"},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--max-games-at-once is 1 or more" in proc.stderr


@pytest.mark.parametrize("name", ["random", "greedy", "expectimax", "network"])
def test_an_engine_states_what_it_accepts_challenges_for(name):
    """The SDK's function of a bundled engine states its variants (the registry's) and its
    turn time floor, which nardy engine --accept-challenges consents with."""
    from engines.registry import ENGINES, sdk_adapter
    from nardy.client import Consent

    fn = sdk_adapter(make_engine(name))
    consent = Consent().stated(fn)
    assert consent.variants == ENGINES[name].variants
    assert consent.min_turn_time_ms == 1000


def test_an_engine_plays_games_of_both_variants_at_once():
    """An engine in a long and a short ladder plays games of both at once, in worker
    threads side by side: the one engine was set to the rules of the game it was called
    for last, and chose with the other game's (AttributeError, TypeError: the first legal
    play made instead, on about one turn in ten)."""
    from engines.registry import sdk_adapter
    from nardy.client import TurnInfo
    from nardy.variant import variant
    from nardy.wire import legal_pb

    fn = sdk_adapter(make_engine("greedy", variant_name="long"))
    dice = (6, 3)
    turns = []
    middle = "w/10,0,0,0,0,0,1,1,1,1,1,0,-15,0,0,0,0,0,0,0,0,0,0,0"  # (a choice to make)
    for name, text in (("long", middle), ("short", "")):
        rules = variant(name)
        start = rules.parse(text) if text else rules.start()
        assert len(rules.legal_plays(start, dice)) > 1
        state = pb.GameState(
            options=pb.GameOptions(variant=name),
            position=start.text(),
            dice=dice,
            side_to_move=pb.COLOR_WHITE,
            your_color=pb.COLOR_WHITE,
            legal_plays=[legal_pb(p) for p in rules.legal_plays(start, dice)],
        )
        turns.append(TurnInfo(state))
    answers: list[str] = []
    errors: list[BaseException] = []

    def play(turn: TurnInfo) -> None:
        offered = {lp.end_position for lp in turn.legal}
        for _ in range(300):
            try:
                answer = fn(turn)
            except Exception as e:  # (the SDK would play the first legal play instead)
                errors.append(e)
                return
            assert answer.end_position in offered
            answers.append(answer.end_position)

    threads = [threading.Thread(target=play, args=(turn,)) for turn in turns]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (threads switching often, as under load)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == [] and len(answers) == 600
