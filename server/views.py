"""The arbiter's state as ``nardy.v1`` messages: one function per message, cached per audience."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from nardy import Color, GameResult, Play
from nardy.match import Colours, GameOptions, Opening
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.journal import Event, Snapshot, Status
from server.session import GameSession, Seat

ENDED = (Status.FINISHED, Status.ABORTED)
COLOR = {Color.WHITE: pb.COLOR_WHITE, Color.BLACK: pb.COLOR_BLACK, None: pb.COLOR_UNSPECIFIED}
FROM_COLOR = {pb.COLOR_WHITE: Color.WHITE, pb.COLOR_BLACK: Color.BLACK}
OPENING = {
    Opening.FRESH_ROLL: pb.OPENING_RULE_FRESH_ROLL,
    Opening.USE_OPENING_DICE: pb.OPENING_RULE_USE_OPENING_DICE,
}
COLOURS = {
    Colours.ALTERNATE: pb.COLOUR_RULE_ALTERNATE,
    Colours.THROW_EACH_GAME: pb.COLOUR_RULE_THROW_EACH_GAME,
}
KIND = {"oin": pb.RESULT_KIND_OIN, "mars": pb.RESULT_KIND_MARS, "koks": pb.RESULT_KIND_KOKS}
TERMINATION = {
    "normal": pb.TERMINATION_NORMAL,
    "timeout": pb.TERMINATION_TIMEOUT,
    "resignation": pb.TERMINATION_RESIGNATION,
    "abandonment": pb.TERMINATION_ABANDONMENT,
    "illegal-plays": pb.TERMINATION_ILLEGAL_PLAYS,
}


def options_from_pb(msg: pb.GameOptions) -> GameOptions:
    opening = {v: k for k, v in OPENING.items()}.get(msg.opening, Opening.FRESH_ROLL)
    colours = {v: k for k, v in COLOURS.items()}.get(msg.colours, Colours.ALTERNATE)
    rules = frozenset({"koks"} if msg.koks else ())
    return GameOptions(variant=msg.variant or "long", rules=rules, opening=opening, colours=colours)


def options_pb(game: GameSession) -> pb.GameOptions:
    o, m = game.options, game.match
    return pb.GameOptions(
        variant=o.variant,
        koks="koks" in o.rules,
        opening=OPENING[o.opening],
        colours=COLOURS[o.colours],
        turn_time_ms=m.turn_ms,
        time_bank_ms=m.time_bank_ms,
        auto_play_forced=m.auto_play_forced,
        illegal_play_limit=m.illegal_play_limit,
    )


def player_pb(seat: Seat | None) -> pb.Player | None:
    return None if seat is None else pb.Player(name=seat.name, bot=seat.bot, owner=seat.owner)


def result_pb(result: GameResult | None) -> pb.GameResult | None:
    if result is None:
        return None
    return pb.GameResult(
        winner=COLOR[result.winner],
        kind=KIND[result.kind],
        termination=TERMINATION[result.termination],
        points=result.points,
    )


def legal_pb(play: Play) -> pb.LegalPlay:
    return pb.LegalPlay(
        notation=play.notation(),
        end_position=play.end.text(),
        steps=[pb.Step(**{"from": s.src, "to": s.dst, "die": s.die}) for s in play.steps],
    )


def players_pb(game: GameSession) -> tuple[pb.Player | None, pb.Player | None]:
    """White's and black's players (None while the opening throw has yet to decide)."""
    if game.known_white is None:
        return None, None
    return player_pb(game.seat_of(Color.WHITE)), player_pb(game.seat_of(Color.BLACK))


def seats_pb(game: GameSession) -> dict[str, pb.Player | None]:
    """The first and second player of the match (CreateMatch order), always known."""
    first, second = game.match.seats
    return {"first_player": player_pb(first), "second_player": player_pb(second)}


def match_score_pb(game: GameSession, snap: Snapshot) -> pb.MatchScore:
    return pb.MatchScore(
        target=game.match.match.target,
        white_points=snap.scores[0],
        black_points=snap.scores[1],
        over=snap.match_over,
    )


def state_pb(game: GameSession, snap: Snapshot, audience: Color | None) -> pb.GameState:
    pos = snap.position
    white, black = players_pb(game)
    state = pb.GameState(
        game_id=game.id,
        match_id=game.match.id,
        game_number=game.number,
        status=int(snap.status),
        options=options_pb(game),
        white=white,
        black=black,
        position=pos.text(),
        board=pb.Board(
            points=pos.board,
            white_off=pos.borne_off(Color.WHITE),
            black_off=pos.borne_off(Color.BLACK),
        ),
        side_to_move=COLOR[pos.turn] if snap.status is Status.IN_PROGRESS else 0,
        dice=snap.dice,
        turn_id=snap.turn_id,
        white_clock=pb.Clock(remaining_ms=snap.clocks[0][0], bank_ms=snap.clocks[0][1]),
        black_clock=pb.Clock(remaining_ms=snap.clocks[1][0], bank_ms=snap.clocks[1][1]),
        match=match_score_pb(game, snap),
        # Only once the game is FINISHED (the match score then counts it), not on the
        # PLAY_MADE that decided it.
        result=result_pb(snap.result) if snap.status is Status.FINISHED else None,
        seeded=game.match.seeded,
        rated=game.match.rated,
        dice_commitment=game.roller.commitment,
        client_seeds=game.roller.client_seeds,
        server_seed=game.revealed_seed() if snap.status in ENDED else "",
        next_game_id=snap.next_game_id,
        white_refused=snap.refused[0],
        black_refused=snap.refused[1],
        ladder=game.match.ladder,
        **seats_pb(game),
    )
    _personalise(state, snap, audience)
    return state


def _personalise(state: pb.GameState, snap: Snapshot, audience: Color | None) -> None:
    """Mark the seat's colour and, on its turn, add the legal plays."""
    state.your_color = COLOR[audience]
    if audience is not None and snap.legal and snap.position.turn is audience:
        state.legal_plays.extend(legal_pb(p) for p in snap.legal)


