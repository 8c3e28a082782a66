"""The catalogue ListGames reads (server/core/catalogue.py), on its own: a window of the
newest games, page tokens that stay good while it is trimmed, and matches nobody played
kept out of it."""

from __future__ import annotations

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.core.catalogue import Catalogue

WAITING, FINISHED, ABORTED = pb.GAME_STATUS_WAITING, pb.GAME_STATUS_FINISHED, pb.GAME_STATUS_ABORTED


def summary(game_id: str, status: int, number: int = 1) -> api.GameSummary:
    return api.GameSummary(game_id=game_id, status=status, game_number=number)


def played(catalogue: Catalogue, game_id: str) -> None:
    catalogue.add(game_id, summary(game_id, WAITING))
    catalogue.publish(game_id, summary(game_id, pb.GAME_STATUS_IN_PROGRESS))
    catalogue.publish(game_id, summary(game_id, FINISHED))


def every(catalogue: Catalogue, status: int = 0, limit: int = 2) -> list[str]:
    out, token = [], ""
    while True:
        games, token = catalogue.page(status, "", limit, token)
        out += [g.game_id for g in games]
        if not token:
            return out


def test_matches_nobody_played_leave_the_list_and_push_no_game_out():
    """A stranger's matches that nobody comes to (start timeout 1 ms) filled the newest
    2,000 places: ListGames(FINISHED) showed 10 of 559 finished games."""
    catalogue = Catalogue(window=4)
    for n in range(3):
        played(catalogue, f"real{n}")
    for n in range(50):
        catalogue.add(f"junk{n}", summary(f"junk{n}", WAITING))
        catalogue.publish(f"junk{n}", summary(f"junk{n}", ABORTED))
    assert every(catalogue) == every(catalogue, FINISHED) == ["real2", "real1", "real0"]
    assert len(catalogue) == 3
    # a later game called off is listed (only a game played can lead to it), as is a game
    # played and then voided
    catalogue.add("second", summary("second", WAITING, number=2))
    catalogue.publish("second", summary("second", ABORTED, number=2))
    catalogue.publish("real0", summary("real0", ABORTED))
    assert every(catalogue, ABORTED) == ["second", "real0"]


def test_a_page_token_stays_good_while_the_list_is_trimmed():
    catalogue = Catalogue(window=4)
    for n in range(4):
        played(catalogue, f"g{n}")
    first, token = catalogue.page(0, "", 2, "")
    assert [g.game_id for g in first] == ["g3", "g2"]
    for n in range(5):  # nobody comes to these: trimmed out while the reader pages
        catalogue.add(f"junk{n}", summary(f"junk{n}", WAITING))
        catalogue.publish(f"junk{n}", summary(f"junk{n}", ABORTED))
    rest, token = catalogue.page(0, "", 2, token)
    assert [g.game_id for g in rest] == ["g1", "g0"]
    assert token == ""  # (the end)
