"""The arbiter's state as ``nardy.v1`` messages: one function per message, cached per audience."""

from __future__ import annotations

from nardy import wire
from nardy.game import Color
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant
from server.core.game import GameCard
from server.core.journal import Event, EventType, Snapshot, Status
from server.core.match import Seat


def player_pb(seat: Seat | None) -> pb.Player | None:
    return None if seat is None else pb.Player(name=seat.name, bot=seat.bot, owner=seat.owner)


def players_pb(card: GameCard, white: int | None) -> tuple[pb.Player | None, pb.Player | None]:
    """White's and black's players when ``white`` plays white (None while the opening
    throw has yet to decide)."""
    if white is None:
        return None, None
    return player_pb(card.seats[white]), player_pb(card.seats[1 - white])


def seats_pb(card: GameCard) -> dict[str, pb.Player | None]:
    """The first and second player of the match (CreateMatch order), always known."""
    first, second = card.seats
    return {"first_player": player_pb(first), "second_player": player_pb(second)}


def match_score_pb(card: GameCard, snap: Snapshot) -> pb.MatchScore:
    return pb.MatchScore(
        target=card.target,
        white_points=snap.scores[0],
        black_points=snap.scores[1],
        over=snap.match_over,
    )


def finished_result(snap: Snapshot) -> pb.GameResult | None:
    """The result, only once the game is FINISHED (the match score then counts it), not on
    the PLAY_MADE that decided it."""
    return wire.result_pb(snap.result) if snap.status is Status.FINISHED else None


def state_pb(card: GameCard, snap: Snapshot, audience: Color | None) -> pb.GameState:
    """The GameState of ``snap`` as ``audience`` (a seat's colour, or None) sees it."""
    state = pb.GameState()
    _fill_state(state, card, snap)
    _personalise(state, snap, audience)
    return state


def _fill_state(state: pb.GameState, card: GameCard, snap: Snapshot) -> None:
    """Set the fields of ``state`` (empty) as everybody sees ``snap``."""
    pos = snap.position
    state.MergeFromString(_fixed_state(card, snap.white_seat))
    state.MergeFrom(
        pb.GameState(
            status=int(snap.status),
            position=pos.text(),
            board=wire.board_pb(variant(card.options.variant).board(pos)),
            side_to_move=wire.color_pb(pos.turn) if snap.status is Status.IN_PROGRESS else 0,
            dice=snap.dice,
            turn_id=snap.turn_id,
            white_clock=pb.Clock(remaining_ms=snap.clocks[0][0], bank_ms=snap.clocks[0][1]),
            black_clock=pb.Clock(remaining_ms=snap.clocks[1][0], bank_ms=snap.clocks[1][1]),
            match=match_score_pb(card, snap),
            result=finished_result(snap),
            client_seeds=snap.client_seeds,
            server_seed=snap.server_seed,
            next_game_id=snap.next_game_id,
            white_refused=snap.refused[0],
            black_refused=snap.refused[1],
        )
    )


def _fixed_state(card: GameCard, white_seat: int | None) -> bytes:
    """The fields of a game's GameState that never change once its colours are known
    (ids, options, players, dice commitment), serialized once (cached with the card)."""
    key = ("state", white_seat)
    data = card.views.get(key)
    if data is None:
        white, black = players_pb(card, white_seat)
        data = card.views[key] = pb.GameState(
            game_id=card.game_id,
            match_id=card.match_id,
            game_number=card.number,
            options=wire.options_pb(card.options, card.terms),
            white=white,
            black=black,
            seeded=card.seeded,
            rated=card.rated,
            dice_commitment=card.dice_commitment,
            public_seed=card.public_seed,
            scripted_dice=card.scripted_dice,
            ladder=card.ladder,
            **seats_pb(card),
        ).SerializeToString()
    return data


def _personalise(state: pb.GameState, snap: Snapshot, audience: Color | None) -> None:
    """Mark the seat's colour and, on its turn, add the legal plays."""
    state.your_color = wire.color_pb(audience)
    if audience is not None and snap.legal and snap.position.turn is audience:
        state.MergeFromString(b"".join(map(legal_play_field, snap.legal)))


