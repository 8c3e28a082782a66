"""Duplicate pairs without foresight: the two games of a pair throw in lockstep.

Both games of a ladder pair throw the same dice (one server seed, the same client seeds), so
whoever could see one game ahead of the other would know the other's coming throws. Here die
k of either game is thrown only once every game of the pair has reached die k (or ended):
throw k is made in both at once, and nobody, seat or spectator, learns a throw of one game
before it is made in the other. A game waits between turns, when no clock runs.
"""

from __future__ import annotations

import math
from typing import Protocol

import trio


class PairGame(Protocol):
    id: str
    client_seeds: list[str]


class Lockstep:
    """The games of one duplicate pair and how far each has thrown."""

    def __init__(self, pair_id: str, size: int = 1) -> None:
        self.pair_id = pair_id
        self.size = size  # no game throws until this many games have joined
        self.games: list[PairGame] = []
        self.reached: dict[str, float] = {}  # game id -> the die it waits to throw
        self._moved = trio.Event()

    def add(self, game: PairGame) -> None:
        self.games.append(game)
        self.reached.setdefault(game.id, -1)

    def discard(self, game: PairGame) -> None:
        self.games = [g for g in self.games if g is not game]
        self.reached.pop(game.id, None)

    def client_seeds(self) -> list[str]:
        """Every seat's client seed, game by game in pair order (fixed once all started)."""
        return [seed for game in self.games for seed in game.client_seeds]

    async def at(self, game: PairGame, k: int) -> None:
        """Wait until every game of the pair has reached die ``k`` (or ended)."""
        self.reached[game.id] = k
        self._wake()
        while len(self.games) < self.size or min(self.reached.values()) < k:
            moved = self._moved
            await moved.wait()
        await trio.lowlevel.checkpoint()

    def reached_by_all(self, game: PairGame, k: int) -> bool:
        """``game`` has reached die ``k``: may it throw it now, without waiting (``at``)?"""
        self.reached[game.id] = k
        self._wake()
        return len(self.games) >= self.size and min(self.reached.values()) >= k

    def ended(self, game: PairGame) -> None:
        self.reached[game.id] = math.inf
        if self.over:  # nothing more is thrown: let go of the games (each refers to its pair)
            self.games = []
        self._wake()

    @property
    def over(self) -> bool:
        """Every game of the pair is here and has ended (then its seed may be shown)."""
        return len(self.reached) >= self.size and all(r == math.inf for r in self.reached.values())

    def _wake(self) -> None:
        self._moved.set()
        self._moved = trio.Event()
