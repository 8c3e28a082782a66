"""Fitting rounds after TD(lambda) (engines/fit.py, ``engines.train --fit-rounds``): the
labels are what they claim, and a round is reproducible and resumable."""

from __future__ import annotations

import numpy as np
import pytest

from engines import features_long as fl
from engines import fit, train
from engines import network as nw
from engines.selfplay import self_play, td_targets

SMALL = fit.Settings(games=4, positions=5, candidate_games=2, epochs=2, batch=16, chunk=2)


def _net(seed: int = 1) -> nw.Network:
    net = nw.Network.random(8, seed=seed)
    net.meta = {"games": 0}
    return net


def test_value_positions_carry_their_lambda_returns():
    net = _net()
    data = fit.value_game(net, 5, 0, 3, SMALL)
    states, outcome = self_play(net, fit._rng(5, 0, "dice", 3))
    g = td_targets(net.values(states), outcome, SMALL.lam)
    rows = [states.index(p) for p in data.positions(fl.FEATURES)]
    assert len(rows) == SMALL.positions and rows == sorted(rows)
    assert np.allclose(data.labels, g[rows], atol=1e-6) and set(data.games) == {3}
    assert not any(
        fl.in_race(p) for p in data.positions(fl.FEATURES)
    )  # the network's positions only


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 2])
def test_candidates_are_the_best_plays_labelled_by_lookahead(depth):
    net = _net(2)
    s = fit.Settings(candidate_share=1.0 if depth == 1 else 0.1, candidates=3, depth=depth)
    data = fit.candidate_game(net, 5, 0, 1, s)
    ends = data.positions(fl.FEATURES)
    assert ends and not any(fl.in_race(e) or e.winner is not None for e in ends)
    for e, label in list(zip(ends, data.labels, strict=True))[:12]:
        assert np.allclose(label, nw.flip(nw.lookahead(net, e, depth=depth)), atol=1e-6)
    # every turn's ends are among its best three by the network (RULES.md §3.7: plays
    # are their end positions)
    firsts = []

    def visit(pos, boards, v):
        order = np.argsort(-nw.equity(v), kind="stable")[:3]
        firsts.append({boards[24 * int(j) : 24 * int(j) + 24] for j in order})

    self_play(net, fit._rng(5, 0, "dice", 1), visit)
    best = set().union(*firsts)
    assert all(np.array(e.board, np.int8).tobytes() in best for e in ends)


def test_a_fit_resumes_from_its_last_epoch_to_the_same_weights(tmp_path):
    net = _net(3)
    data = fit.Data.join([fit.value_game(net, 1, 0, g, SMALL) for g in range(4)])
    x, y = fit.inputs(fl.FEATURES, data), data.labels
    held = (x[:5], y[:5])
    logs = []
    once = fit.fit(net, x, y, SMALL, 1, 0, tmp_path / "a.npz", logs.append, held)

    def stop(record):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # stopped after the first epoch is saved
        fit.fit(net, x, y, SMALL, 1, 0, tmp_path / "b.npz", stop, held)
    again = fit.fit(net, x, y, SMALL, 1, 0, tmp_path / "b.npz", logs.append, held)
    assert [r["epoch"] for r in logs] == [0, 1, 1]
    for k in ("w1", "b1", "w2", "b2"):
        assert np.array_equal(getattr(once, k), getattr(again, k))
    assert not np.allclose(once.w1, net.w1)  # it learned
    assert logs[1]["held_out"]["ce"] < fit.losses(fit._params(net), *held)["ce"]


@pytest.mark.slow
def test_fitting_rounds_are_reproducible_with_any_workers(tmp_path):
    td = ["--seed", "2", "--hidden", "8", "--eval-every", "0", "--games", "2"]
    small = ["--fit-games", "4", "--fit-candidate-games", "2", "--fit-epochs", "1"]
    small += ["--fit-chunk", "2", "--eval-pairs", "0"]
    nets = []
    for name, workers in (("a", "1"), ("b", "2")):
        ckpt = str(tmp_path / f"{name}.npz")
        assert train.main([*td, "--checkpoint", ckpt]) == 0
        args = [*td, *small, "--checkpoint", ckpt, "--workers", workers, "--fit-rounds", "1"]
        assert train.main(args) == 0
        assert train.main([*td, *small, "--checkpoint", ckpt, "--fit-rounds", "2"]) == 0
        nets.append(nw.Network.load(ckpt))
    a, b = nets
    assert fit.rounds(a) == 2 and a.meta["fit"][0]["games"] == 4
    for k in ("w1", "b1", "w2", "b2"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    work = tmp_path / "a.npz.fit"
    assert sorted(p.name for p in work.glob("round0-values-*.npz")) == [
        "round0-values-0.npz",
        "round0-values-2.npz",
    ]
    # TD games cannot follow fitting rounds
    assert train.main([*td[:-1], "3", "--checkpoint", str(tmp_path / "a.npz")]) == 2
    # a round whose window reaches a round without its data is refused, before its own
    for part in work.glob("round1-*.npz"):
        part.unlink()
    third = [*td, *small, "--checkpoint", str(tmp_path / "a.npz"), "--fit-rounds", "3"]
    with pytest.raises(FileNotFoundError, match="--fit-window 1"):
        train.main(third)
    assert not list(work.glob("round2-*"))
    assert train.main([*third, "--fit-window", "1"]) == 0
    assert nw.Network.load(str(tmp_path / "a.npz")).meta["fit"][2]["window"] == 1