def event_pb(game: GameSession, event: Event, audience: Color | None) -> pb.GameEvent:
    """The event as ``audience`` (a seat's colour, or None) sees it; built once per audience."""
    views = event.views
    msg = views.get(audience)
    if msg is not None:
        return msg
    base = views.get(None)
    if base is None:
        ts = Timestamp()
        ts.FromNanoseconds(int(event.time * 1e9))
        base = pb.GameEvent(
            seq=event.seq, type=int(event.type), state=state_pb(game, event.snapshot, None), time=ts
        )
        if event.play is not None:
            p = event.play
            base.play.CopyFrom(
                pb.PlayRecord(
                    side=COLOR[p.side],
                    dice=p.dice,
                    notation=p.notation,
                    turn_id=p.turn_id,
                    automatic=p.automatic,
                    used_ms=p.used_ms,
                )
            )
        base.opening_throws.extend(
            pb.OpeningThrow(first_player_die=a, second_player_die=b) for a, b in event.throws
        )
        views[None] = base
    if audience is None:
        return base
    msg = pb.GameEvent()
    msg.CopyFrom(base)
    _personalise(msg.state, event.snapshot, audience)
    views[audience] = msg
    return msg


def summary_pb(game: GameSession) -> api.GameSummary:
    white, black = players_pb(game)
    return api.GameSummary(
        game_id=game.id,
        match_id=game.match.id,
        game_number=game.number,
        status=int(game.status),
        white=white,
        black=black,
        result=result_pb(game.result) if game.status is Status.FINISHED else None,
        match=match_score_pb(game, game.snapshot()),
        rated=game.match.rated,
        seeded=game.match.seeded,
        ladder=game.match.ladder,
        **seats_pb(game),
    )
