"""The value network: its board encoding, values, ``best_plays``, the network engine's levels
and search, the shipped weights, and training that resumes from a checkpoint."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import numpy as np
import pytest

from engines import features_long as fl
from engines import network as nw
from engines import train
from engines.evaluate import values_for
from engines.neural import LEVELS, NetworkEngine
from nardy import CHECKERS, Color, Position, legal_plays, result

START = Position.start()
MIDDLE = Position.parse("w/8,0,0,1,1,1,2,0,0,1,0,0,-7,0,0,0,-1,-1,-1,1,-2,-1,0,-2")
RACE = Position.parse("b/0,0,0,0,0,0,-3,-3,-3,-2,-2,-2,0,0,0,0,0,0,2,3,3,3,2,1")
EARLY = Position.parse("w/14,0,-1,0,0,0,0,0,0,0,0,0,-13,0,0,0,1,0,-1,0,0,0,0,0")
BEAR_OFF = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,1,0,14,0,0")


def game_positions(seed: int, n: int = 300) -> list[Position]:
    """Positions from random games: every stage, both sides to move."""
    rng = random.Random(seed)
    out, pos = [], START
    while len(out) < n:
        out.append(pos)
        plays = legal_plays(pos, (rng.randint(1, 6), rng.randint(1, 6)))
        pos = rng.choice(plays).end if plays else pos.passed()
        if result(pos) is not None:
            pos = START
    return out


# -- the encoding, against a plain per-position reference ---------------------------------


def own_points(pos: Position, color: Color) -> list[int]:
    return [pos.count(color, p) for p in range(1, 25)]


def on_other_path(p: int) -> int:
    """Progress (0 = head) along the other side's path of a side's own point p."""
    q = p + 12 if p <= 12 else p - 12  # the other side's name for the point (RULES.md §1)
    return 24 - q


def reference(pos: Position) -> list[float]:
    """The encoding of the network module's docstring, written out point by point."""
    me, them = pos.turn, pos.turn.opponent
    out: list[float] = []
    for side, other in ((me, them), (them, me)):
        c, o = own_points(pos, side), own_points(pos, other)
        for n in c:
            out += [n >= 1, n >= 2, n >= 3, max(n - 3, 0) / 4]
        out += [
            pos.borne_off(side) / 15,
            pos.pips(side) / 150,
            c[23] / 15,
            sum(c[:6]) / 15,
        ]
        held = {on_other_path(p) for p in range(1, 25) if c[p - 1]}
        hist = [0] * 7
        for q in range(1, 25):  # the other side's checkers, with the points held before them
            k = 24 - q
            hist[sum(k + d in held for d in range(1, 7) if k + d < 24)] += o[q - 1]
        out += [h / 15 for h in hist[1:]]
        longest = run = 0
        for k in range(24):
            run = run + 1 if k in held else 0
            longest = max(longest, run)
        out.append(min(longest, 6) / 6)
    mine = [24 - p for p in range(1, 25) if pos.count(me, p)]
    theirs = [24 - q for q in range(1, 25) if pos.count(them, q)]
    mine_on_theirs = [on_other_path(p) for p in range(1, 25) if pos.count(me, p)]
    theirs_on_mine = [on_other_path(q) for q in range(1, 25) if pos.count(them, q)]
    out.append(
        min(mine, default=99) > max(theirs_on_mine, default=-1)
        and min(theirs, default=99) > max(mine_on_theirs, default=-1)
    )
    return [float(v) for v in out]


def test_encoding_matches_the_documented_reference():
    positions = game_positions(1) + [START, MIDDLE, RACE, BEAR_OFF]
    x = fl.FEATURES.encode(positions)
    assert x.shape == (len(positions), fl.SIZE)
    want = np.array([reference(p) for p in positions])
    assert np.array_equal(x, want)  # every input is one correctly rounded division


@pytest.mark.skipif(fl.COMPILED is None, reason="engines._network was not built")
def test_compiled_encoding_is_the_numpy_one_bit_for_bit():
    positions = game_positions(3, 2000) + [START, MIDDLE, RACE, BEAR_OFF]
    x, c = fl.FEATURES.inputs(positions)
    c0 = fl.counts(*fl.boards_of(positions))
    assert np.array_equal(c, c0) and np.array_equal(x, fl.features(c0))
    with pytest.raises(ValueError):
        fl.COMPILED.encode(positions, np.empty((1, fl.SIZE)), c)


