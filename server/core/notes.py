"""What a player's stream is told: a game assigned, a challenge, a game over, as notes
frozen when they are made (about a game here, or one another instance runs)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from nardy import Color
from server.core.game import GameCard
from server.core.match import Seat
from server.core.session import GameSession


class Note(IntEnum):
    """What a player stream reports (see PlayerEventType)."""

    GAME_ASSIGNED = 1
    GAME_OVER = 2
    HEARTBEAT = 3
    SERVER_SHUTDOWN = 4
    CHALLENGE = 5


@dataclass(frozen=True)
class RemoteCard:
    """What a player stream tells of a game another instance runs (from its news)."""

    game_id: str
    match_id: str
    seats: tuple[Seat, Seat]


@dataclass(frozen=True)
class PlayerNote:
    """A message for a player's stream, frozen when it is made."""

    type: Note
    game: GameCard | RemoteCard | None = None
    seat: int = 0
    color: Color | None = None

    @classmethod
    def about(cls, kind: Note, game: GameSession, seat: int) -> PlayerNote:
        return cls(kind, game.card, seat, game.color_of(seat))


def colour(seat: int, white_seat: int | None) -> Color | None:
    """The colour of ``seat`` when ``white_seat`` plays white (None until known)."""
    if white_seat is None:
        return None
    return Color.WHITE if seat == white_seat else Color.BLACK


def seats_of(rows: list) -> tuple[Seat, Seat]:
    """Seats as a news item or a ``matches`` row holds them."""
    a, b = (
        Seat(i, s["name"], s["bot"], s["player_id"], s.get("owner", "")) for i, s in enumerate(rows)
    )
    return a, b
