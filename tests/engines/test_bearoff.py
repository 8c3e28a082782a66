"""The exact one-sided bear-off tables (engines/bearoff.py) and the race values the network
takes from them (RULES.md §4 bearing off, §5 oin and mars)."""

from __future__ import annotations

import numpy as np

from engines import bearoff, train
from engines import features_long as fl
from engines import network as nw
from nardy import CHECKERS, Color, Position, legal_plays

TABLE = bearoff.table()


def home(**points: int) -> np.ndarray:
    """A home board from ``p1=..``..``p6=..`` (checkers on points 1..6)."""
    return np.array([[points.get(f"p{p}", 0) for p in range(1, 7)]])


def test_every_home_board_once_and_distributions_sum_to_one():
    b = bearoff.boards()
    assert len(b) == 54_264 and len({tuple(r) for r in b}) == len(b)
    assert b.sum(1).max() == CHECKERS and b.min() == 0
    assert np.allclose(TABLE.off.sum(1), 1.0, atol=1e-5)
    assert np.allclose(TABLE.first.sum(1), 1.0, atol=1e-5)


def test_one_checker_on_six_by_hand():
    # §4: 27 of 36 rolls carry it off at once; the rest (2-1, 3-1, 4-1, 3-2, 1-1) leave it
    # on 5..2 and any roll then bears it off.
    d = TABLE.off[TABLE.index(home(p6=1))][0]
    assert np.isclose(d[1], 27 / 36) and np.isclose(d[2], 9 / 36) and np.isclose(d.sum(), 1)


def test_first_checker_off_from_fifteen_on_six_by_hand():
    # §4.2-4.3: a 6, or two dice that together make six with one checker (5-1, 4-2, 3-3,
    # 2-2); 5-2 cannot: after 6/1 the 2 must be moved inside, point 2 being empty with
    # checkers above it.
    d = TABLE.first[TABLE.index(home(p6=15))][0]
    assert np.isclose(d[1], (11 + 2 + 2 + 1 + 1) / 36)
    assert np.isclose(TABLE.first[TABLE.index(home(p1=15))][0][1], 1.0)
    assert np.isclose(TABLE.first[TABLE.index(home(p1=14))][0][0], 1.0)  # one is off


def test_small_boards_rebuilt_from_the_rules_match_the_shipped_tables():
    off, _ = bearoff.build(limit=3)
    small = bearoff.boards().sum(1) <= 3
    assert np.allclose(off[small], TABLE.off[small], atol=1e-6)


def test_race_values():
    one = home(p1=1)
    # the side on roll with one checker left wins at once, no mars: the other has borne off
    assert np.allclose(TABLE.race_values(one, home(p6=15)), [[1.0, 1.0, 0.0]])
    # ... and a side with 15 on six against it loses, by mars unless its first checker
    # comes off in its one turn (17/36)
    assert np.allclose(TABLE.race_values(home(p6=15), one), [[0.0, 0.0, 1 - 17 / 36]])
    # one on six against three on 2, 1, 1: the three need two turns unless a double
    v = TABLE.race_values(home(p6=1), home(p1=2, p2=1))
    assert np.isclose(v[0, 0], 27 / 36 + 9 / 36 * 30 / 36) and v[0, 1] == v[0, 2] == 0.0


def test_the_network_takes_race_values_from_the_tables():
    # white: one on its 6 (a=18); black: 15 on its point 1 (a=11), nothing borne off
    pos = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,1,0,0,0,0,0")
    assert fl.both_home(pos) and not fl.both_home(Position.start())
    net = nw.Network.random(8, seed=1)
    assert np.allclose(net.values([pos]), [[1.0, 27 / 36, 0.0]])
    net.bearoff = False
    assert not np.allclose(net.values([pos]), [[1.0, 27 / 36, 0.0]])


def test_self_play_stops_at_the_tables():
    net = nw.Network.random(8, seed=1)
    net.races = False  # with the race model it stops sooner (below)
    for game in range(3):
        states, outcome = train.self_play(net, train.game_rng(1, game))
        assert not any(fl.both_home(s) for s in states)
        # the outcome is for the side to move after the last turn: the tables' values of
        # a position both all home that one of the last position's plays reaches, or a loss
        ends = {p.end for roll, _ in nw.ROLLS for p in legal_plays(states[-1], roll)}
        finals = [e for e in ends if fl.both_home(e) or e.winner is not None]
        assert any(np.allclose(net.values([e])[0], outcome) for e in finals)


# -- races before all home (the race model) ------------------------------------------------


