"""`nardy play` as a person plays it: a pseudo-terminal, the client's own arbiter and a real
engine process. Scripted dice (``--dice``) and start positions (``--start``) make the games
short and the same on every run; the engine's choices do not matter to the checks.
"""

from __future__ import annotations

import pytest
import trio

from nardy.client import Client
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from tests.cli.conftest import Bots, create_match, finish, get_game, spawn
from tests.relay import Proxy

# White on its points 6, 5, 4 and 3 (eleven off); black has not left its head.
HOME4 = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,1,1,1,1,0,0"
# White: 14 on the head and one on its 21 (not a first turn); black on its head.
HEAD14 = "w/14,0,0,1,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"
BOLD = r"(?:\x1b\[[0-9;]*m)*"  # style codes a live screen may put inside a line


@pytest.mark.slow
def test_whole_match_step_by_step_undo_hint_forced_and_next_games():
    # --colour white gives the person white; the scripted dice: white 3-1, black 2-1, white 5-4,
    # black 1-2, white 3-3 (forced: the last two checkers off); later games use fair dice.
    child = spawn(
        "play",
        "--engine", "random",
        "--colour", "white",
        "--points", "3",
        "--dice", "3,1,2,1,5,4,1,2,3,3",
        "--start", HOME4,
        "--name", "tester",
        "--turn-time-ms", "5000",  # see below: a resignation between turns can wait for the clock
    )  # fmt: skip
    child.expect("Game 1 started: you play white, random plays black")
    child.expect("Your turn: 3-1")
    # the board: point numbers from the person's side, head marked, pips and counts
    child.expect(r"13  14  15  16  17  18     19  20  21  22  23  24")
    child.expect("pips  18  off 11")
    # choose a checker: its legal targets are shown
    child.sendline("6")
    child.expect(r"From 6: 5 \(1\), 3 \(3\), 2 \([13]\+[13]\)\. Type a target\.")
    child.sendline("3")
    child.expect("Moved 6/3; dice left 1")
    child.sendline("undo")
    child.expect("Took back 6/3")
    child.sendline("6/5")
    child.expect("Moved 6/5; dice left 3")
    child.sendline("")  # Enter on a play begun: what it still lacks
    child.expect("Not yet: ")
    child.sendline("5/2")
    child.expect("Moved 5/2. The play is complete")
    child.sendline("done")
    child.expect("You played 3-1: 6/3 3/2")  # the recorded play, in canonical steps
    child.expect("random played 2-1")
    child.expect("Your turn: 5-4")
    child.sendline("hint")
    child.expect(r"The network engine's best of \d+ legal plays \(equity")
    child.expect(r"  1\. \S.* [+-]\d\.\d{3}")  # ranked, with its value
    child.sendline("hint all")
    child.expect(r"\d+ legal plays:")
    child.sendline("5/off 4/off")  # a whole play: sent at once
    child.expect("You played 5-4: 5/off 4/off")
    child.expect("random played 1-2")
    child.expect(r"Your roll 3-3 has one legal play: 3/off 2/off \(played for you\)")
    child.expect(r"You win by mars \(2 points\)")
    child.expect("Match to 3: you 2, random 0")
    child.expect("Game 2 starts in")
    child.sendline("")
    child.expect("Game 2 started: you play black, random plays white")
    # Resigning while the arbiter is between two turns is not noticed until the next turn's
    # clock runs out (server/session.py, reported); the short clock keeps that wait short.
    child.sendline("resign")
    child.expect(r"Resign game 2\? It counts as a loss of 2 points \(mars\)")
    child.sendline("y")
    child.expect(r"random wins by mars \(2 points\): you resigned")
    child.expect("Match to 3: you 2, random 2")
    child.expect("Game 3 starts in")
    child.sendline("")
    child.expect("Game 3 started: you play white")
    child.sendline("resign")
    child.sendline("y")
    child.expect(r"random wins by mars \(2 points\): you resigned")
    child.expect("Match to 3: you 2, random 4 - random wins the match")
    child.expect("The match is over. Press Enter to leave.")
    child.sendline("")
    assert finish(child) == 0


