"""Checking a game's dice against the server's commitment (provably fair dice).

The arbiter commits to a secret server seed before a game (its SHA-256, ``DiceCommitment``),
each seat may add a client seed, and the server seed is revealed when the game has ended.
:func:`verify` recomputes the commitment and every die of a record (the opening throws,
then each turn's two dice, see :func:`nardy.dice.keyed_die`) and names the first that does
not match. A game whose dice its creator chose (a public seed, scripted dice) is reported
as not a fair-dice game, never as a mismatch: the dice after a script are still checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from nardy.dice import commitment, keyed_die, parse_dice
from nardy.record import GameRecord


@dataclass(frozen=True)
class Verdict:
    """``fair``: the dice are what the seeds (and a script) give. ``chosen``: the game's
    creator chose its dice (a public seed, scripted dice), so it is not a fair-dice game
    whatever ``fair`` says."""

    fair: bool
    message: str
    chosen: bool = False


def _throws(text: str) -> list[tuple[int, int]]:
    return [parse_dice(part) for part in text.split() if part != "none"]


def _matches(got: tuple[int, ...], want: tuple[int | None, int | None], ordered: bool) -> bool:
    """Does a recorded throw agree with the dice expected (None: a scripted die, any value)?"""
    if ordered:
        return all(w is None or g == w for g, w in zip(got, want, strict=True))
    rest = list(got)
    for w in want:
        if w is not None:
            if w not in rest:
                return False
            rest.remove(w)
    return True


def _shown(want: tuple[int | None, int | None]) -> str:
    return "-".join("?" if w is None else str(w) for w in want)


def verify(game: GameRecord) -> Verdict:
    """``fair`` when the revealed server seed matches the commitment and gives every die of
    the record (but a scripted one); otherwise the first thing that does not match. A game
    whose dice its creator chose (``DiceSeed: public``, ``ScriptedDice: N``) is ``chosen``."""
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
        scripted = int(h.get("ScriptedDice", "0"))
    except ValueError as e:
        return Verdict(False, f"{where}: unreadable dice headers ({e})")
    public = h.get("DiceSeed") == "public"
    set_up = h.get("Dice") == "seeded"
    if commitment(server_seed) != committed:
        return Verdict(False, f"{where}: the server seed does not match its commitment")
    k = 0

    def die() -> int | None:
        nonlocal k
        k += 1
        return None if k - 1 < scripted else keyed_die(server_seed, client_seeds, k - 1)

    def mismatch(text: str) -> Verdict:
        if set_up and not scripted and not public:
            text += " (a set-up game: if its creator scripted the dice, the record does not say)"
        return Verdict(False, f"{where}: {text}")

    for n, throw in enumerate(opening, 1):
        want = (die(), die())
        if not _matches(throw, want, ordered=True):
            return mismatch(
                f"opening throw {n} is {throw[0]}-{throw[1]} in the record, the seeds give "
                f"{_shown(want)} (dice {k - 2}, {k - 1})"
            )
    opening_dice = h.get("OpeningRule") == "use-opening-dice" and opening
    for n, turn in enumerate(game.turns, 1):
        if n == 1 and opening_dice:
            a, b = opening[-1]
            want: tuple[int | None, int | None] = (max(a, b), min(a, b))
            source = "the opening throw"
        else:
            want = (die(), die())
            source = f"dice {k - 2}, {k - 1}"
        if not _matches(tuple(turn.dice), want, ordered=False):
            return mismatch(
                f"turn {n} ({turn.side.letter}) has {turn.dice[0]}-{turn.dice[1]} in the "
                f"record, the seeds give {_shown(want)} ({source})"
            )
    counted = f"{k} dice of {len(opening)} opening throws and {len(game.turns)} turns"
    if public:
        return Verdict(
            True,
            f"{where}: its dice come from a public seed its creator chose, so every throw "
            f"was known in advance; all {counted} match that seed",
            chosen=True,
        )
    if scripted:
        shown = min(scripted, k)
        return Verdict(
            True,
            f"{where}: its creator scripted the first {scripted} dice ({shown} of them "
            f"thrown); the other {k - shown} of the {counted} follow the committed seeds",
            chosen=True,
        )
    note = " (a set-up game: a chosen start or colour; the dice are fair)" if set_up else ""
    return Verdict(
        True, f"{where}: the server seed matches its commitment and gives all {counted}{note}"
    )
