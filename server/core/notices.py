"""Players' streams: the notices that tell a player (or a seat) of its games — a game
assigned, a challenge, a game over — and the sinks that follow them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from nardy import Color
from server.core.journal import Status
from server.core.principals import Principal
from server.core.session import GameCard, GameSession, Seat, Sink
from server.errors import ArbiterError, Code

if TYPE_CHECKING:
    from server.core.arbiter import Arbiter


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


class Notices:
    """The player streams' sinks, by listener (a player, or a match's seat)."""

    def __init__(self, arbiter: Arbiter) -> None:
        self.arbiter = arbiter
        self.sinks: dict[str, set[Sink]] = {}

    async def subscribe(self, digest: str | None, sink: Sink) -> list[PlayerNote]:
        """Follow a player's games (or, with a seat token, the games of that seat's match),
        on every instance; the notices to send first."""
        arbiter = self.arbiter
        principal = arbiter.roster.authenticate(digest)
        assert principal is not None
        if arbiter.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        notes = await arbiter.owner.games_elsewhere(principal)
        self.sinks.setdefault(principal.listener, set()).add(sink)
        for game in arbiter.tables.games.values():
            if game.status in (Status.WAITING, Status.IN_PROGRESS):
                notes += self._notes_of(game, principal)
        return notes

    @staticmethod
    def _notes_of(game: GameSession, principal: Principal) -> list[PlayerNote]:
        seat = game.seat_in(principal)
        if seat is not None:
            return [PlayerNote.about(Note.GAME_ASSIGNED, game, seat)]
        if principal.player_id and game.match.challenged == principal.player_id:
            index = game.match.seat_index(principal.player_id)
            return [PlayerNote.about(Note.CHALLENGE, game, index)]
        return []

    def unsubscribe(self, listener: str, sink: Sink) -> None:
        """The last player stream ``sink`` fed ended."""
        sinks = self.sinks.get(listener)
        if sinks is not None:
            sinks.discard(sink)
            if not sinks:
                del self.sinks[listener]

    def notify(self, game: GameSession, kind: Note) -> None:
        """Tell the seats of ``game`` (here and, through the news, on other instances)."""
        self.deliver(game.match.id, game.match.seats, game.match.challenged, kind, game)
        self.arbiter.owner.tell_note(game, kind)

    def deliver(
        self,
        match_id: str,
        seats: tuple[Seat, Seat],
        challenged: str | None,
        kind: Note,
        game: GameSession | None = None,
        card: RemoteCard | None = None,
        white: int | None = None,
    ) -> None:
        """Tell the streams of the seats of a game (here: ``game``; elsewhere: ``card``)."""
        for seat in seats:
            keys = [f"{match_id}/{seat.index}"]
            if seat.player_id and seat.player_id != challenged:
                keys.append(seat.player_id)
            for key in keys:
                for sink in list(self.sinks.get(key, ())):
                    if game is not None:
                        sink.send(PlayerNote.about(kind, game, seat.index))
                    else:
                        sink.send(PlayerNote(kind, card, seat.index, colour(seat.index, white)))

    def to_player(self, player_id: str, note: PlayerNote) -> None:
        for sink in list(self.sinks.get(player_id, ())):
            sink.send(note)

    def shutdown(self) -> None:
        """Every stream ends with SERVER_SHUTDOWN."""
        for sinks in self.sinks.values():
            for sink in list(sinks):
                sink.send(PlayerNote(Note.SERVER_SHUTDOWN))
                sink.close()
            sinks.clear()
