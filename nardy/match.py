"""Game options, the opening throw and match scoring to N points (RULES.md §2, §5)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from nardy.game import GameResult

# The variant a game is played by when none is named (the protocol's empty ``variant``).
DEFAULT_VARIANT = "long"


class Opening(StrEnum):
    FRESH_ROLL = "fresh-roll"  # white throws both dice for its first turn (default)
    USE_OPENING_DICE = "use-opening-dice"  # seed 002: the opening dice are white's first roll


class Colours(StrEnum):
    ALTERNATE = "alternate"  # default: colours swap every game after the first throw
    THROW_EACH_GAME = "throw-each-game"


@dataclass(frozen=True, slots=True)
class GameOptions:
    """The rule options a game or match is created with (RULES.md variant options).

    ``rules`` holds the variant's house rules that are on (long nardy: ``koks``); the
    variant refuses the ones it does not have (:meth:`nardy.variant.Variant.check`).
    """

    variant: str = DEFAULT_VARIANT
    rules: frozenset[str] = frozenset()
    opening: Opening = Opening.FRESH_ROLL
    colours: Colours = Colours.ALTERNATE


def opening_throw(roll: Callable[[], int]) -> list[tuple[int, int]]:
    """Each player throws one die until they differ; returns every throw ``(a, b)``.

    ``a`` is the first player's die, ``b`` the second's; the last throw decides: the
    higher die plays white (RULES.md §2).
    """
    throws = []
    while True:
        a, b = roll(), roll()
        throws.append((a, b))
        if a != b:
            return throws


@dataclass
class Match:
    """A match between players 0 and 1 to ``target`` points."""

    target: int
    options: GameOptions = field(default_factory=GameOptions)
    scores: list[int] = field(default_factory=lambda: [0, 0])
    games: list[tuple[int, GameResult]] = field(default_factory=list)  # (white player, result)

    def __post_init__(self) -> None:
        if self.target < 1:
            raise ValueError("a match is played to at least 1 point")

    def record(self, white_player: int, result: GameResult) -> None:
        """Add a finished game; ``white_player`` is the player (0 or 1) who played white."""
        if self.over:
            raise ValueError("the match is already over")
        winner = white_player if result.winner == 0 else 1 - white_player
        self.scores[winner] += result.points
        self.games.append((white_player, result))

    @property
    def over(self) -> bool:
        return max(self.scores) >= self.target

    @property
    def winner(self) -> int | None:
        if not self.over:
            return None
        return 0 if self.scores[0] >= self.target else 1

    def alternating_white(self) -> int | None:
        """Who plays white in the next game when no throw is needed: after the first game,
        with colours alternating (RULES.md §2); None when a throw decides."""
        if self.games and self.options.colours is Colours.ALTERNATE:
            return 1 - self.games[-1][0]
        return None

    def next_white(self, throw: Callable[[], list[tuple[int, int]]]) -> tuple[int, list]:
        """Who plays white in the next game, and the opening throws made to decide it.

        The first game (and every game with ``colours = throw-each-game``) is decided by
        the single-die throw; after that colours alternate (RULES.md §2).
        """
        white = self.alternating_white()
        if white is not None:
            return white, []
        throws = throw()
        a, b = throws[-1]
        return (0 if a > b else 1), throws