def mirrored(pos: Position) -> Position:
    """The same game with the colours exchanged (white's point p becomes black's p)."""
    board = [0] * 24
    for a, n in enumerate(pos.board):
        board[(a + 12) % 24] = -n
    return Position(pos.turn.opponent, tuple(board))


def test_encoding_is_turn_relative():
    positions = game_positions(2, 100)
    assert np.array_equal(
        fl.FEATURES.encode(positions), fl.FEATURES.encode([mirrored(p) for p in positions])
    )
    # and the two sides' halves swap when only the side to move changes
    x, y = fl.FEATURES.encode(positions), fl.FEATURES.encode([p.passed() for p in positions])
    side = (fl.SIZE - 1) // 2
    assert np.array_equal(x[:, :side], y[:, side : 2 * side])


def test_race_input():
    race = fl.FEATURES.encode([START, MIDDLE, RACE, BEAR_OFF])[:, -1]
    assert list(race) == [0, 0, 1, 0]  # BEAR_OFF: black is still on its head, behind white


# -- values and best_plays -----------------------------------------------------------------


@pytest.fixture(scope="module")
def net() -> nw.Network:
    return nw.shipped()


def test_shipped_weights_load_and_are_small(net):
    assert nw.WEIGHTS.stat().st_size < 5_000_000
    assert net.w1.shape == (fl.SIZE, net.hidden)
    assert net.meta["games"] > 0 and "seed" in net.meta  # how they were made
    v = net.values(game_positions(3, 50))
    assert v.shape == (50, 3) and ((v >= 0) & (v <= 1)).all()


