"""The hand-written encodings of server/core/views.py give exactly the bytes protobuf gives
for the same messages: GameState.legal_plays (nardy.wire.legal_pb) and each audience's
GameEvent, for both variants, over positions of random games."""

from __future__ import annotations

import random

import pytest

from nardy import Color, Termination, wire
from nardy.long import movegen
from nardy.long.position import Position
from nardy.match import GameOptions
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant
from nardy.wire import Terms
from server.core.game import GameCard
from server.core.journal import Event, EventType, PlayRecord, Snapshot, Status
from server.core.match import Seat
from server.core.views import (
    event_pb,
    event_wire,
    legal_play_field,
    play_pb,
    player_pb,
    players_pb,
)

THROWS = [(a, b) for a in range(1, 7) for b in range(1, 7)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["long", "short"])
def test_legal_plays_encoded_by_hand_are_the_protobuf_bytes(name):
    rules = variant(name)
    rng = random.Random(13)
    compared = 0
    for _ in range(6):
        position = rules.start()
        for _ in range(80):
            for dice in rng.sample(THROWS, 4):
                plays = rules.legal_plays(position, dice)
                if not plays:
                    continue
                by_hand = pb.GameState()
                by_hand.MergeFromString(b"".join(map(legal_play_field, plays)))
                reference = pb.GameState()
                reference.legal_plays.extend(wire.legal_pb(p) for p in plays)
                assert by_hand.SerializeToString() == reference.SerializeToString()
                assert by_hand == reference
                compared += len(plays)
            if rules.result(position) is not None:
                break
            plays = rules.legal_plays(position, rng.choice(THROWS))
            position = rng.choice(plays).end if plays else rules.passed(position)
    assert compared > 1000


def _card(name: str, white: bool) -> GameCard:
    seats = (Seat(0, "ann", bot=True, player_id="p1", owner="op"), Seat(1, "bob"))
    return GameCard(
        game_id="g1",
        match_id="m1",
        number=2,
        options=GameOptions(variant=name),
        terms=Terms(turn_time_ms=5000, time_bank_ms=200, illegal_play_limit=3),
        seats=seats,
        target=5,
        seeded=white,
        rated=not white,
        ladder="club" if white else "",
        dice_commitment="ab" * 32,
        public_seed=white,
        scripted_dice=2 if white else 0,
    )


def _reference(card: GameCard, event: Event, audience: Color | None) -> pb.GameEvent:
    """The event as ``audience`` sees it, built field by field as messages."""
    snap, pos = event.snapshot, event.snapshot.position
    white, black = players_pb(card, snap.white_seat)
    state = pb.GameState(
        game_id=card.game_id,
        match_id=card.match_id,
        game_number=card.number,
        status=int(snap.status),
        options=wire.options_pb(card.options, card.terms),
        white=white,
        black=black,
        position=pos.text(),
        board=wire.board_pb(variant(card.options.variant).board(pos)),
        side_to_move=wire.color_pb(pos.turn) if snap.status is Status.IN_PROGRESS else 0,
        dice=snap.dice,
        turn_id=snap.turn_id,
        white_clock=pb.Clock(remaining_ms=snap.clocks[0][0], bank_ms=snap.clocks[0][1]),
        black_clock=pb.Clock(remaining_ms=snap.clocks[1][0], bank_ms=snap.clocks[1][1]),
        match=pb.MatchScore(
            target=card.target,
            white_points=snap.scores[0],
            black_points=snap.scores[1],
            over=snap.match_over,
        ),
        result=wire.result_pb(snap.result) if snap.status is Status.FINISHED else None,
        your_color=wire.color_pb(audience),
        seeded=card.seeded,
        next_game_id=snap.next_game_id,
        white_refused=snap.refused[0],
        black_refused=snap.refused[1],
        ladder=card.ladder,
        first_player=player_pb(card.seats[0]),
        second_player=player_pb(card.seats[1]),
        rated=card.rated,
        dice_commitment=card.dice_commitment,
        server_seed=snap.server_seed,
        client_seeds=snap.client_seeds,
        public_seed=card.public_seed,
        scripted_dice=card.scripted_dice,
    )
    if audience is not None and pos.turn is audience:
        state.legal_plays.extend(wire.legal_pb(p) for p in snap.legal)
    msg = pb.GameEvent(seq=event.seq, type=int(event.type), state=state)
    msg.time.FromNanoseconds(int(event.time * 1e9))
    if event.play is not None:
        msg.play.MergeFrom(play_pb(event.play))
    msg.opening_throws.extend(
        pb.OpeningThrow(first_player_die=a, second_player_die=b) for a, b in event.throws
    )
    return msg


