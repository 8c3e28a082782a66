"""Property tests of the short nardy rules (hypothesis), citing RULES.md §8-9, §3.6-3.7, §4.

Random games are played from the start with random dice and a random legal play each turn
until a side has borne off all 15; a game is drawn as one seed (shrinking a game is
pointless), and every assertion message names the position text and dice, which reproduce
a failure on their own. Random valid positions come from ``tests/short/naive.py``.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from nardy.game import Color
from nardy.short.movegen import legal_plays
from nardy.short.position import BAR, CHECKERS, OFF, Position
from nardy.short.turn import match_play

from .naive import KINDS, random_position

MAX_TURNS = 2000  # a random game takes a few hundred turns; this only guards against a hang

GAMES = settings(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
SEEDS = st.integers(0, 2**32 - 1)
DICE = st.tuples(st.integers(1, 6), st.integers(1, 6))
POSITIONS = st.builds(random_position, st.randoms(use_true_random=False), st.sampled_from(KINDS))


def game(seed: int):
    """Yield ``(position, dice, legal plays)`` for every turn of a random game."""
    rng = random.Random(seed)
    pos = Position.start()
    for _ in range(MAX_TURNS):
        if pos.winner is not None:
            return
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        plays = legal_plays(pos, dice)
        yield pos, dice, plays
        pos = rng.choice(plays).end if plays else pos.passed()
    raise AssertionError(f"game {seed} did not end in {MAX_TURNS} turns")


def sample(plays: list, n: int = 8) -> list:
    """About ``n`` plays spread over the list (doubles can have hundreds)."""
    return plays[:: max(1, len(plays) // n)]


def mine(pos: Position, color: Color) -> list[int]:
    """``color``'s checkers by its own point: 0 off, 1..24, 25 the bar (§9 coordinates)."""
    own = pos.board[::-1] if color is Color.WHITE else [-c for c in pos.board]
    return [pos.borne_off(color), *(c if c > 0 else 0 for c in own), pos.on_bar(color)]


def check_play(pos: Position, dice: tuple[int, int], plays) -> None:
    """Replay every play's steps on the board, checking each against §8 and §4."""
    where = f"{pos.text()} dice {dice}"
    mover, opp = pos.turn, pos.turn.opponent
    assert len({p.end for p in plays}) == len(plays), f"{where}: repeated end (§3.7)"
    allowed = Counter([dice[0]] * 4 if dice[0] == dice[1] else dice)
    before = mine(pos, mover), mine(pos, opp)
    for play in plays:
        at = f"{where} play {play.notation()} -> {play.end.text()}"
        end = play.end
        assert end.turn is opp, at
        m, o = list(before[0]), list(before[1])  # o by the opponent's own points
        for step in play.steps:
            assert m[step.src] > 0, f"{at}: no checker on {step.src}"
            assert step.src == BAR or m[BAR] == 0, f"{at}: moved with a checker on the bar"
            if step.dst == OFF:
                assert not any(m[7:]), f"{at}: bore off with checkers outside home (§4.1)"
                assert step.die == step.src or (
                    step.die > step.src and not any(m[step.src + 1 : 7])
                ), f"{at}: {step} breaks §4.2-4.4"
            else:
                assert step.src - step.dst == step.die, at
                theirs = o[25 - step.dst]  # the mover's point p is the opponent's 25 - p
                assert theirs <= 1, f"{at}: {step} lands on a closed point (§8)"
                assert step.hit == (theirs == 1), f"{at}: {step} hit flag"
                if theirs:
                    o[25 - step.dst] -= 1
                    o[BAR] += 1
            m[step.src] -= 1
            m[step.dst] += 1
        assert m == mine(end, mover) and o == mine(end, opp), f"{at}: steps do not replay"
        # conservation, bar and off included; nothing of the opponent's is borne off
        for color in Color:
            assert sum(mine(end, color)) == CHECKERS, at
        assert end.borne_off(opp) == pos.borne_off(opp), at
        assert end.on_bar(opp) - pos.on_bar(opp) == sum(s.hit for s in play.steps), at
        used = Counter(s.die for s in play.steps)
        assert not used - allowed, f"{at}: dice used {dict(used)}"
        assert Position.parse(end.text()) == end, at


def check_max_dice(pos: Position, dice: tuple[int, int], plays) -> None:
    """§3.6 (with §4.6): all plays use the most dice any play can, a play that ends the
    game counting the dice it really played; one die alone must be the larger when it can
    be played."""
    where = f"{pos.text()} dice {dice}"
    if not plays:
        return
    lengths = {len(p.steps) for p in plays}
    assert len(lengths) == 1, f"{where}: plays of different lengths {lengths}"
    most = max(lengths)
    assert most <= (4 if dice[0] == dice[1] else 2), where
    if dice[0] != dice[1] and most == 1:
        assert len({p.steps[0].die for p in plays}) == 1, f"{where}: mixed single dice"


def check_no_shared_points(pos: Position) -> None:
    """§8/§9: a point holds one side's checkers: the text cannot say otherwise, and the
    counts add up to 15 per side with the bar and borne off."""
    for color in Color:
        assert sum(mine(pos, color)) == CHECKERS, pos.text()


@pytest.mark.slow
@settings(GAMES, max_examples=15)
@given(seed=SEEDS)
def test_random_games_invariants(seed):
    """§8, §4, §3.7: steps replay legally with hits to the bar; checkers are conserved."""
    for pos, dice, plays in game(seed):
        assert Position.parse(pos.text()) == pos
        check_play(pos, dice, plays)


@settings(GAMES, max_examples=40)
@given(seed=SEEDS)
def test_random_games_play_maximal_dice(seed):
    """§3.6: must play as many dice as possible; the larger die when only one."""
    for pos, dice, plays in game(seed):
        check_max_dice(pos, dice, plays)


@pytest.mark.slow
@settings(GAMES, max_examples=5)
@given(seed=SEEDS)
def test_random_games_notation_round_trip(seed):
    """§9: every play's notation, with or without its ``*`` marks, reads back as the play."""
    for pos, dice, plays in game(seed):
        for play in sample(plays):
            text = play.notation()
            assert match_play(pos, dice, text).end == play.end, f"{pos.text()} {dice} {text}"
            bare = text.replace("*", "")
            assert match_play(pos, dice, bare).end == play.end, f"{pos.text()} {dice} {bare}"
        if not plays:
            assert match_play(pos, dice, "-").end == pos.passed()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(pos=POSITIONS, dice=DICE)
def test_random_valid_positions_invariants(pos, dice):
    """§8, §3.6, §4 on random valid positions: bar, bear-off, contact."""
    check_no_shared_points(pos)
    plays = legal_plays(pos, dice)
    check_play(pos, dice, plays)
    check_max_dice(pos, dice, plays)
    for play in plays:
        check_no_shared_points(play.end)


@settings(max_examples=150, deadline=None)
@given(pos=POSITIONS)
def test_position_text_round_trip(pos):
    """§9: text -> position -> text is the identity, and so is position -> text -> position."""
    text = pos.text()
    assert Position.parse(text) == pos
    assert Position.parse(text).text() == text
    assert Position.parse(f"  {text.replace(',', ' , ')} ") == pos


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(pos=POSITIONS, dice=DICE)
def test_random_valid_positions_notation_round_trip(pos, dice):
    """§9: notation round trip on random valid positions (bar entries, hits, bear-off)."""
    for play in sample(legal_plays(pos, dice)):
        assert match_play(pos, dice, play.notation()).end == play.end, play.notation()
