"""The blocking SDK client plays a whole game against the trio one, over real gRPC."""

from __future__ import annotations

import random
import threading

from nardy.client import SimpleClient
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer


def test_simple_clients_play_a_game(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "s.db")) as srv:
        with SimpleClient(srv.address) as admin:
            r = admin.create_match(seed=3)
        finals = {}

        def seat(name, token, seed):
            rng = random.Random(seed)
            with SimpleClient(srv.address, token) as c:
                finals[name] = c.play(r.game_id, lambda turn: rng.choice(turn.legal))

        threads = [
            threading.Thread(target=seat, args=("a", r.first_seat_token, 1)),
            threading.Thread(target=seat, args=("b", r.second_seat_token, 2)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert finals["a"].status == pb.GAME_STATUS_FINISHED
        assert finals["a"].result == finals["b"].result
