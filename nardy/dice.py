"""Dice: reading ``65`` / ``6-5`` and rolling from a CSPRNG or, for replays, a seed."""

from __future__ import annotations

import random
import re
import secrets

_DICE = re.compile(r"^\s*([0-9])\s*[-,/ ]?\s*([0-9])\s*$")


def parse_dice(text: str) -> tuple[int, int]:
    """``65``, ``6-5`` or ``6,5`` -> (6, 5); ValueError naming the problem otherwise."""
    m = _DICE.match(text)
    if not m:
        raise ValueError(f"dice must be two numbers 1-6 such as 65 or 6-5, not {text!r}")
    a, b = int(m.group(1)), int(m.group(2))
    for d in (a, b):
        if not 1 <= d <= 6:
            raise ValueError(f"a die shows 1 to 6, not {d}")
    return a, b


class Dice:
    """A source of die throws: ``secrets`` by default; a seeded PRNG and/or a script of
    throws when asked (tests, replays, duplicate-dice pairs)."""

    def __init__(self, seed: int | None = None, script: list[int] | tuple[int, ...] = ()) -> None:
        if any(not 1 <= d <= 6 for d in script):
            raise ValueError("scripted dice must be 1..6")
        self.seed = seed
        self.script = list(script)
        self.rolled = 0  # dice thrown so far (to pick up a seeded sequence after a restart)
        self._rng = random.Random(seed) if seed is not None else secrets.SystemRandom()

    @property
    def fair(self) -> bool:
        """True when every throw comes from the CSPRNG."""
        return self.seed is None and not self.script

    def die(self) -> int:
        self.rolled += 1
        if self.script:
            return self.script.pop(0)
        return self._rng.randint(1, 6)

    def roll(self) -> tuple[int, int]:
        return self.die(), self.die()

    def skip(self, n: int) -> None:
        """Throw ``n`` dice away: the state after ``n`` throws of the same seed and script."""
        for _ in range(n):
            self.die()
