"""Game records: a plain-text match-record format, JSON, and checking by the rules.

The text format (in the spirit of gnubg's .mat files) holds one or more games of a match::

    ; nardy record 1
    [Game 1]
    Variant: long
    White: alice
    Black: bob
    Match: 3
    TimeControl: 120000 ms per turn
    Date: 2026-11-30T03:00:00Z
    Result: white mars 2 normal
    Score: 2-0
      1 w 6-5 24/18 18/13
      2 b 3-3 24/21 24/21 21/18 21/18
      3 w 6-6 -

Header lines are ``Key: value``; the keys known to the reader are listed in ``HEADERS``,
others are kept as they are. ``Variant:`` names the rules (``long`` when absent, or
``short``); positions, notation and results are the variant's. ``Start:`` gives a position
text when the game did not start from the usual start; ``Rules:`` the house rules it was
played with (``koks``). Turn lines are ``<n> <w|b> <d1>-<d2>
<play>``, the play in RULES.md notation (``-`` when no legal play existed). ``Result:`` is
``<winner> <kind> <points> <normal|timeout|resignation|abandonment|illegal-plays>`` with the
variant's kind (``oin|mars|koks``, ``single|gammon|backgammon``); a game without it is
unfinished. Lines starting with ``;`` are comments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nardy.dice import parse_dice
from nardy.game import Color, GameResult, IllegalPlay, Termination
from nardy.match import DEFAULT_VARIANT
from nardy.variant import Variant, variant

MAGIC = "; nardy record 1"
HEADERS = (
    "Variant",
    "White",
    "Black",
    "Match",
    "TimeControl",
    "Date",
    "Start",
    "Rules",
    "Seed",
    "Result",
    "Score",
    "Game",
)
_TURN = re.compile(r"^\s*(\d+)\s+([wb])\s+([1-6]-[1-6])\s+(.+?)\s*$", re.ASCII)
_GAME = re.compile(r"\[Game (\d+)\]", re.ASCII)


class RecordError(ValueError):
    """A record that cannot be read or breaks the rules; the message says where and why."""


@dataclass(frozen=True)
class TurnRecord:
    side: Color
    dice: tuple[int, int]
    play: str  # notation, "-" for a turn with no legal play


@dataclass
class GameRecord:
    headers: dict[str, str] = field(default_factory=dict)
    start: Any = None  # a position of the record's variant; None: the variant's start
    turns: list[TurnRecord] = field(default_factory=list)
    result: GameResult | None = None

    def __post_init__(self) -> None:
        if self.start is None:
            self.start = self.rules.start()

    @property
    def number(self) -> int:
        return int(self.headers.get("Game", "1"))

    @property
    def rules(self) -> Variant:
        """The game's variant, named by the ``Variant`` header (long nardy if absent)."""
        return variant(self.headers.get("Variant", DEFAULT_VARIANT))

    @property
    def house_rules(self) -> frozenset[str]:
        """The house rules the game was played with (``Rules: koks``); a record without the
        header but with a koks result was played with koks."""
        named = {r.strip() for r in self.headers.get("Rules", "").split(",") if r.strip()}
        if self.result is not None and self.result.kind == "koks":
            named.add("koks")
        return frozenset(named)


# -- text ---------------------------------------------------------------------------------
def result_text(r: GameResult) -> str:
    return f"{r.winner.name.lower()} {r.kind} {r.points} {r.termination}"


def parse_result(text: str, rules: Variant) -> GameResult:
    parts = text.split()
    if len(parts) != 4 or parts[0] not in ("white", "black"):
        raise ValueError(f"expected '<white|black> <kind> <points> <how>', got {text!r}")
    winner = Color.WHITE if parts[0] == "white" else Color.BLACK
    kind, how = rules.kind(parts[1]), Termination(parts[3])
    r = GameResult(winner, kind, how)
    if str(r.points) != parts[2]:
        raise ValueError(f"{kind} is worth {r.points} points, not {parts[2]}")
    return r


def dumps(games: list[GameRecord]) -> str:
    """The text form of a match's games."""
    out = [MAGIC]
    for g in games:
        out.append(f"[Game {g.number}]")
        headers = dict(g.headers)
        headers.pop("Game", None)
        if g.start != g.rules.start():
            headers["Start"] = g.start.text()
        if g.result is not None:
            headers["Result"] = result_text(g.result)
        for key, value in headers.items():
            out.append(f"{key}: {value}")
        for n, t in enumerate(g.turns, 1):
            out.append(f"{n:4d} {t.side.letter} {t.dice[0]}-{t.dice[1]} {t.play}")
    return "\n".join(out) + "\n"


