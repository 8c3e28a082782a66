"""The engines that play short nardy (engines/registry.py): random, greedy (with its own
evaluation, engines/evaluate_short.py), the network (tests/engines/test_short_network.py)
and gnubg (tests/engines/test_gnubg.py); the long-only engines refuse it by name."""

from __future__ import annotations

import random

import pytest

from engines.greedy import BEST
from engines.registry import ENGINES, default_engine, make_engine, names
from nardy import Color, variant

SHORT = variant("short")


def _game(seed: int, greedy_white: bool) -> int:
    """Greedy against random from the start (§8: white's first roll is no double);
    greedy's points, negative when it loses."""
    rng = random.Random(seed)
    greedy = make_engine("greedy", variant_name="short")
    rand = make_engine("random", seed=seed, variant_name="short")
    engine = {Color.WHITE: greedy, Color.BLACK: rand}
    if not greedy_white:
        engine = {Color.WHITE: rand, Color.BLACK: greedy}
    pos, first = SHORT.start(), True
    while SHORT.result(pos) is None:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        while first and dice[0] == dice[1]:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
        first = False
        plays = SHORT.legal_plays(pos, dice)
        pos = engine[pos.turn].choose(pos, dice, plays).end if plays else SHORT.passed(pos)
    res = SHORT.result(pos)
    mine = Color.WHITE if greedy_white else Color.BLACK
    return res.points if res.winner is mine else -res.points


def test_greedy_beats_random_at_short_nardy():
    results = [_game(seed, seed % 2 == 0) for seed in range(16)]
    # measured: 100 of 100 games won (+277 points); 13 of 16 leaves room for bad luck
    assert sum(r > 0 for r in results) >= 13, results


def test_only_the_engines_that_play_short_are_offered_for_it():
    assert names("short") == ["random", "greedy", "network", "gnubg"]
    assert default_engine("short") == "network" and default_engine("long") == "network"
    with pytest.raises(ValueError, match="no bundled engine plays hyper"):
        default_engine("hyper")
    with pytest.raises(ValueError, match="expectimax plays long nardy, not short"):
        make_engine("expectimax", variant_name="short")


def test_greedy_has_an_evaluation_for_every_variant_it_is_listed_for():
    assert set(BEST) == set(ENGINES["greedy"].variants)  # (an evaluation each)
    for name in ENGINES["greedy"].variants:
        engine = make_engine("greedy", variant_name=name)
        rules = variant(name)
        start = rules.start()
        assert engine.choose(start, (6, 5), rules.legal_plays(start, (6, 5))) is not None
