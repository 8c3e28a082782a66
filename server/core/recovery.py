"""Rebuilding matches and games from the journal after a restart (or a kill -9).

Every event was committed before anyone was told of it, so the journal holds the whole
history: finished games come back as they ended, and games in progress go on from their
last event (see GameSession.resume): the same position, the same dice for a turn awaiting
its play, and a fresh clock for the side to move. A restart (server.core.restart) rebuilds
only what it must, so that it costs the same after a year of games as after a day.
"""

from __future__ import annotations

from dataclasses import replace

from nardy.game import Color
from nardy.match import Colours, GameOptions, Opening
from nardy.variant import variant
from server.core.journal import EventType, Status, decode_event
from server.core.judge import Accepted
from server.core.lockstep import Lockstep
from server.core.match import Host, MatchSession, Seat
from server.core.session import GameSession
from server.core.store import StoredGame


def _flags(options: dict) -> list[str]:
    """The house rules of a row written when each was a flag of its own (``"koks": true``)."""
    return [r for r in variant(options["variant"]).house_rules if options.get(r)]


def restore_match(
    host: Host, row: dict, games: list[StoredGame], new_id, pair: Lockstep | None = None
) -> MatchSession:
    """The match of a ``matches`` row with its ``games``, as far as the journal goes."""
    o = row["options"]
    options = GameOptions(
        variant=o["variant"],
        rules=frozenset(o.get("rules", _flags(o))),
        opening=Opening(o["opening"]),
        colours=Colours(o["colours"]),
    )
    seats = tuple(
        Seat(i, s["name"], s["bot"], s["player_id"], s.get("owner", ""))
        for i, s in enumerate(row["seats"])
    )
    match = MatchSession(
        host,
        row["id"],
        options,
        row["target"],
        (seats[0], seats[1]),
        turn_time_ms=o["turn_ms"],
        time_bank_ms=o["time_bank_ms"],
        auto_play_forced=o["auto_play_forced"],
        seed=row["seed"],
        script=tuple(row["script"]),
        pair=pair,
        start=variant(options.variant).parse(row["start"]) if row["start"] else None,
        start_timeout=o.get("start_timeout", 60.0),
        new_id=new_id,
        illegal_play_limit=o.get("illegal_play_limit", 0),
        ladder=o.get("ladder", ""),
        pair_id=o.get("pair_id", ""),
        first_seat_white=o.get("first_seat_white"),
        challenged=o.get("challenged"),
    )
    if pair is not None:
        pair.discard(match.games[0])  # the placeholder first game: the stored ones follow
    match.games = []
    for game_id, number, server_seed, entries, status in games:
        game = GameSession(match, game_id, number, bytes.fromhex(server_seed) or None)
        restore_game(game, entries)
        game.roller.rolled = max([0, *(e["rolled"] for _, _, _, e in entries)])
        match.games.append(game)
        if pair is not None:
            pair.add(game)
            if game.status in (Status.FINISHED, Status.ABORTED):
                pair.ended(game)
        if status == Status.ABORTED and game.status is Status.FINISHED:
            game.status = Status.ABORTED  # voided by the operator after it finished
        if game.status is Status.FINISHED and game.result is not None:
            assert game.white_seat is not None
            match.match.record(game.white_seat, game.result)
    return match


def restore_game(game: GameSession, entries: list[tuple[int, int, float, dict]]) -> None:
    """Replay journal entries into ``game``: its events, state, and answered plays."""
    for seq, kind, when, e in entries:
        event = decode_event(seq, kind, when, e, game.variant)
        game.audience.events.append(event)
        play = event.play
        if event.type is EventType.GAME_STARTED:
            game.white_seat = e["white_seat"]
            game.throws = event.throws
            game.roller.client_seeds = event.snapshot.client_seeds
        if event.type is EventType.PLAY_MADE and play is not None:
            end = event.snapshot.position.text()
            game.judge.accepted[play.turn_id] = Accepted(play.notation, end, play.used_ms)
            if not play.automatic:
                game.used_ms[play.side] += play.used_ms
                game.plays_made[play.side] += 1
    if not game.audience.events:
        return
    last = game.audience.events[-1].snapshot
    if game.white_seat is None:  # no GAME_STARTED read (an ended game: its last entry only)
        game.white_seat = last.white_seat
        game.roller.client_seeds = last.client_seeds
    game.status = last.status
    game.position = last.position
    game.turn_id = last.turn_id
    game.dice = last.dice
    game.result = last.result
    game.next_game_id = last.next_game_id
    game.judge.refused = {Color.WHITE: last.refused[0], Color.BLACK: last.refused[1]}
    for color, (_, bank_ms) in zip(Color, last.clocks, strict=True):
        game.clocks[color] = replace(game.match.fresh_clock(), bank_ms=bank_ms)  # not running
    if game.status in (Status.FINISHED, Status.ABORTED):
        game.release()
