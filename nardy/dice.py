"""Dice: reading ``65`` / ``6-5``, and provably fair throws from a committed server seed."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
import secrets
from collections.abc import Sequence

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


DOMAIN = b"nardy-dice-v1"
MAX_CLIENT_SEED = 64
_CLIENT_SEED = re.compile(r"[A-Za-z0-9._:+/=-]{0,64}")


def check_client_seed(text: str) -> str:
    """A client seed as a seat may give it: up to 64 of ``A-Z a-z 0-9 . _ : + / = -``."""
    if not _CLIENT_SEED.fullmatch(text):
        raise ValueError(
            f"a client seed is at most {MAX_CLIENT_SEED} letters, digits or . _ : + / = -"
        )
    return text


def commitment(server_seed: bytes) -> str:
    """What the server publishes before the game: hex SHA-256 of the server seed."""
    return hashlib.sha256(server_seed).hexdigest()


def seeded_server_seed(seed: int, game_number: int) -> bytes:
    """The server seed of game ``game_number`` of a match created with a public ``seed``."""
    return hashlib.sha256(
        b"nardy-seed" + seed.to_bytes(8, "big") + game_number.to_bytes(4, "big")
    ).digest()


def keyed_die(server_seed: bytes, client_seeds: Sequence[str], k: int) -> int:
    """Die ``k`` (0, 1, 2, ...) of a game: HMAC-SHA-256 in counter mode, without bias.

    For j = 0, 1, ...: d = HMAC-SHA-256(server_seed, DOMAIN | each client seed as a
    2-byte big-endian length and its UTF-8 bytes | k as 8 bytes | j as 4 bytes, big-endian);
    the die is 1 + b % 6 for the first byte b of d below 252 (rejection sampling: 252 is
    the largest multiple of 6 that fits a byte, so every face has 42 of the 252 values).
    """
    prefix = bytearray(DOMAIN)
    for seed in client_seeds:
        data = seed.encode()
        prefix += len(data).to_bytes(2, "big") + data
    prefix += k.to_bytes(8, "big")
    for j in itertools.count():
        digest = hmac.digest(server_seed, bytes(prefix) + j.to_bytes(4, "big"), "sha256")
        for b in digest:
            if b < 252:
                return 1 + b % 6
    raise AssertionError("unreachable")


class Dice:
    """The dice of one game: die k is scripted (the first ``len(script)`` dice, for
    lessons and tests) or the keyed generator of :func:`keyed_die`.

    The server seed is secret until the game ends; ``commitment`` is published from the
    start. ``client_seeds`` are fixed when the game starts, before the first die.
    """

    def __init__(
        self,
        server_seed: bytes | None = None,
        script: Sequence[int] = (),
        client_seeds: Sequence[str] = (),
    ) -> None:
        if any(not 1 <= d <= 6 for d in script):
            raise ValueError("scripted dice must be 1..6")
        self.server_seed = server_seed if server_seed is not None else secrets.token_bytes(32)
        self.commitment = commitment(self.server_seed)
        self.script = tuple(script)
        self.client_seeds = tuple(client_seeds)
        self.rolled = 0  # dice thrown so far: die ``rolled`` is the next one

    def at(self, k: int) -> int:
        if k < len(self.script):
            return self.script[k]
        return keyed_die(self.server_seed, self.client_seeds, k)

    def die(self) -> int:
        value = self.at(self.rolled)
        self.rolled += 1
        return value

    def roll(self) -> tuple[int, int]:
        return self.die(), self.die()
