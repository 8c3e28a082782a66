"""The arbiter core: players and tokens, matches and games, subscriptions and actions.

All methods run in the trio thread; the transport bridge calls the synchronous ones and
each match is a task in the arbiter's nursery.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from enum import IntEnum

import trio

from nardy import Color, GameResult
from nardy.dice import Dice
from nardy.variant import Variant, variant
from server.errors import ArbiterError, Code
from server.journal import Event, EventType, Status, decode_event
from server.ladder import Ladder, LadderGame, LadderOptions, Member
from server.recovery import restore_match
from server.session import (
    Accepted,
    GameCard,
    GameSession,
    MatchSession,
    MatchSpec,
    Seat,
    Sink,
)
from server.store import Store, StoreError

log = logging.getLogger("nardy.server")

NAME = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
MAX_TARGET = 99
MAX_TURN_MS = 24 * 3600 * 1000


class Note(IntEnum):
    """What a player stream reports (see PlayerEventType)."""

    GAME_ASSIGNED = 1
    GAME_OVER = 2
    HEARTBEAT = 3
    SERVER_SHUTDOWN = 4


@dataclass(frozen=True)
class PlayerNote:
    """A message for a player's stream, frozen when it is made (read on the transport)."""

    type: Note
    game: GameCard | None = None
    seat: int = 0
    color: Color | None = None

    @classmethod
    def about(cls, kind: Note, game: GameSession, seat: int) -> PlayerNote:
        return cls(kind, game.card, seat, game.color_of(seat))


@dataclass
class Player:
    id: str
    name: str
    bot: bool
    owner: str = ""


@dataclass(frozen=True)
class Principal:
    """Who a token speaks for: a registered player, or one seat of one match."""

    player_id: str | None = None
    match_id: str | None = None
    seat: int | None = None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_id() -> str:
    return secrets.token_hex(6)


