"""Self-play games of the value network at 0 ply and their lambda-returns: the games that
TD(lambda) learns from (engines/train.py) and that the fitting rounds draw their positions
from (engines/fit.py), for any variant with a feature module (engines/features.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from engines.features import equity, flip
from engines.network import Network
from nardy.match import DEFAULT_VARIANT

MAX_TURNS = 1500


def self_play(
    net: Network, rng: random.Random, visit: Callable | None = None
) -> tuple[list[Any], np.ndarray]:
    """One game of the network against itself at 0 ply: the positions before each turn
    and the outcome for the side to move in the final position: the end of the game (the
    side to move has lost) or, with ``net.bearoff``, the first position whose values are
    exact (``Features.stop``: both sides all home, valued by the bear-off tables; with
    ``net.races`` in long nardy, the first race, valued by the tables' race model).
    ``visit(position, end_boards, values)`` sees each turn's legal plays (their packed end
    boards and values for the mover) before the best is played."""
    f = net.features
    pos = f.start()
    states = []
    first = True
    while True:
        if net.bearoff and f.stop(pos, net.races):
            return states, net.values([pos])[0]
        states.append(pos)
        if len(states) > MAX_TURNS:
            raise RuntimeError("self-play game did not finish")
        dice = f.first_roll(rng) if first else (rng.randint(1, 6), rng.randint(1, 6))
        first = False
        boards = f.end_boards(pos, dice)  # the legal plays' end boards, in legal_plays order
        if not boards:
            pos = f.rules.passed(pos)
            continue
        turn = pos.turn.opponent
        v = flip(net.board_values(boards, turn))
        if visit is not None:
            visit(pos, boards, v)
        best = int(np.argmax(equity(v)))
        pos = f.position(boards[best * f.width : (best + 1) * f.width], turn)
        if f.over(pos):  # the side to move has lost, by how much (RULES.md §5, §8)
            return states, f.loss(pos)


def td_targets(v: np.ndarray, outcome: np.ndarray, lam: float) -> np.ndarray:
    """The lambda-returns ``G_t`` for values ``v`` (T, outputs) of a game's positions, each
    for its side to move, and the outcome for the side to move after the last turn."""
    g = np.empty_like(v)
    nxt = flip(outcome)
    g[-1] = nxt
    for t in range(len(v) - 2, -1, -1):
        g[t] = flip((1.0 - lam) * v[t + 1] + lam * g[t + 1])
    return g


def game_rng(seed: int, game: int, variant: str = DEFAULT_VARIANT) -> random.Random:
    """The dice of game ``game`` of a training run with ``seed`` (long nardy's runs keep
    the seeds they had before there were two variants)."""
    tag = "nardy-train" if variant == DEFAULT_VARIANT else f"nardy-train-{variant}"
    return random.Random(f"{tag}:{seed}:{game}")