def loads(text: str) -> list[GameRecord]:
    """Read the text form; RecordError naming the line on anything malformed."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != MAGIC:
        raise RecordError(f"line 1: not a nardy record (expected {MAGIC!r})")
    games: list[GameRecord] = []
    pending: dict[str, tuple[int, str]] = {}  # Start and Result, read once the Variant is known

    def settle() -> None:
        """Read the last game's Start and Result by its variant."""
        game = games[-1]
        for key, (lineno, value) in pending.items():
            try:
                if key == "Start":
                    game.start = game.rules.parse(value)
                else:
                    game.result = parse_result(value, game.rules)
            except ValueError as e:
                raise RecordError(f"line {lineno}: {e}") from None
        pending.clear()

    for lineno, raw in enumerate(lines[1:], 2):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        if m := _GAME.fullmatch(line):
            if games:
                settle()
            games.append(GameRecord(headers={"Game": m.group(1)}))
            continue
        if not games:
            raise RecordError(f"line {lineno}: expected '[Game N]' before anything else")
        game = games[-1]
        try:
            if m := _TURN.match(raw):
                settle()
                n, side, dice, play = m.groups()
                if int(n) != len(game.turns) + 1:
                    raise ValueError(f"turn {n} out of order (expected {len(game.turns) + 1})")
                game.turns.append(TurnRecord(Color.from_letter(side), parse_dice(dice), play))
            elif ":" in line and not game.turns:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key in ("Start", "Result"):
                    pending[key] = (lineno, value)
                else:
                    if key == "Variant":
                        variant(value)  # ValueError naming the known variants
                        game.start = None
                    game.headers[key] = value
                    if game.start is None:
                        game.start = game.rules.start()
            else:
                raise ValueError(f"cannot read {line!r}")
        except ValueError as e:
            raise RecordError(f"line {lineno}: {e}") from None
    if not games:
        raise RecordError("the record holds no game")
    settle()
    return games


def load(path: str | Path) -> list[GameRecord]:
    """Read a record file, text or JSON (by content)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not a text file") from None
    if text.lstrip().startswith("{"):
        return from_json(text)
    return loads(text)


# -- JSON ---------------------------------------------------------------------------------
def to_json(games: list[GameRecord]) -> str:
    return json.dumps(
        {
            "format": "nardy-record",
            "version": 1,
            "games": [
                {
                    "headers": g.headers,
                    "start": g.start.text(),
                    "turns": [
                        {"side": t.side.letter, "dice": list(t.dice), "play": t.play}
                        for t in g.turns
                    ],
                    "result": result_text(g.result) if g.result else None,
                }
                for g in games
            ],
        },
        indent=1,
    )


def from_json(text: str) -> list[GameRecord]:
    try:
        data = json.loads(text)
        if data.get("format") != "nardy-record":
            raise ValueError("not a nardy record (format field)")
        games = []
        for i, g in enumerate(data["games"], 1):
            turns = [
                TurnRecord(
                    Color.from_letter(t["side"]),
                    parse_dice(f"{t['dice'][0]}{t['dice'][1]}"),
                    str(t["play"]),
                )
                for t in g["turns"]
            ]
            game = GameRecord(
                headers={str(k): str(v) for k, v in g.get("headers", {}).items()}, turns=turns
            )
            if g.get("start"):
                game.start = game.rules.parse(g["start"])
            if g.get("result"):
                game.result = parse_result(g["result"], game.rules)
            games.append(game)
            games[-1].headers.setdefault("Game", str(i))
        return games
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise RecordError(f"JSON record: {e}") from None


# -- checking -----------------------------------------------------------------------------
def replay(game: GameRecord, *, house_rules: Iterable[str] = ()) -> list:
    """Every position of the game, start first, checking each turn by its variant's rules
    (with the record's own house rules and ``house_rules`` on, e.g. long nardy's ``koks``).

    Raises RecordError naming the first illegal turn: wrong side, an illegal play, a pass
    when a play existed, turns after the end, or a result that does not match the board.
    """
    rules = game.rules
    house_rules = frozenset(house_rules) | game.house_rules
    pos = game.start
    positions = [pos]
    for n, t in enumerate(game.turns, 1):
        where = f"game {game.number} turn {n} ({t.side.letter} {t.dice[0]}-{t.dice[1]} {t.play})"
        if rules.result(pos, house_rules) is not None:
            raise RecordError(f"{where}: the game was already over")
        if t.side is not pos.turn:
            raise RecordError(f"{where}: it was {pos.turn.name.lower()}'s turn")
        if t.play.strip() == "-":
            if rules.legal_plays(pos, t.dice):
                raise RecordError(f"{where}: a legal play existed; passing is not allowed")
            pos = rules.passed(pos)
        else:
            try:
                pos = rules.match_play(pos, t.dice, t.play).end
            except (IllegalPlay, ValueError) as e:
                raise RecordError(f"{where}: {e}") from None
        positions.append(pos)
    natural = rules.result(pos, house_rules)
    if game.result is not None:
        r = game.result
        if r.termination is Termination.NORMAL:
            if natural != r:
                raise RecordError(
                    f"game {game.number}: the result {result_text(r)} does not "
                    "match the final position"
                )
        elif natural is not None or rules.forfeit(pos, r.loser, r.termination) != r:
            raise RecordError(
                f"game {game.number}: the result {result_text(r)} does not match the final position"
            )
    return positions
