"""`nardy play` offers the analysis once a game is over (engines/analysis.py): each side's
error rate and the marked plays, judged by the network for long nardy; the next game of
a match waits while the person reads."""

from __future__ import annotations

from clients.analyse import brief
from clients.board import state_for
from engines.analysis import GameAnalysis, PlayAnalysis, SideSummary
from nardy import Color
from nardy.variant import variant
from tests.cli.conftest import finish, spawn

# White on its points 6, 5, 4 and 3 (eleven off); black has not left its head.
HOME4 = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,1,1,1,1,0,0"


def test_analyse_after_the_game():
    # the scripted dice: white 3-1, black 2-1, white 5-4, black 1-2, white 3-3 (forced)
    child = spawn(
        "play", "--engine", "random", "--colour", "white", "--dice", "3,1,2,1,5,4,1,2,3,3",
        "--start", HOME4, "--name", "tester", "--points", "3",
    )  # fmt: skip
    child.expect("Your turn: 3-1")
    child.sendline("analyse")
    child.expect("Analysis is offered once the game is over")
    child.sendline("6/3 3/2")
    child.expect("Your turn: 5-4")
    child.sendline("5/off 4/off")
    child.expect(r"You win by mars \(2 points\)")
    child.expect("Type analyse for each play's equity loss against the best play")
    child.sendline("analyse")
    child.expect(r"Game 1 \(long nardy\), judge network at 0 ply \(money equity in points")
    child.expect(r"white tester: 2 plays judged, error rate \d+\.\d")
    child.expect("black random: ")
    child.expect("Game 2 waits: press Enter to start it.")  # no longer in 15 s
    child.sendline("")
    child.expect("Game 2 started")
    child.sendline("quit")
    child.expect("Leave now?")
    child.sendline("y")
    assert finish(child) == 0


def test_the_terminal_brief_shows_the_opponents_plays_in_the_persons_numbers():
    """In `nardy play` the game shows the opponent's plays in the person's numbers; the
    analysis after it did too late (in the mover's own): they are turned the same way."""
    blunder = PlayAnalysis(
        turn=4, side=Color.BLACK, dice=(5, 1), played="24/19 19/18", best="24/18",
        equity=-0.5, best_equity=-0.1, loss=0.4, mark="??", choices=3,
    )  # fmt: skip
    sides = {Color.WHITE: SideSummary("tester", 1), Color.BLACK: SideSummary("greedy", 1)}
    g = GameAnalysis(1, "long", "network", 0, True, 10, [blunder], sides)
    lines = brief(g, Color.WHITE, state_for(variant("long").start()))
    assert "  marked plays (in your point numbers):" in lines
    assert "    ?? turn 4 greedy 5-1: 12/7 7/6 (best 12/6) -0.400" in lines
    assert "    ?? turn 4 greedy 5-1: 24/19 19/18 (best 24/18) -0.400" in brief(g, Color.WHITE)