def _one_turn_then_tables(side: np.ndarray) -> np.ndarray:
    """Exact turns to bear off a side with one checker on point 7 and the rest home: every
    roll can bring it home with its first die (§3.1-3.2, nothing blocks in a race), the
    next dice may then bear off (§4.1, mid-turn); each roll is played to the all-home end
    board with the fewest turns on average, and the tables take it from there."""
    board = [0] * 24
    for p, n in enumerate(side, 1):
        board[24 - p] = int(n)
    board[11] = -CHECKERS  # black out of the way, as in the tables
    pos = Position(Color.WHITE, tuple(board))
    mean = TABLE.off @ np.arange(bearoff.TURNS)
    d = np.zeros(bearoff.RACE_TURNS)
    for dice, w in bearoff.ROLLS:
        ends = [p.end.board[18:][::-1] for p in legal_plays(pos, dice) if _home(p)]
        j = TABLE.index(np.array(ends))
        d[1 : bearoff.TURNS + 1] += w * TABLE.off[j[np.argmin(mean[j])]]
    return d


def _home(play) -> bool:
    return all(n <= 0 for n in play.end.board[:18])


def test_the_race_model_against_exact_values_one_checker_out():
    rng = np.random.default_rng(3)
    errors = []
    for _ in range(12):
        h = np.bincount(rng.integers(0, 6, rng.integers(1, 15)), minlength=6)
        side = np.concatenate([h, [1]])
        exact = _one_turn_then_tables(side)
        approx = TABLE.turns(side[None])[0][0]
        assert np.isclose(approx.sum(), 1.0) and np.isclose(exact.sum(), 1.0)
        turns = np.arange(bearoff.RACE_TURNS)
        errors.append(abs(exact @ turns - approx @ turns))
        assert np.abs(np.cumsum(exact) - np.cumsum(approx)).max() < 0.25
    # measured on 40 such boards: 0.15 turns off on average (too few), at most 0.28
    assert np.mean(errors) < 0.2 and max(errors) < 0.35


def test_the_race_model_is_exact_all_home():
    mover, other = home(p6=1), home(p1=2, p2=1)
    pad = np.zeros((1, 18), dtype=np.int64)
    v = TABLE.race_values(np.hstack([mover, pad]), np.hstack([other, pad]))
    assert np.allclose(v, TABLE.race_values(mover, other), atol=1e-12)
    d, first = TABLE.turns(home(p6=15))
    assert np.allclose(d[0, : bearoff.TURNS], TABLE.off[TABLE.index(home(p6=15))][0])


def test_the_network_takes_races_before_all_home_from_the_model():
    # §1 absolute indices: white has one checker on its 8 (a=16) and 14 on its 1; black
    # has all 15 on its 1 (a=11): they have passed each other, a race, white not all home
    pos = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,1,0,0,0,0,0,0,14")
    assert not fl.both_home(pos) and fl.FEATURES.encode([pos])[0, -1] == 1
    net = nw.Network.random(8, seed=1)
    c = fl.counts(*fl.boards_of([pos]))
    model = TABLE.race_values(c[:, 0], c[:, 1])
    assert np.allclose(net.values([pos]), model)
    net.races = False
    assert not np.allclose(net.values([pos]), model)
    start = net.values([Position.start()])  # contact: the network either way
    net.races = True
    assert np.array_equal(net.values([Position.start()]), start)


def test_training_judges_races_by_the_network_or_stops_at_the_first():
    net = nw.Network.random(8, seed=2)
    net.races = False  # as the shipped run did: races before all home by the network
    states, outcome = train.self_play(net, train.game_rng(2, 0))
    x, got = train._play_game(((net.w1, net.b1, net.w2, net.b2), 2, 0, False, "long"))
    assert np.array_equal(x, fl.FEATURES.encode(states)) and np.array_equal(got, outcome)
    assert not any(fl.both_home(p) for p in states)
    raced = [i for i, p in enumerate(states) if fl.in_race(p)]
    assert raced, "this game has a race before both sides are all home"
    net.races = True  # --races: the game stops at its first race, valued by the model
    short, end = train.self_play(net, train.game_rng(2, 0))
    assert short == states[: raced[0]] and not any(fl.in_race(p) for p in short)
    rng = train.game_rng(2, 0)  # the last turn's dice, and the play the network chose
    for _ in range(len(short)):
        dice = (rng.randint(1, 6), rng.randint(1, 6))
    plays = legal_plays(short[-1], dice)
    first = plays[int(np.argmax(nw.equity(net.after(plays))))].end
    c = fl.counts(*fl.boards_of([first]))
    assert fl.in_race(first) and np.allclose(end, TABLE.race_values(c[:, 0], c[:, 1])[0])
    x, got = train._play_game(((net.w1, net.b1, net.w2, net.b2), 2, 0, True, "long"))
    assert np.array_equal(x, fl.FEATURES.encode(short)) and np.array_equal(got, end)
