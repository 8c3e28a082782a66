"""The scenarios: scripted start positions and dice, what each checks, and its hooks.

The opening throw is scripted too: the first die is the engine's, so (2, 1) gives it white
and (1, 2) black. After the scripted dice run out the arbiter's own dice take over.
"""

from __future__ import annotations

import contextlib

import grpc
import trio

from clients.check_engine.judge import (
    ILLEGAL,
    Fail,
    judge_bear_off,
    judge_enter,
    judge_first_double,
    judge_forced,
    judge_hit,
    judge_illegal,
    judge_near_timeout,
    judge_pass,
    judge_resume,
    judge_without_play,
)
from clients.check_engine.model import Run, Scenario
from nardy.client import my_turn, over
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant

ENGINE_WHITE = (2, 1)  # opening throw: first die (the engine's) higher -> engine is white
ENGINE_BLACK = (1, 2)

LONG = variant("long")  # these scenarios are long nardy's
START = LONG.start().text()
# White (the engine) to move with 6-5: each of its checkers on a=0, 1, 2 would land on a
# black point (a=5..8), so the turn has no legal play and the arbiter passes it.
BLOCKED = "w/13,1,1,0,0,-1,-1,-1,-1,0,0,0,-11,0,0,0,0,0,0,0,0,0,0,0"
# White has all 15 home (points 6..1); black has not left its head.
BEAR_OFF = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,3,3,3,2,2,2"
# A middle game where 2-2 has 172 legal plays: an engine that searches must watch its clock.
MIDDLE = "w/5,0,0,1,3,0,0,0,0,0,-1,-3,-9,2,1,1,0,0,-2,0,0,1,0,1"

# Short nardy (RULES.md §9 position text: ``side/24 counts/white bar,black bar``).
SHORT = variant("short")
# White (the engine) on the bar against a five-point board (a=0..4 closed, a=5 open): with
# 6-1 it must enter with the 6 (bar/19) before anything else, then play the 1.
ENTER = "w/-2,-2,-2,-2,-2,0,0,0,0,0,0,5,-5,0,0,0,3,0,6,0,0,0,0,0/1,0"
# White on the bar against a closed board (a=0..5): no move at all, the turn passes with the
# board unchanged. Black (all home, 3 off) then bears off with 6-6, opening its 6 and 5
# points, and white enters with 6-5.
CLOSED = "w/-2,-2,-2,-2,-2,-2,0,0,0,0,0,5,0,0,0,0,3,0,6,0,0,0,0,0/1,0"
# White's last checker on its 14 (a=10) with 3-2: its 12 (a=12) is closed, so the only play
# is 14/11*/9: a hit on black's blot (a=13) in the middle of the turn.
HIT = "w/-12,0,0,0,0,0,0,0,0,0,1,0,-2,-1,0,0,0,0,0,0,0,0,0,0/0,0"


# -- scenario hooks ---------------------------------------------------------------------
async def submit_illegal(run: Run) -> None:
    """Before the engine runs: join as the engine's seat (which starts the game), submit an
    illegal play for its turn, and record the arbiter's answer."""
    seat = run.client.with_token(run.engine_token)
    with trio.move_on_after(run.join_ms / 1000):
        async with contextlib.aclosing(seat.events(run.game_id)) as events:
            async for ev in events:
                if over(ev):
                    break
                if not my_turn(ev):
                    continue
                run.notes["turn_id"] = ev.state.turn_id
                try:
                    await seat.submit(run.game_id, ev.state.turn_id, notation=ILLEGAL)
                    run.notes["refusal"] = None
                except grpc.RpcError as e:
                    run.notes["refusal"] = (e.code(), e.details())
                return
    raise Fail("setup: the engine's turn did not start")


async def kill_before_first_reply(run: Run, index: int, turn_id: int) -> None:
    """The engine has played its first turn: kill it as a crash would."""
    if index == 0:
        await run.kill_engine()
        run.notes["killed_at"] = turn_id


