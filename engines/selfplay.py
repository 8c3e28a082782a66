"""Self-play games of the value network at 0 ply and their lambda-returns: the games that
TD(lambda) learns from (engines/train.py) and that the fitting rounds draw their positions
from (engines/fit.py)."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from engines.network import POINTS, Network, both_home, equity, flip, in_race
from nardy import Kind, Position, end_boards, result

MAX_TURNS = 1500


def self_play(
    net: Network, rng: random.Random, visit: Callable | None = None
) -> tuple[list[Position], np.ndarray]:
    """One game of the network against itself at 0 ply: the positions before each turn
    and the outcome for the side to move in the final position: the end of the game (the
    side to move has lost) or, with ``net.bearoff``, the first position with both sides
    all home, whose values the bear-off tables give exactly (engines/bearoff.py), or with
    ``net.races`` too, the first race position, valued by the tables' race model.
    ``visit(position, end_boards, values)`` sees each turn's legal plays (their packed end
    boards and values for the mover) before the best is played."""
    pos = Position.start()
    states = []
    stop = in_race if net.races else both_home
    while True:
        if net.bearoff and stop(pos):
            return states, net.values([pos])[0]
        states.append(pos)
        if len(states) > MAX_TURNS:
            raise RuntimeError("self-play game did not finish")
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        boards = end_boards(pos, dice)  # the legal plays' end boards, in legal_plays order
        if not boards:
            pos = pos.passed()
            continue
        turn = pos.turn.opponent
        v = flip(net.board_values(boards, turn))
        if visit is not None:
            visit(pos, boards, v)
        best = int(np.argmax(equity(v)))
        pos = Position(turn, tuple(np.frombuffer(boards, np.int8, POINTS, best * POINTS).tolist()))
        won = result(pos)
        if won is not None:  # the side to move has lost, by mars or by oin (RULES.md §5)
            return states, np.array([0.0, 0.0, 1.0 if won.kind is Kind.MARS else 0.0])


def td_targets(v: np.ndarray, outcome: np.ndarray, lam: float) -> np.ndarray:
    """The lambda-returns ``G_t`` for values ``v`` (T, 3) of a game's positions, each for
    its side to move, and the outcome for the side to move after the last turn."""
    g = np.empty_like(v)
    nxt = flip(outcome)
    g[-1] = nxt
    for t in range(len(v) - 2, -1, -1):
        g[t] = flip((1.0 - lam) * v[t + 1] + lam * g[t + 1])
    return g


def game_rng(seed: int, game: int) -> random.Random:
    return random.Random(f"nardy-train:{seed}:{game}")
