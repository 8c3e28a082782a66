"""Property tests of the rules core (hypothesis), citing docs/RULES.md sections.

Random games are played from the start position with random dice and a random legal play
each turn until a side has borne off all 15 (§4.6). A game is drawn as one seed: the games
are long, so shrinking them is switched off; every assertion message names the position
text and the dice, which reproduce the failure on their own.

Random *valid* positions (no shared points, at most 15 per side, no illegal six-point
block) are compared with the independent reference generator in ``tests/long/reference.py``.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from nardy import OFF, Color, Position, legal_plays, match_play
from tests.long.reference import KINDS, illegal_block, random_position, reference_plays

MAX_TURNS = 1000  # a random game takes about 100 turns; this only guards against a hang

GAMES = settings(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
SEEDS = st.integers(0, 2**32 - 1)
DICE = st.tuples(st.integers(1, 6), st.integers(1, 6))


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


def counts(pos: Position, color: Color) -> list[int]:
    """``color``'s checkers by its own point (index 0: borne off)."""
    return [pos.borne_off(color), *(pos.count(color, p) for p in range(1, 25))]


def head_limit(pos: Position, dice: tuple[int, int]) -> int:
    """§3.4: two checkers may leave the head on a first-turn 6-6, 4-4 or 3-3."""
    exception = pos.is_first_turn() and dice[0] == dice[1] and dice[0] in (3, 4, 6)
    return 2 if exception else 1


def check_play_invariants(pos: Position, dice: tuple[int, int], plays) -> None:
    where = f"{pos.text()} dice {dice}"
    mover, opp = pos.turn, pos.turn.opponent
    assert Position.parse(pos.text()) == pos, where  # §1 position text round trip
    assert len({p.end for p in plays}) == len(plays), f"{where}: repeated end (§3.7)"
    allowed = Counter([dice[0]] * 4 if dice[0] == dice[1] else dice)
    before = counts(pos, mover)
    for play in plays:
        at = f"{where} play {play.notation()} -> {play.end.text()}"
        end = play.end
        assert end.turn is opp, at
        assert Position.parse(end.text()) == end, at
        # the opponent's checkers do not move (§3.1, no hitting §3.2)
        assert counts(end, opp) == counts(pos, opp), at
        # the steps replayed on the mover's board give the end position; conservation
        m = list(before)
        used = Counter()
        for step in play.steps:
            used[step.die] += 1
            assert m[step.src] > 0, f"{at}: no checker on {step.src}"
            if step.dst == OFF:
                assert step.die >= step.src, at  # §4.2, §4.4
            else:
                assert step.src - step.dst == step.die, at  # §3.1
            m[step.src] -= 1
            m[step.dst] += 1
        assert m == counts(end, mover), at
        assert sum(m) == 15 and sum(counts(end, opp)) == 15, at
        assert not used - allowed, f"{at}: dice used {dict(used)}"
        # §3.5: no six-point run without an opposing checker ahead, for either side
        assert not illegal_block(end.board, mover), f"{at}: illegal six-point block"
        assert not illegal_block(end.board, opp), at
        # §3.4: head rule
        left_head = pos.count(mover, 24) - end.count(mover, 24)
        assert left_head <= head_limit(pos, dice), f"{at}: {left_head} left the head"


def check_max_dice(pos: Position, dice: tuple[int, int], plays) -> None:
    """§3.6 (with §4.6): every play uses as many dice as possible; only a play that ends
    the game may stop early, and no play uses fewer dice than a play that does not."""
    where = f"{pos.text()} dice {dice}"
    if not plays:
        return
    most = max(len(p.steps) for p in plays)
    assert most <= (4 if dice[0] == dice[1] else 2), where
    for q in plays:
        if q.end.winner is None:
            assert len(q.steps) == most, (
                f"{where}: {q.notation()} uses {len(q.steps)} dice, another play uses {most}"
            )
    ongoing = [len(q.steps) for q in plays if q.end.winner is None]
    for p in plays:
        assert all(len(p.steps) >= n for n in ongoing), f"{where}: {p.notation()} too short"
    if dice[0] != dice[1] and most == 1:  # §3.6 larger die
        dies = {p.steps[0].die for p in plays}
        assert len(dies) == 1, f"{where}: one die alone must be the larger, got {dies}"


@pytest.mark.slow
@settings(GAMES, max_examples=30)
@given(seed=SEEDS)
def test_random_games_invariants(seed):
    """§1, §3.1-3.5, §3.7, §4: conservation, replayable steps, no illegal block, head
    rule, text round trip, on every legal play of every turn of a random game."""
    for pos, dice, plays in game(seed):
        check_play_invariants(pos, dice, plays)


@settings(GAMES, max_examples=40)
@given(seed=SEEDS)
def test_random_games_play_maximal_dice(seed):
    """§3.6, §4.6: must play as many dice as possible; larger die when only one."""
    for pos, dice, plays in game(seed):
        check_max_dice(pos, dice, plays)


@pytest.mark.slow
@settings(GAMES, max_examples=10)
@given(seed=SEEDS)
def test_random_games_notation_round_trip(seed):
    """§1: every legal play's notation is read back by match_play as the same play."""
    for pos, dice, plays in game(seed):
        for play in plays:
            got = match_play(pos, dice, play.notation())
            assert got.end == play.end, f"{pos.text()} {dice} {play.notation()}"
        if not plays:
            assert match_play(pos, dice, "-").end == pos.passed()


@pytest.mark.slow
@settings(GAMES, max_examples=15)
@given(seed=SEEDS)
def test_random_games_match_reference(seed):
    """§3, §4: legal_plays equals the reference generator along random games."""
    for pos, dice, plays in game(seed):
        got = {p.end.text() for p in plays}
        ref = reference_plays(pos, dice)
        assert got == ref, (
            f"{pos.text()} dice {dice}: only legal_plays {sorted(got - ref)}, "
            f"only reference {sorted(ref - got)}"
        )


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(rng=st.randoms(use_true_random=False), kind=st.sampled_from(KINDS), dice=DICE)
def test_random_valid_positions_match_reference(rng, kind, dice):
    """§3, §4: on random valid positions (incl. bear-off and six-point situations) the
    set of end positions equals the reference generator's."""
    pos = random_position(rng, kind)
    assert Position.parse(pos.text()) == pos
    got = {p.end.text() for p in legal_plays(pos, dice)}
    ref = reference_plays(pos, dice)
    assert got == ref, (
        f"{pos.text()} dice {dice}: only legal_plays {sorted(got - ref)}, "
        f"only reference {sorted(ref - got)}"
    )


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(rng=st.randoms(use_true_random=False), kind=st.sampled_from(KINDS), dice=DICE)
def test_random_valid_positions_invariants(rng, kind, dice):
    """The per-play invariants and §3.6 on random valid positions."""
    pos = random_position(rng, kind)
    plays = legal_plays(pos, dice)
    check_play_invariants(pos, dice, plays)
    check_max_dice(pos, dice, plays)
