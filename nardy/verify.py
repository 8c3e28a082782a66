"""Checking a game's dice against the server's commitment (provably fair dice).

The arbiter commits to a secret server seed before a game (its SHA-256, ``DiceCommitment``),
each seat may add a client seed, and the server seed is revealed when the game has ended.
:func:`verify` recomputes the commitment and every die of a record (the opening throws,
then each turn's two dice, see :func:`nardy.dice.keyed_die`) and names the first that does
not match.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from nardy.dice import commitment, keyed_die, parse_dice
from nardy.record import GameRecord


@dataclass(frozen=True)
class Verdict:
    fair: bool
    message: str


def _throws(text: str) -> list[tuple[int, int]]:
    return [parse_dice(part) for part in text.split() if part != "none"]


def verify(game: GameRecord) -> Verdict:
    """``fair`` when the revealed server seed matches the commitment and gives every die of
    the record; otherwise the first thing that does not match."""
    h = game.headers
    where = f"game {game.number}"
    committed = h.get("DiceCommitment", "")
    revealed = h.get("ServerSeed", "")
    if not committed:
        return Verdict(False, f"{where}: the record has no DiceCommitment")
    if not revealed:
        return Verdict(
            False, f"{where}: the server seed is not revealed yet (the game or its pair is on)"
        )
    try:
        server_seed = bytes.fromhex(revealed)
        client_seeds = [str(s) for s in json.loads(h.get("ClientSeeds", "[]"))]
        opening = _throws(h.get("Opening", ""))
    except ValueError as e:
        return Verdict(False, f"{where}: unreadable dice headers ({e})")
    if commitment(server_seed) != committed:
        return Verdict(False, f"{where}: the server seed does not match its commitment")
    k = 0

    def expected() -> tuple[int, int]:
        nonlocal k
        k += 2
        return keyed_die(server_seed, client_seeds, k - 2), keyed_die(
            server_seed, client_seeds, k - 1
        )

    for n, throw in enumerate(opening, 1):
        want = expected()
        if throw != want:
            return Verdict(
                False,
                f"{where}: opening throw {n} is {throw[0]}-{throw[1]} in the record, "
                f"the seeds give {want[0]}-{want[1]} (dice {k - 2}, {k - 1})",
            )
    opening_dice = h.get("OpeningRule") == "use-opening-dice" and opening
    for n, turn in enumerate(game.turns, 1):
        if n == 1 and opening_dice:
            a, b = opening[-1]
            want = (max(a, b), min(a, b))
            source = "the opening throw"
        else:
            want = expected()
            source = f"dice {k - 2}, {k - 1}"
        if tuple(sorted(turn.dice)) != tuple(sorted(want)):
            return Verdict(
                False,
                f"{where}: turn {n} ({turn.side.letter}) has {turn.dice[0]}-{turn.dice[1]} in "
                f"the record, the seeds give {want[0]}-{want[1]} ({source})",
            )
    note = ""
    if h.get("Dice") == "seeded":
        note = " (a seeded game: its creator chose the seed or the dice)"
    return Verdict(
        True,
        f"{where}: the server seed matches its commitment and gives all "
        f"{k} dice of {len(opening)} opening throws and {len(game.turns)} turns{note}",
    )
