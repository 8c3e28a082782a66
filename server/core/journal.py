"""The journal: what a game records (events and their snapshots) and its one encoding.

Every change the arbiter makes is written to the store as a row; this module is the only
place that turns domain objects into those rows (``encode_*``) and rows back into domain
objects (``decode_*``), so that the SQLite and PostgreSQL stores and recovery agree by
construction. It imports only the rules library: sessions, stores and recovery import it.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from nardy.game import Color, GameResult, Termination
from nardy.variant import GamePlay, GamePosition, Variant


class Status(IntEnum):
    WAITING = 1
    IN_PROGRESS = 2
    FINISHED = 3
    ABORTED = 4


class EventType(IntEnum):
    SNAPSHOT = 1
    GAME_STARTED = 2
    TURN_STARTED = 3
    PLAY_MADE = 4
    TURN_PASSED = 5
    GAME_FINISHED = 6
    GAME_ABORTED = 7
    HEARTBEAT = 8
    SERVER_SHUTDOWN = 9


@dataclass(frozen=True)
class PlayRecord:
    side: Color
    dice: tuple[int, int]
    notation: str
    turn_id: int
    automatic: bool
    used_ms: int


class Snapshot(NamedTuple):
    """Everything a GameState message shows, frozen at one moment (a tuple: built for
    every event, and held by every event a live game keeps)."""

    status: Status
    position: GamePosition
    dice: tuple[int, ...]
    turn_id: int
    clocks: tuple[tuple[int, int], tuple[int, int]]  # per colour: (remaining_ms, bank_ms)
    scores: tuple[int, int]  # white's, black's match points
    match_over: bool
    result: GameResult | None
    legal: tuple[GamePlay, ...]  # for the side to move while a play is awaited
    next_game_id: str
    refused: tuple[int, int]  # plays refused as illegal: white's, black's
    white_seat: int | None = None  # the seat playing white, once known
    client_seeds: tuple[str, ...] = ()  # the dice's client seeds, once the game has started
    server_seed: str = ""  # hex, once revealed (the game, and its pair, has ended)
    challenge_pending: bool = False  # its match waits for the challenged player's answer


@dataclass(slots=True)
class Event:
    """One journal entry of a game; ``views`` caches the encoded message per audience."""

    seq: int
    type: EventType
    time: float
    snapshot: Snapshot
    play: PlayRecord | None = None
    throws: tuple[tuple[int, int], ...] = ()
    views: dict = field(default_factory=dict)


# -- events -----------------------------------------------------------------------------
_COMPACT = json.JSONEncoder(separators=(",", ":"))  # json.dumps would make one per entry


def encode_event(event: Event, white_seat: int | None, rolled: int) -> bytes:
    """A compact journal entry: everything needed to rebuild the event, as JSON.

    ``white_seat`` is recorded with GAME_STARTED; ``rolled`` (dice thrown so far in the
    game) lets recovery continue the game's dice exactly where they were.
    """
    s = event.snapshot
    entry: dict[str, Any] = {
        "status": int(s.status),
        "position": s.position.text(),
        "dice": list(s.dice),
        "turn": s.turn_id,
        "clocks": s.clocks,
        "scores": s.scores,
        "over": s.match_over,
        "next": s.next_game_id,
        "refused": s.refused,
        "result": _result_entry(s.result),
    }
    if s.white_seat is not None:
        entry["ws"] = s.white_seat
    if s.client_seeds:
        entry["cs"] = list(s.client_seeds)
    if s.server_seed:
        entry["ss"] = s.server_seed
    if event.play is not None:
        p = event.play
        entry["play"] = [p.side.letter, list(p.dice), p.notation, p.turn_id, p.automatic, p.used_ms]
    if event.throws:
        entry["throws"] = event.throws
    if event.type is EventType.GAME_STARTED:
        entry["white_seat"] = white_seat
    entry["rolled"] = rolled
    return _COMPACT.encode(entry).encode()


def _result_entry(r: GameResult | None) -> list | None:
    return None if r is None else [r.winner.letter, str(r.kind), str(r.termination)]


def decode_result(data: list | None, rules: Variant) -> GameResult | None:
    if not data:
        return None
    winner, kind, how = data
    return GameResult(Color.from_letter(winner), rules.kind(kind), Termination(how))


#: The format of an archived game's journal (``archive.journal``): zlib-compressed JSON,
#: one ``[seq, type, time, data]`` per entry with ``data`` the events row's text as it was.
ARCHIVE_FORMAT = 1


def pack_entries(rows: list[tuple]) -> bytes:
    """A game's journal rows ``(seq, type, time, data)`` as one archive value (nothing
    lost: :func:`unpack_entries` gives back the same rows, the data byte for byte)."""
    entries = [[seq, kind, t, bytes(data).decode()] for seq, kind, t, data in rows]
    return zlib.compress(json.dumps(entries, separators=(",", ":")).encode(), 6)


def unpack_entries(form: int, packed: bytes | memoryview) -> list[tuple]:
    """The journal rows of an archive value (see :func:`pack_entries`)."""
    if form != ARCHIVE_FORMAT:
        raise ValueError(f"archive format {form} is not one this server reads")
    entries = json.loads(zlib.decompress(packed))
    return [(seq, kind, t, data.encode()) for seq, kind, t, data in entries]


def entry_of(data: bytes | str | memoryview) -> dict:
    """The JSON entry of an events row (``data`` as the store returns it)."""
    return json.loads(bytes(data) if isinstance(data, memoryview) else data)


def decode_event(seq: int, kind: int, when: float, e: dict, rules: Variant) -> Event:
    """One journal entry (see encode_event) of a game of ``rules`` as an event."""
    snap = Snapshot(
        status=Status(e["status"]),
        position=rules.parse(e["position"]),
        dice=tuple(e["dice"]),
        turn_id=e["turn"],
        clocks=(tuple(e["clocks"][0]), tuple(e["clocks"][1])),
        scores=tuple(e["scores"]),
        match_over=e["over"],
        result=decode_result(e["result"], rules),
        legal=(),
        next_game_id=e["next"],
        refused=tuple(e["refused"]),
        white_seat=e.get("ws", e.get("white_seat")),
        client_seeds=tuple(e.get("cs", ())),
        server_seed=e.get("ss", ""),
    )
    play = None
    if "play" in e:
        side, dice, notation, turn_id, automatic, used = e["play"]
        play = PlayRecord(Color.from_letter(side), tuple(dice), notation, turn_id, automatic, used)
    throws = tuple(tuple(t) for t in e.get("throws", ()))
    return Event(seq, EventType(kind), when, snap, play, throws)


# -- games, matches and ladder results ----------------------------------------------------
def encode_game_result(r: GameResult | None) -> str | None:
    """The ``games.result`` column."""
    if r is None:
        return None
    return json.dumps(
        {
            "winner": r.winner.letter,
            "kind": str(r.kind),
            "points": r.points,
            "termination": str(r.termination),
        }
    )


def encode_json(value: Any) -> str:
    """A plain JSON column (match scores, ladder options, a ladder's books)."""
    return json.dumps(value)


def decode_json(text: str) -> Any:
    """A plain JSON column's value."""
    return json.loads(text)


#: Ladder option keys that older versions stored under another name: old -> new.
LADDER_OPTION_RENAMES = {"turn_ms": "turn_time_ms"}


def decode_ladder_options(text: str) -> dict:
    """The fields of a server.core.ladder.LadderOptions from its ``ladders.options`` column
    (written with ``encode_json``); a row of an older version is read under today's names."""
    options = json.loads(text)
    for old, new in LADDER_OPTION_RENAMES.items():
        if old in options:
            value = options.pop(old)
            options.setdefault(new, value)
    return options


def encode_ladder_game(record: Any) -> str:
    """A ``ladder_games.record`` column from a server.core.ladder.LadderGame."""
    return json.dumps(asdict(record))


def decode_ladder_game(text: str) -> dict:
    """The fields of a LadderGame from its column (tuples where the dataclass has them)."""
    record = json.loads(text)
    record["used_ms"], record["plays"] = tuple(record["used_ms"]), tuple(record["plays"])
    return record


def encode_match(match: Any) -> tuple:
    """The ``matches`` row of a server.core.match.MatchSession (scores are updated later)."""
    o = match.options
    options = {
        "variant": o.variant,
        "rules": sorted(o.rules),
        "opening": str(o.opening),
        "colours": str(o.colours),
        "turn_ms": match.turn_time_ms,
        "time_bank_ms": match.time_bank_ms,
        "auto_play_forced": match.auto_play_forced,
        "illegal_play_limit": match.illegal_play_limit,
        "ladder": match.ladder,
        "pair_id": match.pair_id,
        "start_timeout": match.start_timeout,
        "first_seat_white": match.first_seat_white,
        "challenged": match.challenged,
    }
    seats = [
        {"name": s.name, "bot": s.bot, "player_id": s.player_id, "owner": s.owner}
        for s in match.seats
    ]
    return (
        match.id,
        match.match.target,
        json.dumps(options),
        json.dumps(seats),
        match.seed,
        json.dumps(list(match.script)),
        match.start.text() if match.start else "",
    )


MATCH_COLUMNS = ("id", "target", "options", "seats", "seed", "script", "start")


def decode_match(row: tuple) -> dict:
    """A ``matches`` row (columns as MATCH_COLUMNS) as a dict with its JSON decoded."""
    m = dict(zip(MATCH_COLUMNS, row, strict=True))
    for key in ("options", "seats", "script"):
        m[key] = json.loads(m[key])
    return m