@pytest.mark.slow
def test_weights_from_the_environment(tmp_path):
    # NARDY_WEIGHTS names other weights (a training run's export) for every engine process
    path = tmp_path / "mine.npz"
    mine = nw.Network.random(8, seed=2)
    mine.meta = {"games": 123, "seed": 2}
    mine.save(path)
    code = "from engines.network import shipped; print(shipped().meta['games'], shipped().hidden)"
    env = {**os.environ, "NARDY_WEIGHTS": str(path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["123", "8"], out.stderr


def test_decided_positions_are_exact(net):
    # white has borne off all 15; black, to move, has lost: by mars with none borne off
    lost = Position(Color.BLACK, (0,) * 12 + (-15,) + (0,) * 11)
    assert net.values([lost]).tolist() == [[0.0, 0.0, 1.0]]
    oin = Position(Color.BLACK, (0,) * 12 + (-14,) + (0,) * 11)
    assert net.values([oin]).tolist() == [[0.0, 0.0, 0.0]]


def test_flip_and_equity():
    v = np.array([0.7, 0.2, 0.05])
    assert np.allclose(nw.flip(nw.flip(v)), v)
    assert np.isclose(nw.equity(v) + nw.equity(nw.flip(v)), 0)
    assert nw.equity(np.array([1.0, 1.0, 0.0])) == 2  # a sure mars
    assert nw.equity(np.array([0.0, 0.0, 1.0])) == -2
    # with outcome values: points give the same equity; one point to win: mars counts as oin
    assert np.isclose(nw.equity(v, values_for(None)), nw.equity(v))
    last = values_for((3, 2, 0))
    assert np.isclose(nw.equity(v, last), nw.equity(np.array([0.7, 0.0, 0.05]), last))


@pytest.mark.parametrize("ply", [0, 1, 2])
@pytest.mark.parametrize(
    "pos,dice", [(START, (3, 1)), (MIDDLE, (5, 2)), (MIDDLE, (2, 2)), (RACE, (6, 4))]
)
def test_best_plays_ranks_every_legal_play(net, pos, dice, ply):
    ranked = nw.best_plays(pos, dice, ply=ply)
    ends = {p.end for p in legal_plays(pos, dice)}
    assert {r.play.end for r in ranked} == ends and len(ranked) == len(ends)
    head = ranked[: 6 if ply else len(ranked)]
    assert all(a.equity >= b.equity for a, b in zip(head, head[1:], strict=False))
    for r in ranked:
        assert -2 <= r.equity <= 2 and 0 <= r.win <= 1
    if ply == 0:  # the 0-ply equity is the network's value of the end position, turned round
        best = ranked[0]
        v = nw.flip(net.values([best.play.end]))[0]
        assert np.isclose(best.equity, nw.equity(v))


def test_best_plays_takes_the_win():
    pos = Position.parse("w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,2")
    for ply in (0, 1):
        best = nw.best_plays(pos, (2, 1), ply=ply)[0]
        assert best.play.end.winner is Color.WHITE
        assert best.equity == 2.0  # black has borne off nothing: a mars, exactly


def test_best_plays_with_no_legal_play():
    # white's head is walled in by six black points (built before any rule could stop it)
    pos = Position.parse("w/15,-2,-2,-2,-2,-2,-2,0,0,0,0,0,-3,0,0,0,0,0,0,0,0,0,0,0")
    assert legal_plays(pos, (6, 6)) == []
    assert nw.best_plays(pos, (6, 6)) == []


# -- the engine ----------------------------------------------------------------------------


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_levels_play_legal_moves(level):
    engine = NetworkEngine(level=level, seed=3)
    for pos, dice in [(START, (4, 4)), (MIDDLE, (2, 2)), (RACE, (6, 4)), (BEAR_OFF, (6, 2))]:
        plays = legal_plays(pos, dice)
        play = engine.choose(pos, dice, plays)
        assert any(play is p for p in plays)


def two_ply(net: nw.Network, end: Position) -> np.ndarray:
    """2-ply by hand: each opponent roll's best 0-ply reply, judged at 1 ply by us."""
    total = np.zeros(3)
    for roll, weight in nw.ROLLS:
        replies = [p.end for p in legal_plays(end, roll)] or [end.passed()]
        v = net.values(replies)  # for us, to move again
        best = int(np.argmin(nw.equity(v)))
        done = replies[best].winner is not None
        total += weight * (v[best] if done else nw.flip(nw.lookahead(net, replies[best])))
    return total


def test_packed_boards_are_valued_like_their_positions(net):
    """The lookahead's path (nardy.end_boards -> Network.board_values) judges a board as
    Network.values judges its Position, decided and bear-off positions included."""
    positions = [p for p in game_positions(5, 3000) if p.turn is Color.BLACK]
    positions += [Position(Color.BLACK, BEAR_OFF.board), Position(Color.BLACK, RACE.board)]
    packed = b"".join(bytes(c & 0xFF for c in p.board) for p in positions)
    assert np.array_equal(net.board_values(packed, Color.BLACK), net.values(positions))
    assert net.board_values(b"", Color.WHITE).shape == (0, 3)


def test_two_ply_lookahead_looks_two_rolls_ahead(net):
    for pos, dice in [(MIDDLE, (5, 2)), (START, (6, 5))]:
        for play in legal_plays(pos, dice)[:2]:
            got = nw.lookahead(net, play.end, depth=2)
            assert np.allclose(got, two_ply(net, play.end))
            assert not np.allclose(got, nw.lookahead(net, play.end))


def test_full_level_is_the_deepest_choice_among_pruned_candidates(net):
    level = LEVELS[3]
    deepened = 0
    for pos, dice in [(MIDDLE, (5, 2)), (MIDDLE, (6, 3)), (START, (3, 1)), (EARLY, (4, 1))]:
        plays = legal_plays(pos, dice)
        ranked = nw.best_plays(pos, dice)
        cands = [r for r in ranked[: level.k] if r.equity >= ranked[0].equity - level.margin]
        one = [float(nw.equity(nw.lookahead(net, r.play.end))) for r in cands]
        want = cands[int(np.argmax(one))].play.end
        order = sorted(range(len(cands)), key=lambda i: -one[i])[: level.k2]
        close = [i for i in order if one[i] >= max(one) - level.margin2]
        if len(close) >= 2:  # the close ones are searched again at 2 ply
            two = [float(nw.equity(two_ply(net, cands[i].play.end))) for i in close]
            want = cands[close[int(np.argmax(two))]].play.end
            deepened += 1
        engine = NetworkEngine(level=3, max_seconds=None)
        assert engine.choose(pos, dice, plays).end == want
        assert engine.deepened == (len(close) >= 2)
    assert deepened  # the cases include a close call


def test_full_level_answers_within_the_budget_and_falls_back():
    plays = legal_plays(MIDDLE, (2, 2))
    engine = NetworkEngine(level=3)
    play = engine.choose(MIDDLE, (2, 2), plays, time_left_ms=60)  # no time to search
    assert play.end == nw.best_plays(MIDDLE, (2, 2))[0].play.end  # the 0-ply choice
    assert engine.timeouts == 1


def test_a_lookahead_expected_to_overrun_the_budget_is_not_begun():
    """A search is cut only between chunks, so one begun late would overrun the turn: a
    candidate expected to end after the deadline is not searched."""
    plays = legal_plays(MIDDLE, (5, 2))
    engine = NetworkEngine(level=3)
    scores = {i: 0.0 for i in range(len(plays))}  # all close
    far = time.perf_counter() + 3600.0
    got, cost = engine._search(plays, scores, 3, 1.0, 2, far, None, cost=7200.0)
    assert got is None and cost == 7200.0 and engine.timeouts == 1
    got, cost = engine._search(plays, scores, 3, 1.0, 1, far, None)  # no estimate yet
    assert got is not None and len(got) == 3 and 0.0 < cost < 3600.0


def test_beginner_slips_sometimes_full_never():
    pos, dice = MIDDLE, (5, 2)
    plays = legal_plays(pos, dice)
    best = nw.best_plays(pos, dice)[0].play.end
    beginner = NetworkEngine(level=0, seed=5)
    picks = [beginner.choose(pos, dice, plays).end for _ in range(60)]
    assert any(p != best for p in picks) and any(p == best for p in picks)
    solid = NetworkEngine(level=2, seed=5)
    assert all(solid.choose(pos, dice, plays).end == best for _ in range(5))


# -- training ------------------------------------------------------------------------------


def test_td_targets():
    v = np.array([[0.5, 0.1, 0.1], [0.6, 0.2, 0.0], [0.3, 0.0, 0.3]])
    outcome = np.array([0.0, 0.0, 1.0])  # the side to move after the last turn lost by mars
    g0 = train.td_targets(v, outcome, lam=0.0)
    assert np.allclose(g0[2], [1.0, 1.0, 0.0])  # the last mover won by mars
    assert np.allclose(g0[0], nw.flip(v[1])) and np.allclose(g0[1], nw.flip(v[2]))
    g1 = train.td_targets(v, outcome, lam=1.0)  # Monte Carlo: the outcome, turned round
    assert np.allclose(g1[2], [1, 1, 0]) and np.allclose(g1[1], [0, 0, 1])
    assert np.allclose(g1[0], [1, 1, 0])


def test_float32_outputs_follow_the_weights_as_they_learn():
    net = nw.Network.random(16, seed=6)
    x = fl.FEATURES.encode(game_positions(7, 50))
    assert np.allclose(net.outputs(x), net.forward(x)[1], atol=1e-5)
    before = net.outputs(x)
    train.learn(net, x, np.full((50, 3), [1.0, 0.0, 0.0]), alpha=0.05)
    after = net.outputs(x)  # not the float32 copies of the weights before the step
    assert np.allclose(after, net.forward(x)[1], atol=1e-5) and not np.allclose(after, before)


def test_learning_moves_values_toward_targets():
    net = nw.Network.random(16, seed=4)
    x = fl.FEATURES.encode(game_positions(4, 40))
    g = np.full((40, 3), [1.0, 0.0, 0.0])
    before = train.learn(net, x, g, alpha=0.05)
    for _ in range(20):
        after = train.learn(net, x, g, alpha=0.05)
    assert after < before


def test_training_resumes_from_a_checkpoint_to_the_same_weights(tmp_path):
    common = ["--seed", "9", "--hidden", "8", "--eval-every", "0", "--checkpoint-every", "2"]
    once = tmp_path / "once.npz"
    assert train.main(["--games", "4", "--checkpoint", str(once), *common]) == 0
    split = tmp_path / "split.npz"
    assert train.main(["--games", "2", "--checkpoint", str(split), *common]) == 0
    assert nw.Network.load(split).meta["games"] == 2
    export = tmp_path / "shipped.npz"
    args = ["--games", "4", "--checkpoint", str(split), "--export", str(export), *common]
    assert train.main(args) == 0  # resumes at game 2
    a, b = nw.Network.load(once), nw.Network.load(split)
    assert b.meta["games"] == 4
    for k in ("w1", "b1", "w2", "b2"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    shipped = nw.Network.load(export)
    assert shipped.meta["games"] == 4 and np.allclose(shipped.w1, a.w1, atol=1e-6)
    log = (tmp_path / "split.npz.log.jsonl").read_text().splitlines()
    assert log and '"games_per_hour"' in log[-1]


@pytest.mark.slow
def test_training_with_workers_is_reproducible(tmp_path):
    common = ["--seed", "3", "--hidden", "8", "--eval-every", "0", "--games", "4"]
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert train.main([*common, "--checkpoint", str(a), "--workers", "2"]) == 0
    assert train.main([*common, "--checkpoint", str(b), "--workers", "2"]) == 0
    na, nb = nw.Network.load(a), nw.Network.load(b)
    assert np.array_equal(na.w1, nb.w1) and na.meta["workers"] == [[0, 2]]


def test_training_exports_the_mean_of_the_checkpoints_from_a_game_on(tmp_path):
    common = ["--seed", "4", "--hidden", "8", "--eval-every", "0", "--checkpoint-every", "2"]
    at = {}
    for games in (2, 4, 6):  # the checkpoints at games 2, 4, 6 of the same run
        ckpt = tmp_path / f"plain{games}.npz"
        assert train.main(["--games", str(games), "--checkpoint", str(ckpt), *common]) == 0
        at[games] = nw.Network.load(ckpt)
    ckpt, export = tmp_path / "avg.npz", tmp_path / "export.npz"
    args = [*common, "--checkpoint", str(ckpt), "--export", str(export), "--average-from", "4"]
    assert train.main(["--games", "4", *args]) == 0
    assert train.main(["--games", "6", *args]) == 0  # resumes with the mean kept so far
    shipped = nw.Network.load(export)
    assert shipped.meta["average"] == {"from": 4, "checkpoints": 2}
    for k in ("w1", "b1", "w2", "b2"):
        mean = (getattr(at[4], k) + getattr(at[6], k)) / 2
        assert np.allclose(getattr(shipped, k), mean, atol=1e-6)
        assert np.array_equal(getattr(nw.Network.load(ckpt), k), getattr(at[6], k))
    # an average cannot start in the past, nor change where it starts
    assert train.main(["--games", "8", *args[:-1], "2"]) == 2
    plain = [*common, "--checkpoint", str(tmp_path / "plain6.npz"), "--average-from", "4"]
    assert train.main(["--games", "8", *plain]) == 2


def test_a_grown_network_plays_like_the_one_it_grew_from():
    net = nw.Network.random(8, seed=2)
    net.meta = {"games": 10}
    wide = train.grow(net, 12, seed=1)
    assert wide.hidden == 12 and wide.meta["grown"] == [[10, 8, 12]]
    x = fl.FEATURES.encode(game_positions(6, 30))
    assert np.allclose(wide.forward(x)[1], net.forward(x)[1])
    assert np.array_equal(wide.w1[:, :8], net.w1) and wide.w1[:, 8:].std() > 0


def test_training_grows_and_changes_step_reproducibly_on_resume(tmp_path):
    common = ["--seed", "5", "--eval-every", "0", "--checkpoint-every", "2"]
    runs = []
    for name in ("a", "b"):
        ckpt = str(tmp_path / f"{name}.npz")
        assert train.main(["--games", "2", "--hidden", "8", "--checkpoint", ckpt, *common]) == 0
        more = ["--hidden", "12", "--alpha", "0.03", "--checkpoint", ckpt, *common]
        assert train.main(["--games", "4", *more]) == 0
        runs.append(nw.Network.load(ckpt))
    a, b = runs
    assert a.hidden == 12 and a.meta["grown"] == [[2, 8, 12]]
    assert a.meta["steps"] == [[0, 0.1, 10_000], [2, 0.03, 10_000]]
    for k in ("w1", "b1", "w2", "b2"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    assert np.abs(a.w2[8:]).max() > 0  # the new units learned
    # a network never shrinks
    shrink = ["--games", "6", "--hidden", "8", "--checkpoint", str(tmp_path / "a.npz")]
    assert train.main([*shrink, *common]) == 2


def test_training_refuses_another_seeds_checkpoint(tmp_path):
    ckpt = tmp_path / "c.npz"
    common = ["--hidden", "8", "--eval-every", "0", "--checkpoint", str(ckpt)]
    assert train.main(["--games", "1", "--seed", "1", *common]) == 0
    assert train.main(["--games", "2", "--seed", "2", *common]) == 2


def test_self_play_game_ends_with_a_result():
    net = nw.Network.random(8, seed=1)
    net.bearoff = False  # played out to the end (with the tables: tests/engines/test_bearoff.py)
    states, outcome = train.self_play(net, train.game_rng(1, 0))
    assert states[0] == START and len(states) > 20
    assert outcome[0] == 0 and outcome[1] == 0 and outcome[2] in (0.0, 1.0)
    assert sum(states[-1].on_board(c) for c in Color) <= 2 * CHECKERS


def test_self_play_takes_the_best_legal_play_by_the_network():
    net = nw.Network.random(8, seed=3)
    net.bearoff = False
    states, _ = train.self_play(net, train.game_rng(3, 1))
    rng = train.game_rng(3, 1)  # the same dice, one roll per turn
    for before, after in zip(states, states[1:], strict=False):
        plays = legal_plays(before, (rng.randint(1, 6), rng.randint(1, 6)))
        best = plays[int(np.argmax(nw.equity(net.after(plays))))].end if plays else before.passed()
        assert after == best