def test_a_play_refused_as_written_names_the_order_that_is_legal():
    """RULES §3.5, §7: the six-point rule is judged after each step, so `24/19 14/13` is
    refused (its first step makes 19..14) where `14/13 24/19`, the same end, is legal. The
    person was told only the rule."""
    child = spawn(
        "play", "--engine", "random", "--colour", "white", "--dice", "5,1",
        "--start", "w/10,0,0,0,0,0,1,1,1,1,1,0,-15,0,0,0,0,0,0,0,0,0,0,0",
    )  # fmt: skip
    child.expect("Your turn: 5-1")
    child.sendline("24/19 14/13")
    child.expect(r"Not allowed: 24/19: six-point rule \(RULES §3.5\)")
    child.expect("In another order it is legal: 14/13 24/19")
    child.sendline("14/13 24/19")
    child.expect("You played 5-1: ")
    child.sendline("resign")
    child.sendline("y")
    child.expect("random wins")
    child.expect("Press Enter to leave")
    child.sendline("")
    assert finish(child) == 0


def test_illegal_step_refused_with_reason_then_resign():
    child = spawn(
        "play", "--engine", "random", "--colour", "white", "--dice", "3,1",
        "--start", HEAD14, "--name", "tester",
    )  # fmt: skip
    child.expect("Your turn: 3-1")
    child.sendline("24/21")
    child.expect("Moved 24/21; dice left 1")
    child.sendline("24/23")
    child.expect(
        r"Not allowed: 24/23: head rule \(RULES §3.4\): only one checker may leave the head"
    )
    child.sendline("13")
    child.expect("Nothing can move from 13: .*no checker of yours on point 13")
    child.sendline("resign")
    child.expect(r"Resign game 1\?")
    child.sendline("no")
    child.expect("Not resigning")
    child.sendline("undo")
    child.expect("Took back 24/21")
    child.sendline("resign")
    child.sendline("y")
    child.expect(r"random wins by mars \(2 points\): you resigned")
    child.expect("Press Enter to leave")
    child.sendline("")
    assert finish(child) == 0


@pytest.mark.slow
def test_game_lost_on_time_with_the_clock_counting_down():
    child = spawn(
        "play", "--engine", "random", "--colour", "white", "--dice", "3,1",
        "--start", HEAD14, "--turn-time-ms", "3000",
    )  # fmt: skip
    child.expect("Your turn: 3-1")
    child.expect(f"clock {BOLD}0:02")
    child.expect(f"clock {BOLD}0:01")
    child.expect(r"random wins by mars \(2 points\): you ran out of time")
    child.expect("Press Enter to leave")
    child.sendline("")
    assert finish(child) == 0


def test_remote_game_resumes_after_a_lost_connection(arbiter):
    """`nardy play --server --token` on an arbiter started here, through a relay that drops
    every connection in the middle of the person's turn."""
    proxy = Proxy(arbiter.port)
    r = create_match(
        arbiter.address,
        options=pb.GameOptions(turn_time_ms=30_000),
        first=api.SeatSpec(display_name="tester"),
        second=api.SeatSpec(display_name="bot"),
        start_position=HEAD14,
        dice=[2, 1, 3, 1, 2, 1, 5, 3],
    )
    bots = Bots(arbiter.address, r, seats=("second",)).start()
    child = spawn("play", "--server", proxy.address, f"--token={r.first_seat_token}")
    try:
        child.expect("Game 1 started: you play white, bot plays black")
        child.expect("Your turn: 3-1")
        child.sendline("24/21")
        child.expect("Moved 24/21; dice left 1")
        proxy.cut()
        child.expect("Connection lost")
        child.expect(r"Connection back: game resumed after event \d+")
        child.sendline("21/20")  # the step taken before the drop is still there
        child.expect("Moved 21/20. The play is complete")
        child.sendline("")
        child.expect("You played 3-1: 24/21 21/20")
        child.expect("bot played 2-1")
        child.expect("Your turn: 5-3")  # resign while the arbiter waits for this play
        child.sendline("resign")
        child.sendline("y")
        child.expect(r"bot wins by mars \(2 points\): you resigned")
        child.sendline("")
        assert finish(child) == 0
        bots.join()
    finally:
        proxy.close()


