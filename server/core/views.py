"""The arbiter's state as ``nardy.v1`` messages: one function per message, cached per audience."""

from __future__ import annotations

from nardy import wire
from nardy.game import Color
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant
from server.core.game import GameCard
from server.core.journal import Event, EventType, PlayRecord, Snapshot, Status
from server.core.match import Seat


def player_pb(seat: Seat | None) -> pb.Player | None:
    if seat is None:
        return None
    return pb.Player(
        name=seat.name, bot=seat.bot, owner=seat.owner, open_seat=seat.player_id is None
    )


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
    low, high = _common_state(card, snap)
    return pb.GameState.FromString(b"".join((low, _personal(card, snap, audience), high)))


# -- a GameEvent as each audience sees it, spliced from bytes -------------------------------
# Everybody's GameState is the same but for legal_plays (field 17) and your_color (18), so
# an event is serialized once in parts: the GameEvent's fields before its state (seq, type),
# the state's fields numbered below 17 and above 18, the GameEvent's fields after its state
# (play, opening throws, time). Each audience's bytes are those parts around its own two
# fields, in field-number order: protobuf's canonical serialization of the same message
# (tests/server/test_views.py parses them and serializes them again).
STATE = b"\x1a"  # GameEvent field 3 (state), length-delimited
YOUR_COLOR = b"\x90\x01"  # GameState field 18 (your_color), varint


def _common_state(card: GameCard, snap: Snapshot) -> tuple[bytes, bytes]:
    """The fields of ``snap``'s GameState that everybody sees, serialized: those numbered
    below legal_plays and those above your_color."""
    head, options, high_fixed = _fixed_state(card, snap.white_seat)
    pos = snap.position
    status = int(snap.status)
    low = pb.GameState(
        position=pos.text(),
        board=wire.board_pb(variant(card.options.variant).board(pos)),
        side_to_move=wire.color_pb(pos.turn) if snap.status is Status.IN_PROGRESS else 0,
        dice=snap.dice,
        turn_id=snap.turn_id,
        white_clock=pb.Clock(remaining_ms=snap.clocks[0][0], bank_ms=snap.clocks[0][1]),
        black_clock=pb.Clock(remaining_ms=snap.clocks[1][0], bank_ms=snap.clocks[1][1]),
        match=match_score_pb(card, snap),
        result=finished_result(snap),
    )
    high = pb.GameState(
        next_game_id=snap.next_game_id,
        white_refused=snap.refused[0],
        black_refused=snap.refused[1],
        client_seeds=snap.client_seeds,
        server_seed=snap.server_seed,
        challenge_pending=snap.challenge_pending,
    )
    high.MergeFromString(high_fixed)
    status_field = b"\x20" + _SHORT[status] if status else b""  # field 4 (status), varint
    low_bytes = b"".join((head, status_field, options, low.SerializeToString()))
    return low_bytes, high.SerializeToString()


def _fixed_state(card: GameCard, white_seat: int | None) -> tuple[bytes, bytes, bytes]:
    """The fields of a game's GameState that never change once its colours are known,
    serialized once (cached with the card): those before status (ids, number), those
    between status and position (options, players), and those after your_color."""
    key = ("state", white_seat)
    parts = card.views.get(key)
    if parts is None:
        white, black = players_pb(card, white_seat)
        head = pb.GameState(game_id=card.game_id, match_id=card.match_id, game_number=card.number)
        options = pb.GameState(
            options=wire.options_pb(card.options, card.terms), white=white, black=black
        )
        high = pb.GameState(
            seeded=card.seeded,
            rated=card.rated,
            dice_commitment=card.dice_commitment,
            public_seed=card.public_seed,
            scripted_dice=card.scripted_dice,
            ladder=card.ladder,
            **seats_pb(card),
        )
        parts = card.views[key] = tuple(m.SerializeToString() for m in (head, options, high))
    return parts


def _personal(card: GameCard, snap: Snapshot, audience: Color | None) -> bytes:
    """The seat's own fields, serialized: on its turn the legal plays, and its colour."""
    if audience is None:
        return b""
    colour = YOUR_COLOR + _SHORT[wire.color_pb(audience)]
    if snap.legal and snap.position.turn is audience:
        legal = variant(card.options.variant).legal_plays_wire(snap.legal)  # compiled
        if legal is None:
            legal = b"".join(map(legal_play_field, snap.legal))
        return legal + colour
    return colour


def play_pb(p: PlayRecord) -> pb.PlayRecord:
    """A play as the events carry it."""
    return pb.PlayRecord(
        side=wire.color_pb(p.side),
        dice=p.dice,
        notation=p.notation,
        turn_id=p.turn_id,
        automatic=p.automatic,
        used_ms=p.used_ms,
    )


def _event_parts(card: GameCard, event: Event) -> tuple[bytes, bytes, bytes, bytes]:
    """``event`` serialized in the parts every audience shares (cached with the event):
    the GameEvent's fields before its state, the state's two common parts, and the
    GameEvent's fields after its state."""
    parts = event.views.get("parts")
    if parts is None:
        head = pb.GameEvent(seq=event.seq, type=int(event.type))
        tail = pb.GameEvent()
        tail.time.FromNanoseconds(int(event.time * 1e9))
        if event.play is not None:
            tail.play.MergeFrom(play_pb(event.play))
        tail.opening_throws.extend(
            pb.OpeningThrow(first_player_die=a, second_player_die=b) for a, b in event.throws
        )
        low, high = _common_state(card, event.snapshot)
        parts = head.SerializeToString(), low, high, tail.SerializeToString()
        event.views["parts"] = parts
    return parts


# -- GameState.legal_plays, encoded by hand ------------------------------------------------
# The 20-odd LegalPlay messages of a turn are the costliest part of its events when built
# as messages (docs/PERFORMANCE.md); their protobuf encoding is written here directly:
# the bytes are those of wire.legal_pb (tests/server/test_views.py compares them). A
# variant's compiled helper may write them instead (Variant.legal_plays_wire, long nardy's):
# this is its reference.
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


def event_pb(card: GameCard, event: Event) -> pb.GameEvent:
    """The event as spectators see it (cached with the event)."""
    msg = event.views.get(None)
    if msg is None:
        msg = event.views[None] = pb.GameEvent.FromString(event_wire(card, event, None)[0])
    return msg


def event_wire(card: GameCard, event: Event, seat: int | None) -> tuple[bytes, bool]:
    """The event as ``seat`` (or a spectator, None) sees it, serialized (once per
    audience), and whether it offers that seat its turn (TURN_STARTED with the legal
    plays)."""
    audience = card.color_of(seat, event.snapshot.white_seat)
    key = ("wire", audience)
    wire_form = event.views.get(key)
    if wire_form is None:
        head, low, high, tail = _event_parts(card, event)
        snap = event.snapshot
        state = b"".join((low, _personal(card, snap, audience), high))
        data = b"".join((head, STATE, _length(len(state)), state, tail))
        offers = (
            event.type is EventType.TURN_STARTED
            and bool(snap.legal)
            and audience is not None
            and snap.position.turn is audience
        )
        wire_form = event.views[key] = (data, offers)
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