async def relaunch_after_first_reply(run: Run, index: int, turn_id: int) -> None:
    """The checker has played, so the engine's turn is running: relaunch it, with the same
    token, into a game in progress (it starts from a SNAPSHOT)."""
    if index == 0:
        run.launch()


def scenarios() -> list[Scenario]:
    w = ENGINE_WHITE
    return [
        Scenario("first-turn-6-6", START, (*w, 6, 6), judge_first_double),
        Scenario("first-turn-4-4", START, (*w, 4, 4), judge_first_double),
        Scenario("first-turn-3-3", START, (*w, 3, 3), judge_first_double),
        Scenario(
            "black-first-double",
            START,
            (*ENGINE_BLACK, 5, 2, 3, 3),
            judge_first_double,
            engine_color=pb.COLOR_BLACK,
        ),
        Scenario("no-legal-play", BLOCKED, (*w, 6, 5, 1, 2, 3, 1), judge_pass),
        Scenario("forced-play", START, (*w, 6, 5), judge_forced),
        Scenario(
            "bear-off",
            BEAR_OFF,
            (
                *w,
                6,
                5,
                3,
                1,
                4,
                2,
                5,
                2,
                6,
                6,
                2,
                1,
                5,
                3,
                4,
                1,
                3,
                3,
                6,
                2,
                6,
                4,
                3,
                2,
                5,
                5,
                4,
                3,
                2,
                1,
                1,
                1,
                6,
                3,
                5,
                4,
                4,
                4,
                2,
                2,
                6,
                6,
                3,
                1,
                5,
                5,
            ),
            judge_bear_off,
            stop_after=None,
        ),
        Scenario(
            "illegal-play-refused",
            START,
            (*w, 3, 1, 4, 2, 5, 3),
            judge_illegal,
            clock="launch",
            stop_after=2,
            prelude=submit_illegal,
        ),
        Scenario(
            "drop-and-resume",
            START,
            (*w, 3, 1, 4, 2, 5, 3, 6, 1, 4, 1, 5, 2, 6, 2, 3, 2),
            judge_resume,
            clock="launch",
            stop_after=3,
            before_checker_play=kill_before_first_reply,
            after_checker_play=relaunch_after_first_reply,
        ),
        Scenario(
            "no-play-stream",
            START,
            (*w, 3, 1, 4, 2, 5, 3),
            judge_without_play,
            stop_after=2,
            unary_only=True,
        ),
        Scenario("short-enter-from-bar", ENTER, (*w, 6, 1), judge_enter, variant="short"),
        Scenario("short-closed-board", CLOSED, (*w, 6, 5, 6, 6, 6, 5), judge_pass, variant="short"),
        Scenario("short-hit-mid-turn", HIT, (*w, 3, 2), judge_hit, variant="short"),
        Scenario(
            "near-timeout",
            MIDDLE,
            (*w, 2, 2, 3, 1, 1, 1, 6, 4, 5, 5, 4, 2, 3, 3, 6, 5),
            judge_near_timeout,
            clock="tight",
            stop_after=4,
        ),
    ]


def check_setups() -> None:
    """The scripted positions do what the scenarios say (cheap; run by the tests)."""
    blocked = LONG.parse(BLOCKED)
    assert LONG.legal_plays(blocked, (6, 5)) == []
    assert len(LONG.legal_plays(LONG.start(), (6, 5))) == 1
    enter = SHORT.legal_plays(SHORT.parse(ENTER), (6, 1))
    assert enter and all(p.steps[0].src == 25 and p.steps[0].die == 6 for p in enter)
    assert SHORT.legal_plays(SHORT.parse(CLOSED), (6, 5)) == []
    hit = SHORT.legal_plays(SHORT.parse(HIT), (3, 2))
    assert len(hit) == 1 and SHORT.board(hit[0].end).bar == (0, 1)
    try:
        LONG.match_play(LONG.start(), (3, 1), ILLEGAL)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{ILLEGAL} should be illegal")