def test_a_person_adds_a_seed_of_their_own_to_the_dice(arbiter):
    """Provably fair dice for people too: `nardy play` adds a random client seed of the
    person's to the game's dice, as the engines do (it sent none: the dice then rested on the
    server's word alone for the person). The bot here adds none."""
    r = create_match(arbiter.address, options=pb.GameOptions(turn_time_ms=30_000))
    bots = Bots(arbiter.address, r, seats=("second",)).start()
    child = spawn("play", "--server", arbiter.address, f"--token={r.first_seat_token}")
    # (the board's title says whom and on what terms, not the address alone)
    child.expect(f"nardy - you vs player 2 - one game - 0:30 per turn - {arbiter.address}")
    child.expect(r"Your turn: \d-\d")
    child.sendline("resign")
    child.sendline("y")
    child.expect("you resigned")
    child.sendline("")
    assert finish(child) == 0
    bots.join()
    seeds = get_game(arbiter.address, r.game_id).state.client_seeds
    assert len(seeds[0]) == 16 and int(seeds[0], 16) >= 0 and seeds[1] == "", seeds


def test_remote_with_a_bad_token_says_so(arbiter):
    child = spawn("play", "--server", arbiter.address, "--token", "not-a-token")
    child.expect(r"nardy play: the arbiter at \S+ does not accept this token \(unknown token\)")
    assert finish(child) == 1
    assert "Traceback" not in child.before


# Short nardy (RULES.md §9): white (the person) on the bar against a five-point board.
ENTER5 = "w/-2,-2,-2,-2,-2,0,0,0,0,0,0,5,-5,0,0,0,3,0,6,0,0,0,0,0/1,0"


@pytest.mark.slow
def test_short_nardy_enter_from_the_bar_step_by_step():
    """§8: a checker on the bar enters before anything else; with a=0..4 closed only the 6
    enters. The board shows the bar; `bar` chooses the checker there."""
    child = spawn(
        "play",
        "--variant", "short",
        "--engine", "random",
        "--colour", "white",
        "--dice", "6,1",
        "--start", ENTER5,
        "--name", "tester",
        "--turn-time-ms", "30000",
    )  # fmt: skip
    child.expect("Your turn: 6-1")
    child.expect("bar 1")
    child.expect(r"Move from: bar\.")
    # the hint is the network's; analyse judges with gnubg, and the hint says so
    child.sendline("hint")
    child.expect(r"analyse judges the game's plays with gnubg, which may differ")
    child.sendline("")
    child.sendline("8/7")
    child.expect(r"Not allowed: .*")
    child.sendline("bar")
    child.expect(r"From bar: 19 \(6\)")
    child.sendline("19")
    child.expect("Moved bar/19; dice left 1")
    child.sendline("8/7")
    child.expect("Moved 8/7. The play is complete")
    child.sendline("done")
    child.expect("You played 6-1: bar/19 8/7")
    child.expect("Your turn: ")  # after random's turn (fair dice from here on)
    child.sendline("resign")
    child.expect(r"It counts as a loss of 2 points \(gammon\)")  # §8: nothing borne off
    child.sendline("y")
    child.expect(r"random wins by gammon \(2 points\): you resigned")
    child.expect("Press Enter to leave")
    child.sendline("")
    assert finish(child) == 0


@pytest.mark.parametrize("by_id", [False, True])
def test_joining_a_match_after_its_first_game_says_the_score(arbiter, by_id):
    """A person who comes to a match whose earlier game ended without them (resigned, or
    lost on the clock while away) is told the score first: nothing said so. Named by its
    first game's id (``--game``, the command that started the match, run again) the
    person joins the game being played: they were shown game 1's last board while game
    2's clock ran."""
    r = create_match(arbiter.address, target_points=3, options=pb.GameOptions(turn_time_ms=30_000))

    async def lose_the_first_game() -> None:
        async with Client(arbiter.address) as client:
            me, other = (client.with_token(t) for t in (r.first_seat_token, r.second_seat_token))
            async with trio.open_nursery() as nursery:

                async def follow() -> None:
                    async for _ in other.events(r.game_id):
                        pass

                nursery.start_soon(follow)
                async for ev in me.events(r.game_id):
                    if ev.state.status == pb.GAME_STATUS_IN_PROGRESS:
                        await me.resign(r.game_id)  # nothing borne off: a mars, 2 points
                        break
                nursery.cancel_scope.cancel()

    trio.run(lose_the_first_game)
    game = ["--game", r.game_id] if by_id else []
    child = spawn("play", "--server", arbiter.address, f"--token={r.first_seat_token}", *game)
    child.expect(r"Game 2 of the match\. Match to 3: you 0, player 2 2\.", timeout=10)
    child.sendline("quit")
    child.sendline("y")
    assert finish(child) == 0
