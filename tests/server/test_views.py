"""The hand-written encoding of GameState.legal_plays (server/views.py) gives exactly the
bytes protobuf gives for the same LegalPlay messages (nardy.wire.legal_pb), for both
variants, over positions of whole random games and every throw."""

from __future__ import annotations

import random

import pytest

from nardy import wire
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant
from server.core.views import legal_play_field

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