class Arbiter:
    """The registry of players, matches and games; the Host its matches run under."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.players: dict[str, Player] = {}
        self.by_name: dict[str, Player] = {}
        self.tokens: dict[str, Principal] = {}
        self.matches: dict[str, MatchSession] = {}
        self.games: dict[str, GameSession] = {}
        self.player_sinks: dict[str, set[Sink]] = {}
        self.ladders: dict[str, Ladder] = {}
        self.nursery: trio.Nursery | None = None
        self.closing = False

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self.restore()
            task_status.started()
            await trio.sleep_forever()

    # -- players and tokens -------------------------------------------------------------
    def register_player(self, name: str, bot: bool, owner: str = "") -> tuple[str, str]:
        if not NAME.match(name):
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a player name is 1-40 letters, digits, '.', '_' or '-'"
            )
        if name in self.by_name:
            raise ArbiterError(Code.ALREADY_EXISTS, f"player name {name!r} is taken")
        if len(owner) > 80:
            raise ArbiterError(Code.INVALID_ARGUMENT, "an owner is at most 80 characters")
        player = Player(new_id(), name, bot, owner)
        token = secrets.token_urlsafe(32)
        self.store.add_player(player.id, name, bot, token_hash(token), owner)
        self.players[player.id] = self.by_name[name] = player
        self.tokens[token_hash(token)] = Principal(player_id=player.id)
        log.info("player registered name=%s id=%s", name, player.id)
        return player.id, token

    def authenticate(self, token: str | None, *, required: bool = True) -> Principal | None:
        if not token:
            if required:
                raise ArbiterError(
                    Code.UNAUTHENTICATED, "missing token: send 'authorization: Bearer <token>'"
                )
            return None
        principal = self.tokens.get(token_hash(token))
        if principal is None:
            raise ArbiterError(Code.UNAUTHENTICATED, "unknown token")
        return principal

    # -- matches ------------------------------------------------------------------------
    def create_match(self, spec: MatchSpec) -> tuple[MatchSession, str, str]:
        if self.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        try:
            variant(spec.options.variant).check(spec.options)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, str(e)) from None
        if not 1 <= spec.target <= MAX_TARGET:
            raise ArbiterError(Code.INVALID_ARGUMENT, f"target_points must be 1..{MAX_TARGET}")
        terms = spec.terms
        if not 0 < terms.turn_ms <= MAX_TURN_MS or terms.time_bank_ms > MAX_TURN_MS:
            raise ArbiterError(Code.INVALID_ARGUMENT, "turn_time_ms must be 1 ms to 24 h")
        seats = []
        for index, (player_name, display) in enumerate((spec.first, spec.second)):
            if player_name:
                player = self.by_name.get(player_name)
                if player is None:
                    raise ArbiterError(Code.NOT_FOUND, f"no player named {player_name!r}")
                seats.append(Seat(index, player.name, player.bot, player.id, player.owner))
            else:
                seats.append(Seat(index, (display or f"player {index + 1}")[:40]))
        if seats[0].player_id and seats[0].player_id == seats[1].player_id:
            raise ArbiterError(Code.INVALID_ARGUMENT, "a player cannot take both seats")
        start = None
        rules = variant(spec.options.variant)
        try:
            dice = Dice(spec.seed, spec.dice_script)
            if spec.start_position:
                start = rules.parse(spec.start_position)
                if start.turn is not Color.WHITE:  # white moves first (RULES.md §2)
                    start = rules.passed(start)
                if rules.result(start, spec.options.rules) is not None:
                    raise ValueError("the game would be over before it starts")
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, str(e)) from None
        match = MatchSession(
            self,
            new_id(),
            spec.options,
            spec.target,
            (seats[0], seats[1]),
            turn_ms=terms.turn_ms,
            time_bank_ms=terms.time_bank_ms,
            auto_play_forced=terms.auto_play_forced,
            dice=dice,
            start=start,
            start_timeout=spec.start_timeout_ms / 1000,
            new_id=new_id,
            illegal_play_limit=terms.illegal_play_limit,
            ladder=spec.ladder,
            pair_id=spec.pair_id,
            first_seat_white=spec.first_seat_white,
        )
        seat_tokens = ["", ""]
        for seat in seats:
            if seat.player_id is None:
                token = secrets.token_urlsafe(32)
                self.tokens[token_hash(token)] = Principal(match_id=match.id, seat=seat.index)
                seat_tokens[seat.index] = token
                self.store.add_seat_token(match.id, seat.index, token_hash(token))
        self.store.add_match(match)
        self.matches[match.id] = match
        self.game_created(match.current)
        assert self.nursery is not None
        self.nursery.start_soon(self._run_match, match)
        log.info(
            "match created id=%s target=%d seats=%s,%s",
            match.id,
            spec.target,
            seats[0].name,
            seats[1].name,
        )
        return match, seat_tokens[0], seat_tokens[1]

    async def _run_match(self, match: MatchSession) -> None:
        try:
            await match.run()
            self.store.update_match(match)
        except ArbiterError as e:
            # The journal cannot be written: stop this match where its journal ends; a
            # restart on a healthy store resumes it from there.
            log.error("match %s stopped: %s", match.id, e.message)
            match.current.close_streams(EventType.SERVER_SHUTDOWN)

    # -- games --------------------------------------------------------------------------
    def game(self, game_id: str) -> GameSession:
        game = self.games.get(game_id)
        if game is None:
            raise ArbiterError(Code.NOT_FOUND, f"no game {game_id!r}")
        return game

    def list_games(self, status: int, limit: int, ladder: str = "") -> list[GameSession]:
        games = [
            g
            for g in reversed(self.games.values())
            if (not status or g.status == status) and (not ladder or g.match.ladder == ladder)
        ]
        return games[: max(1, min(limit or 50, 10_000))]

    def seat_in(self, game: GameSession, principal: Principal | None) -> int | None:
        """The seat ``principal`` holds in ``game``'s match, or None."""
        if principal is None:
            return None
        if principal.match_id is not None:
            return principal.seat if principal.match_id == game.match.id else None
        for seat in game.match.seats:
            if seat.player_id == principal.player_id:
                return seat.index
        return None

    def _seat_for_action(self, token: str | None, game_id: str) -> tuple[GameSession, int]:
        principal = self.authenticate(token)
        game = self.game(game_id)
        seat = self.seat_in(game, principal)
        if seat is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "you hold no seat in this game")
        return game, seat

    def viewer(self, token: str | None, game_id: str) -> tuple[GameSession, int | None]:
        """Whose view of a game a caller gets: (game, seat), seat None for a spectator.

        No token: a spectator. A token must hold a seat in the game: a bot that sent the
        wrong token is told so instead of silently getting a spectator's view, which never
        carries legal plays.
        """
        principal = self.authenticate(token, required=False)
        game = self.game(game_id)
        seat = self.seat_in(game, principal)
        if principal is not None and seat is None:
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "your token holds no seat in this game; send no token to watch it",
            )
        return game, seat

    def subscribe_game(
        self, token: str | None, game_id: str, after_seq: int, from_start: bool, sink: Sink
    ) -> tuple[GameSession, int | None, list, bool]:
        """Subscribe ``sink``: (game, seat or None, events to send first, whether live)."""
        game, seat = self.viewer(token, game_id)
        if self.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        backlog, live = game.subscribe(sink, seat, after_seq, from_start)
        return game, seat, backlog, live

    def unsubscribe_game(self, game_id: str, sink: Sink, seat: int | None) -> None:
        game = self.games.get(game_id)
        if game is not None:
            game.unsubscribe(sink, seat)

    def submit_play(
        self, token: str | None, game_id: str, turn_id: int, notation: str | None, end: str | None
    ) -> Accepted:
        game, seat = self._seat_for_action(token, game_id)
        return game.submit(seat, turn_id, notation, end)

    def resign(self, token: str | None, game_id: str) -> GameResult:
        game, seat = self._seat_for_action(token, game_id)
        return game.resign(seat)

    # -- player streams -----------------------------------------------------------------
    @staticmethod
    def _listener_key(principal: Principal) -> str:
        """Player streams are keyed by player, or by match seat for a seat token."""
        if principal.player_id is not None:
            return principal.player_id
        return f"{principal.match_id}/{principal.seat}"

    def subscribe_player(self, token: str | None, sink: Sink) -> list[PlayerNote]:
        """Follow a player's games (or, with a seat token, the games of that seat's match)."""
        principal = self.authenticate(token)
        assert principal is not None
        if self.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        self.player_sinks.setdefault(self._listener_key(principal), set()).add(sink)
        notes = []
        for game in self.games.values():
            if game.status in (Status.WAITING, Status.IN_PROGRESS):
                seat = self.seat_in(game, principal)
                if seat is not None:
                    notes.append(PlayerNote.about(Note.GAME_ASSIGNED, game, seat))
        return notes

    def unsubscribe_player(self, token: str | None, sink: Sink) -> None:
        principal = self.tokens.get(token_hash(token or ""))
        if principal is not None:
            self.player_sinks.get(self._listener_key(principal), set()).discard(sink)

    def _notify(self, game: GameSession, kind: Note) -> None:
        for seat in game.match.seats:
            keys = [f"{game.match.id}/{seat.index}"]
            if seat.player_id:
                keys.append(seat.player_id)
            for key in keys:
                for sink in list(self.player_sinks.get(key, ())):
                    sink.send(PlayerNote.about(kind, game, seat.index))

    # -- hooks from sessions ------------------------------------------------------------
    def game_created(self, game: GameSession) -> None:
        self.games[game.id] = game
        self.store.add_game(game)
        self._notify(game, Note.GAME_ASSIGNED)

    def game_over(self, game: GameSession) -> None:
        self.store.update_game(game)
        self._notify(game, Note.GAME_OVER)
        if game.match.ladder in self.ladders:
            self.ladders[game.match.ladder].game_over(game)

    # -- ladders ------------------------------------------------------------------------
    def create_ladder(self, name: str, options: LadderOptions) -> tuple[Ladder, bool]:
        """The ladder ``name``, created with ``options`` if it does not exist yet."""
        if not NAME.match(name):
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a ladder name is 1-40 letters, digits, '.', '_' or '-'"
            )
        if name in self.ladders:
            return self.ladders[name], False
        if not 0 < options.turn_ms <= MAX_TURN_MS or options.max_games_per_bot < 2:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a ladder needs a turn time and room for a pair (2 games)"
            )
        ladder = self._open_ladder(name, options)
        self.store.add_ladder(name, options)
        log.info("ladder created name=%s %s", name, options)
        return ladder, True

    def _open_ladder(self, name: str, options: LadderOptions) -> Ladder:
        ladder = self.ladders[name] = Ladder(self, name, options)
        assert self.nursery is not None
        self.nursery.start_soon(ladder.run)
        return ladder

    def ladder(self, name: str) -> Ladder:
        if name not in self.ladders:
            raise ArbiterError(Code.NOT_FOUND, f"no ladder {name!r}")
        return self.ladders[name]

    def join_ladder(self, token: str | None, name: str, ready: bool) -> None:
        principal = self.authenticate(token)
        if principal is None or principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "joining a ladder needs a player token")
        player = self.players[principal.player_id]
        self.ladder(name).join(player.id, player.name, ready)

    def reissue_token(self, name: str) -> str:
        """A new token for a registered player (operator use, e.g. a resumed local ladder);
        the old one stops working."""
        player = self.by_name.get(name)
        if player is None:
            raise ArbiterError(Code.NOT_FOUND, f"no player named {name!r}")
        for key, principal in list(self.tokens.items()):
            if principal.player_id == player.id:
                del self.tokens[key]
        token = secrets.token_urlsafe(32)
        self.tokens[token_hash(token)] = Principal(player_id=player.id)
        self.store.set_player_token(player.id, token_hash(token))
        return token

    # -- restart ------------------------------------------------------------------------
    def restore(self) -> None:
        """Load what outlives a restart: players and their tokens, ladders and results,
        matches and games (in progress ones go on). A damaged store stops the server with
        a StoreError rather than half-loading it."""
        try:
            self._restore()
        except (ValueError, KeyError, TypeError, IndexError, AssertionError) as e:
            raise StoreError(
                f"{self.store.path}: the journal is damaged ({e!r}); refusing to start from it"
            ) from None

    def _restore(self) -> None:
        for player_id, name, bot, digest, owner in self.store.load_players():
            player = Player(player_id, name, bool(bot), owner)
            self.players[player_id] = self.by_name[name] = player
            self.tokens[digest] = Principal(player_id=player_id)
        for name, options in self.store.load_ladders():
            ladder = self._open_ladder(name, LadderOptions(**options))
            for record in self.store.load_ladder_games(name):
                ladder.restore(LadderGame(**record))
            for player_id, ready in self.store.load_ladder_members(name):
                if player_id in self.players:
                    ladder.members[player_id] = Member(
                        player_id, self.players[player_id].name, bool(ready)
                    )
        for match_id, seat, digest in self.store.load_seat_tokens():
            self.tokens[digest] = Principal(match_id=match_id, seat=seat)
        for row in self.store.load_matches():
            games = [
                (game_id, number, self.store.load_events(game_id))
                for game_id, number in self.store.load_games(row["id"])
            ]
            match = restore_match(self, row, games, new_id)
            self.matches[match.id] = match
            for game in match.games:
                self.games[game.id] = game
            self._restore_ladder_games(match)
            if not match.match.over and match.current.status in (
                Status.WAITING,
                Status.IN_PROGRESS,
            ):
                assert self.nursery is not None
                self.nursery.start_soon(self._run_match, match)
                log.info("match %s restored (game %s)", match.id, match.current.id)

    def _restore_ladder_games(self, match: MatchSession) -> None:
        """Put a restored ladder game back in its ladder's books."""
        ladder = self.ladders.get(match.ladder)
        if ladder is None:
            return
        counted = {r.game_id for r in ladder.results}
        for game in match.games:
            if game.id in counted:
                continue
            if game.status in (Status.FINISHED, Status.ABORTED):
                ladder.game_over(game)  # ended just before the restart, not yet counted
                continue
            ladder.in_progress.add(game.id)
            ladder.pairs.setdefault(match.pair_id, []).append(game.id)
            for seat in match.seats:
                member = ladder.members.get(seat.player_id or "")
                if member is not None:
                    member.playing += 1

    def journal(self, game: GameSession, event: Event) -> None:
        self.store.append_event(game, event)

    def load_events(self, game_id: str, rules: Variant) -> list[Event]:
        return [decode_event(*entry, rules) for entry in self.store.load_events(game_id)]

    # -- shutdown -----------------------------------------------------------------------
    def shutdown(self) -> None:
        """End every stream with a final SERVER_SHUTDOWN message and refuse new work."""
        self.closing = True
        for game in self.games.values():
            game.close_streams(EventType.SERVER_SHUTDOWN)
        for sinks in self.player_sinks.values():
            for sink in list(sinks):
                sink.send(PlayerNote(Note.SERVER_SHUTDOWN))
                sink.close()
            sinks.clear()
