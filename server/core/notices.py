"""Players' streams: the notices that tell a player (or a seat) of its games — a game
assigned, a challenge, a game over — and the sinks that follow them."""

from __future__ import annotations

from collections.abc import Iterable

from server.core.audience import Sink
from server.core.journal import Status
from server.core.match import Seat
from server.core.notes import Note, PlayerNote, RemoteCard, colour
from server.core.ownership import Sole
from server.core.principals import Principal
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.session import GameSession
from server.errors import ArbiterError, Code


class Notices:
    """The player streams' sinks, by listener (a player, or a match's seat)."""

    def __init__(self, runtime: Runtime, roster: Roster, owner: Sole) -> None:
        self.runtime = runtime
        self.roster = roster
        self.owner = owner
        self.sinks: dict[str, set[Sink]] = {}

    async def subscribe(
        self, digest: str | None, sink: Sink, games: Iterable[GameSession]
    ) -> list[PlayerNote]:
        """Follow a player's games (or, with a seat token, the games of that seat's match),
        on every instance; the notices to send first (``games``: those held here)."""
        principal = self.roster.authenticate(digest)
        assert principal is not None
        if self.runtime.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        notes = await self.owner.games_elsewhere(principal)
        self.sinks.setdefault(principal.listener, set()).add(sink)
        for game in games:
            if game.status in (Status.WAITING, Status.IN_PROGRESS):
                notes += self._notes_of(game, principal)
        return notes

    @staticmethod
    def _notes_of(game: GameSession, principal: Principal) -> list[PlayerNote]:
        seat = game.match.seat_in(principal)
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
        self.owner.tell_note(game, kind)

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
        """Tell the streams of the seats of a game (here: ``game``; elsewhere: ``card``); a
        player challenged to it, only that it is over (the challenge has gone)."""
        for seat in seats:
            keys = [f"{match_id}/{seat.index}"]
            if seat.player_id and (seat.player_id != challenged or kind is Note.GAME_OVER):
                keys.append(seat.player_id)
            for key in keys:
                for sink in list(self.sinks.get(key, ())):
                    if game is not None:
                        sink.send(PlayerNote.about(kind, game, seat.index))
                    else:
                        sink.send(PlayerNote(kind, card, seat.index, colour(seat.index, white)))

    def challenge(self, game: GameSession) -> None:
        """Tell the player challenged to ``game``'s match (here and, through the news, on
        other instances)."""
        challenged = game.match.challenged
        assert challenged is not None
        seat = game.match.seat_index(challenged)
        self.to_player(challenged, PlayerNote.about(Note.CHALLENGE, game, seat))
        self.owner.tell_note(game, Note.CHALLENGE)

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