@pytest.mark.parametrize("name", ["long", "short"])
def test_each_audience_gets_the_bytes_of_its_message(name):
    """An event's bytes, spliced from the parts every audience shares, are the protobuf
    serialization of the message each audience sees (a seat, on its turn with its legal
    plays, and the spectators), for events of every kind and state."""
    rules = variant(name)
    rng = random.Random(7)
    position, seq, compared = rules.start(), 0, 0
    for turn in range(1, 120):
        dice = rng.choice(THROWS)
        plays = tuple(rules.legal_plays(position, dice))
        white_seat = None if turn == 1 else turn % 2
        card = _card(name, white=white_seat == 0)
        for kind in EventType:
            seq += 1
            snap = Snapshot(
                status=rng.choice(list(Status)),
                position=position,
                dice=dice,
                turn_id=turn,
                clocks=((rng.randrange(10**6), rng.randrange(300)), (rng.randrange(10**6), 0)),
                scores=(rng.randrange(6), rng.randrange(6)),
                match_over=rng.random() < 0.1,
                result=rules.forfeit(position, position.turn, Termination.TIMEOUT)
                if rng.random() < 0.3
                else None,
                legal=plays if kind in (EventType.TURN_STARTED, EventType.SNAPSHOT) else (),
                next_game_id=rng.choice(["", "g2"]),
                refused=(rng.randrange(3), rng.randrange(200)),
                white_seat=white_seat,
                client_seeds=rng.choice([(), ("a", "bc")]),
                server_seed=rng.choice(["", "cd" * 32]),
            )
            play = None
            if kind is EventType.PLAY_MADE and plays:
                notation = plays[0].notation()
                play = PlayRecord(position.turn, dice, notation, turn, turn % 3 == 0, turn * 7)
            throws = ((1, 3), (5, 5), (6, 2))[: rng.randrange(4)]
            event = Event(seq, kind, 1.7e9 + turn / 3, snap, play, throws)
            for seat in (None, 0, 1):
                audience = card.color_of(seat, white_seat)
                data, offers = event_wire(card, event, seat)
                expected = _reference(card, event, audience)
                assert data == expected.SerializeToString()
                assert offers == (
                    kind is EventType.TURN_STARTED and len(expected.state.legal_plays) > 0
                )
                compared += 1
            assert event_pb(card, event) == _reference(card, event, None)
        position = rng.choice(plays).end if plays else rules.passed(position)
        if rules.result(position) is not None:
            position = rules.start()
    assert compared > 3000


@pytest.mark.skipif(not movegen.COMPILED, reason="the compiled generator is not built")
def test_compiled_legal_plays_are_the_python_bytes():
    """Long nardy's compiled helper writes a turn's legal plays as the Python encoding does
    (its reference), over positions of random games and every throw."""
    rules = variant("long")
    rng = random.Random(29)
    compared = 0
    for _ in range(8):
        position = rules.start()
        while rules.result(position) is None:
            for dice in THROWS:
                plays = rules.legal_plays(position, dice)
                by_python = b"".join(map(legal_play_field, plays))
                assert rules.legal_plays_wire(plays) == by_python
                assert rules.legal_plays_wire(tuple(plays)) == by_python
                compared += len(plays)
            plays = rules.legal_plays(position, rng.choice(THROWS))
            position = rng.choice(plays).end if plays else rules.passed(position)
    assert compared > 10_000


@pytest.mark.skipif(not movegen.COMPILED, reason="the compiled generator is not built")
@pytest.mark.parametrize(
    "plays",
    [
        [("24/18", None)],
        [((), ("w", (0,) * 24))],
        [((), (0, (0,) * 23))],
        [((movegen.Step(24, 18, 6),) * 5, Position.start())],
        [((movegen.Step(24, 18, 9),), Position.start())],
        [(((24, 18),), Position.start())],
        [((), (0, (100,) * 24))],
        7,
    ],
)
def test_compiled_legal_plays_refuse_what_is_not_a_play(plays):
    with pytest.raises((TypeError, ValueError)):
        movegen.legal_plays_wire(plays)