# -- GameState.legal_plays, encoded by hand ------------------------------------------------
# The 20-odd LegalPlay messages of a turn are the costliest part of its events when built
# as messages (docs/PERFORMANCE.md); their protobuf encoding is written here
# directly and merged into the state, which upb then serializes canonically: the bytes on
# the wire are those of wire.legal_pb (tests/server/test_views.py compares them).
LEGAL_PLAYS = b"\x8a\x01"  # GameState field 17 (legal_plays), length-delimited
_STEPS: dict[tuple[int, ...], bytes] = {}  # Step (field 3 of LegalPlay) by its values


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SHORT = tuple(bytes((n,)) for n in range(0x80))  # the varints of one byte


def _length(n: int) -> bytes:
    return _SHORT[n] if n < 0x80 else _varint(n)


def _step_field(step) -> bytes:
    field = _STEPS.get(step)  # a step is a (src, dst, die) tuple
    if field is None:  # proto3: a zero value is not written
        tagged = ((b"\x08", step.src), (b"\x10", step.dst), (b"\x18", step.die))
        body = b"".join(tag + _varint(v) for tag, v in tagged if v)
        field = _STEPS[tuple(step)] = b"\x1a" + _length(len(body)) + body
    return field


def play_event_wire(data: bytes) -> bytes:
    """A GameEvent's bytes as the PlayResponse that carries it (field 1), serialized."""
    return b"\x0a" + _length(len(data)) + data


def legal_play_field(play) -> bytes:
    """``play`` as one entry of GameState.legal_plays, serialized."""
    notation, end = play.notation().encode(), play.end.text().encode()
    body = b"".join(
        (
            b"\x0a",
            _length(len(notation)),
            notation,
            b"\x12",
            _length(len(end)),
            end,
            *map(_step_field, play.steps),
        )
    )
    return b"".join((LEGAL_PLAYS, _length(len(body)), body))


def event_pb(card: GameCard, event: Event, seat: int | None, keep: bool = True) -> pb.GameEvent:
    """The event as ``seat`` (or a spectator, None) sees it; built once per audience
    (``keep``: cached with the event; the spectators' view always is)."""
    audience = card.color_of(seat, event.snapshot.white_seat)
    views = event.views
    msg = views.get(audience)
    if msg is not None:
        return msg
    base = views.get(None)
    if base is None:
        base = pb.GameEvent(seq=event.seq, type=int(event.type))
        _fill_state(base.state, card, event.snapshot)
        base.time.FromNanoseconds(int(event.time * 1e9))
        if event.play is not None:
            p = event.play
            base.play.MergeFrom(
                pb.PlayRecord(
                    side=wire.color_pb(p.side),
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
    if keep:
        views[audience] = msg
    return msg


def event_wire(card: GameCard, event: Event, seat: int | None) -> tuple[bytes, bool]:
    """The event as ``seat`` sees it, serialized (once per audience), and whether it
    offers that seat its turn (TURN_STARTED with the legal plays)."""
    audience = card.color_of(seat, event.snapshot.white_seat)
    key = ("wire", audience)
    wire_form = event.views.get(key)
    if wire_form is None:
        msg = event_pb(card, event, seat, keep=False)  # only its bytes are kept
        offers = event.type is EventType.TURN_STARTED and len(msg.state.legal_plays) > 0
        wire_form = event.views[key] = (msg.SerializeToString(), offers)
    return wire_form


def summary_pb(card: GameCard, snap: Snapshot) -> api.GameSummary:
    white, black = players_pb(card, snap.white_seat)
    return api.GameSummary(
        game_id=card.game_id,
        match_id=card.match_id,
        game_number=card.number,
        status=int(snap.status),
        white=white,
        black=black,
        result=finished_result(snap),
        match=match_score_pb(card, snap),
        rated=card.rated,
        seeded=card.seeded,
        ladder=card.ladder,
        **seats_pb(card),
    )
