"""The arbiter core: players and tokens, matches and games, subscriptions and actions.

All methods run in the trio thread; the transport bridge calls them (the asynchronous ones
as tasks of their own) and each match is a task in the arbiter's nursery. Every change is
journaled through the group-commit writer and answered only once it is durable.

With a :class:`~server.core.cluster.Cluster` (several instances on one PostgreSQL) the arbiter
runs only the matches whose lease it holds, fences each of their journal writes with the
lease, takes over the matches of instances that died (rebuilt from the journal), answers
a call for a game run elsewhere with where it lives (:class:`~server.errors.Elsewhere`),
reads games, standings and tokens of the other instances from the store, and pairs ladder
games only while it is the leader.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import logging
import math
import re
import secrets
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

import trio

from nardy import Color, GameResult
from nardy.dice import check_client_seed
from nardy.v1 import arbiter_pb2 as api
from nardy.variant import Variant, variant
from server.core import store
from server.core.catalogue import Catalogue
from server.core.clock import Arrival, Arrivals
from server.core.journal import Event, EventType, Status
from server.core.ladder import Ladder, LadderGame, LadderOptions, Member
from server.core.lockstep import Lockstep
from server.core.metrics import Metrics
from server.core.policy import Policy
from server.core.recovery import restore_match
from server.core.session import (
    Accepted,
    GameCard,
    GameSession,
    MatchSession,
    MatchSpec,
    Seat,
    Sink,
)
from server.core.store import LeaseLost, Reader, Store, StoreError, Write
from server.core.views import summary_pb
from server.core.writer import Commit, JournalWriter
from server.errors import ArbiterError, Code, Elsewhere

if TYPE_CHECKING:
    from server.core.cluster import Beat, Cluster, Place

log = logging.getLogger("nardy.server")

NAME = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
MAX_TARGET = 99
MAX_SCRIPT = 1000  # scripted dice (stored with the match): more than a game throws
MAX_TURN_TIME_MS = 24 * 3600 * 1000
MAX_SEED = 2**63 - 1
QUOTE = 100  # characters of a request's text an error message may repeat
ENDED_GAMES = 64  # ended games kept in memory (newest used); the others are read back
RELOAD_S = 1.0  # several instances: standings read a ladder's books back this often at most
RECENT_TOKENS = 256  # ended matches' seat tokens kept in memory; the others are looked up


def clip(text: str, limit: int = 3 * QUOTE) -> str:
    """An error message cut to a sane length (it may repeat parts of a request)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(text: str) -> str:
    """``text`` as an error message quotes it: repr'd, at most QUOTE characters."""
    return repr(text if len(text) <= QUOTE else text[:QUOTE] + "…")


def stuck(rules: Variant, position) -> bool:
    """No throw moves either side (e.g. short nardy, both closed out with checkers on the
    bar): from such a start every turn passes, untimed, for ever. It is never reached in
    play: a side on the bar moves nothing else, so it cannot close its board or hit."""
    throws = list(itertools.combinations_with_replacement(range(1, 7), 2))
    return not any(
        rules.legal_plays(p, dice) for p in (position, rules.passed(position)) for dice in throws
    )


def spec_rigged(spec: MatchSpec) -> bool:
    """True when the creator chose something chance or the rules should decide."""
    return bool(
        spec.seed is not None
        or spec.dice_script
        or spec.start_position
        or spec.first_seat_white is not None
    )


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
    """A message for a player's stream, frozen when it is made (read on the transport)."""

    type: Note
    game: GameCard | RemoteCard | None = None
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
    """Who a token speaks for: the operator, a registered player, or one seat of one match."""

    player_id: str | None = None
    match_id: str | None = None
    seat: int | None = None
    admin: bool = False
    # A seat of a match created by anyone but the operator: its creator's key. Anyone
    # mints seat tokens, so a seat counts as its creator for limits and quotas.
    creator: str = ""

    @property
    def key(self) -> str:
        """A stable name for rate limits and quotas (never the token itself)."""
        if self.admin:
            return "operator"
        if self.player_id is not None:
            return f"player:{self.player_id}"
        return self.creator or f"seat:{self.match_id}/{self.seat}"


OPERATOR = Principal(admin=True)


@dataclass(frozen=True)
class Caller:
    """Who makes a request: the verified principal (None when anonymous) and the peer."""

    principal: Principal | None
    address: str = ""

    @property
    def admin(self) -> bool:
        return self.principal is not None and self.principal.admin

    @property
    def key(self) -> str:
        return self.principal.key if self.principal is not None else f"addr:{self.address}"


AS_OPERATOR = Caller(OPERATOR)


def colour(seat: int, white_seat: int | None) -> Color | None:
    """The colour of ``seat`` when ``white_seat`` plays white (None until known)."""
    if white_seat is None:
        return None
    return Color.WHITE if seat == white_seat else Color.BLACK


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh bearer token: 256 random bits, URL-safe, with a ``nardy_`` prefix so it never
    begins with ``-`` (a command line would read it as an option) and secret scanners can
    recognise it."""
    return "nardy_" + secrets.token_urlsafe(32)


def new_id() -> str:
    return secrets.token_hex(6)


@dataclass(frozen=True)
class _NewMatch:
    """A checked, built match not yet stored: its seat tokens (open seats) and writes."""

    match: MatchSession
    seat_tokens: list[str]
    writes: list[Write]
    challenged: str | None
    creator: str  # the limits key its seats count as ("": the operator's, their own)


class Arbiter:
    """The registry of players, matches and games; the Host its matches run under."""

    def __init__(
        self,
        db: Store,
        *,
        admin_hash: str | None = None,
        policy: Policy | None = None,
        commit_window_s: float = 0.0,
        cluster: Cluster | None = None,
    ) -> None:
        self.store = db
        self.cluster = cluster
        self.leases: dict[str, int] = {}  # match id -> epoch of the lease held (cluster)
        self._creating: set[str] = set()  # matches being created here (cluster)
        self._to_adopt: set[str] = set()  # leases taken, their matches not yet running
        self._beat_now = trio.Event()  # an early heartbeat: a match was handed to us
        self.leading = cluster is None  # pairs ladder games (one server: always)
        self._reload_due = False
        self._reloaded: dict[str, float] = {}  # ladder -> when its books were read back
        self.reader = Reader(db)
        # Plays are stamped on this run's clock (server.core.clock).
        self.arrivals = Arrivals(trio.current_time)
        self.admin_hash = admin_hash  # SHA-256 of the operator token (the token is not kept)
        self.policy = policy or Policy()
        self.players: dict[str, Player] = {}
        self.by_name: dict[str, Player] = {}
        self.names: set[str] = set()  # registered names, case-folded (display names avoid them)
        self.tokens: dict[str, Principal] = {}  # players' and live matches' seat tokens
        self.recent_tokens: dict[str, Principal] = {}  # ended matches' (bounded, oldest out)
        self.seat_digests: dict[str, list[str]] = {}  # live match id -> its seat tokens
        # Live matches and games. An ended match leaves them (once its duplicate pair is
        # over too: until then its seed must stay secret, see ``held``) for the bounded
        # ``ended`` cache; beyond that its games are read back from the store on demand.
        self.matches: dict[str, MatchSession] = {}
        self.games: dict[str, GameSession] = {}
        self.ended: OrderedDict[str, GameSession] = OrderedDict()
        self.held: dict[str, list[MatchSession]] = {}  # pair id -> its ended matches
        self.ended_counts: Counter[Status] = Counter()  # games that left ``games``
        self.player_sinks: dict[str, set[Sink]] = {}
        self.ladders: dict[str, Ladder] = {}
        self.registrations: dict[str, deque[float]] = {}  # address -> recent registrations
        self.unfinished: dict[str, set[str]] = {}  # caller key -> its matches not yet over
        self.catalogue = Catalogue()
        self.nursery: trio.Nursery | None = None
        self.closing = False
        self.metrics = Metrics()
        self.writer = JournalWriter(db, commit_window_s, self.metrics.journal_commit.observe)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            await nursery.start(self.writer.run)
            await self.restore()
            task_status.started()
            await trio.sleep_forever()

    # -- players and tokens -------------------------------------------------------------
    async def register_player(
        self, caller: Caller, name: str, bot: bool, owner: str = ""
    ) -> tuple[str, str]:
        if not caller.admin:
            if not self.policy.registration_open:
                raise ArbiterError(
                    Code.PERMISSION_DENIED,
                    "registration is closed on this server: ask its operator to register you",
                )
            self._registration_quota(caller.address)
        if not NAME.match(name):
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a player name is 1-40 letters, digits, '.', '_' or '-'"
            )
        if self.cluster is not None:  # registered on another instance?
            await self._learn_players("lower(name) = lower(?)", name)
        if name.casefold() in self.names:
            raise ArbiterError(Code.ALREADY_EXISTS, f"player name {name!r} is taken")
        if len(owner) > 80 or not owner.isprintable():
            raise ArbiterError(Code.INVALID_ARGUMENT, "an owner is at most 80 printable characters")
        player = Player(new_id(), name, bot, owner)
        token = new_token()
        self.names.add(name.casefold())  # taken while it is being stored
        try:
            await self.writer.commit(
                store.add_player(player.id, name, bot, token_hash(token), owner)
            )
        except ArbiterError:
            self.names.discard(name.casefold())
            raise
        self._add_player(player, token_hash(token))
        if not caller.admin:
            self.registrations.setdefault(caller.address, deque()).append(trio.current_time())
        log.info("player registered name=%s id=%s", name, player.id)
        return player.id, token

    def _add_player(self, player: Player, digest: str) -> None:
        self.players[player.id] = self.by_name[player.name] = player
        self.names.add(player.name.casefold())
        self.tokens[digest] = Principal(player_id=player.id)

    def _forget_tokens(self, player_id: str) -> None:
        for key, principal in list(self.tokens.items()):
            if principal.player_id == player_id:
                del self.tokens[key]

    async def _learn_players(self, condition: str, *params) -> list[Player]:
        """Players another instance registered (cluster), read from the store."""
        found = []
        for player_id, name, bot, digest, owner in await self.reader.players_where(
            condition, *params
        ):
            if self.tokens.get(digest) != Principal(player_id=player_id):
                self._forget_tokens(player_id)  # its token was reissued elsewhere
                self._add_player(Player(player_id, name, bool(bot), owner), digest)
            found.append(self.players[player_id])
        return found

    def _registration_quota(self, address: str) -> None:
        recent = self.registrations.setdefault(address, deque())
        now = trio.current_time()
        while recent and recent[0] < now - 3600:
            recent.popleft()
        if len(recent) >= self.policy.players_per_hour:
            raise ArbiterError(
                Code.RESOURCE_EXHAUSTED,
                f"at most {self.policy.players_per_hour} registrations per hour from one "
                "address; try again later",
            )

    def principal(self, digest: str | None) -> Principal | None:
        """Who the token of ``digest`` (its hex SHA-256) speaks for, or None (no token, or
        one not known in memory): a dict lookup."""
        if not digest:
            return None
        if self.admin_hash is not None and secrets.compare_digest(digest, self.admin_hash):
            return OPERATOR
        return self.tokens.get(digest) or self.recent_tokens.get(digest)

    async def stored_principal(self, digest: str) -> Principal | None:
        """Who the token of ``digest`` speaks for, looking in the store for the seat tokens
        of matches that ended a while ago, and (several instances) the tokens other
        instances issued."""
        principal = self.principal(digest)
        if principal is not None:
            return principal
        if self.cluster is not None and await self._learn_players("token_hash = ?", digest):
            return self.tokens.get(digest)  # a player registered on another instance
        row = await self.reader.seat_token(digest)
        if row is None:
            return None
        principal = Principal(match_id=row[0], seat=row[1], creator=row[2])
        self._remember_token(digest, principal)
        return principal

    def _remember_token(self, digest: str, principal: Principal) -> None:
        self.recent_tokens[digest] = principal
        while len(self.recent_tokens) > RECENT_TOKENS:
            del self.recent_tokens[next(iter(self.recent_tokens))]

    def authenticate(self, digest: str | None, *, required: bool = True) -> Principal | None:
        """Who the caller's token (``digest``) speaks for; UNAUTHENTICATED if it is unknown,
        or (``required``) missing."""
        if not digest:
            if required:
                raise ArbiterError(
                    Code.UNAUTHENTICATED, "missing token: send 'authorization: Bearer <token>'"
                )
            return None
        principal = self.principal(digest)
        if principal is None:
            raise ArbiterError(Code.UNAUTHENTICATED, "unknown token")
        return principal

    def require_operator(self, digest: str | None) -> None:
        principal = self.authenticate(digest)
        if principal is None or not principal.admin:
            raise ArbiterError(
                Code.PERMISSION_DENIED, "only the operator (admin token) may do this"
            )

    # -- matches ------------------------------------------------------------------------
    async def create_match(
        self, caller: Caller | None, spec: MatchSpec
    ) -> tuple[MatchSession, str, str]:
        """Check who may create this match, then create it (nothing is written on refusal).

        ``caller`` None is the server itself.

        The operator may seat anyone and set the dice, the seed, the start or the first
        colour. Anyone may open a casual game between two open seats, set up as they like.
        A registered player is seated only by itself: seating another registered player
        makes a challenge that player must accept (see accept_challenge).
        """
        caller = caller or AS_OPERATOR
        new = await self._new_match(caller, spec)
        await self._store_new(caller, [new])
        return self._open(new)

    async def create_pair(self, specs: list[MatchSpec]) -> list[MatchSession]:
        """The server's own matches of a ladder's duplicate pair, stored in one transaction:
        a crash or a refused commit leaves both or neither, never a game waiting for a
        partner that does not exist."""
        news = [await self._new_match(AS_OPERATOR, spec) for spec in specs]
        await self._store_new(AS_OPERATOR, news)
        return [self._open(new)[0] for new in news]

    async def _new_match(self, caller: Caller, spec: MatchSpec) -> _NewMatch:
        """Check a match and build it, with what is to be stored; nothing written yet."""
        if self.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        try:
            variant(spec.options.variant).check(spec.options)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None
        if not 1 <= spec.target <= MAX_TARGET:
            raise ArbiterError(Code.INVALID_ARGUMENT, f"target_points must be 1..{MAX_TARGET}")
        terms = spec.terms
        if not 0 < terms.turn_time_ms <= MAX_TURN_TIME_MS:
            raise ArbiterError(Code.INVALID_ARGUMENT, "turn_time_ms must be 1 ms to 24 h")
        if terms.time_bank_ms > MAX_TURN_TIME_MS:
            raise ArbiterError(Code.INVALID_ARGUMENT, "time_bank_ms must be at most 24 h")
        cap = MAX_TURN_TIME_MS if caller.admin else self.policy.max_start_timeout_ms
        if not 0 < spec.start_timeout_ms <= cap:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, f"start_timeout_ms must be 1..{cap} on this server"
            )
        if spec.seed is not None and not 0 <= spec.seed <= MAX_SEED:
            raise ArbiterError(Code.INVALID_ARGUMENT, "a seed is 0..2^63-1")
        if self.cluster is not None:
            for name in (spec.first[0], spec.second[0]):
                if name and name not in self.by_name:
                    await self._learn_players("name = ?", name)
        seats = [self._seat(index, *names) for index, names in enumerate((spec.first, spec.second))]
        if seats[0].player_id and seats[0].player_id == seats[1].player_id:
            raise ArbiterError(Code.INVALID_ARGUMENT, "a player cannot take both seats")
        challenged = self._consent(spec, seats, caller)
        if not caller.admin:
            self._open_quota(caller.key)
        start = None
        rules = variant(spec.options.variant)
        try:
            if any(not 1 <= d <= 6 for d in spec.dice_script):
                raise ValueError("scripted dice must be 1..6")
            if len(spec.dice_script) > MAX_SCRIPT:
                raise ValueError(f"at most {MAX_SCRIPT} scripted dice")
            if spec.start_position:
                start = rules.parse(spec.start_position)
                if start.turn is not Color.WHITE:  # white moves first (RULES.md §2)
                    start = rules.passed(start)
                if rules.result(start, spec.options.rules) is not None:
                    raise ValueError("the game would be over before it starts")
                if stuck(rules, start):  # every turn would pass at once, forever
                    raise ValueError("neither side could ever move: the game would never end")
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None
        match = MatchSession(
            self,
            new_id(),
            spec.options,
            spec.target,
            (seats[0], seats[1]),
            turn_time_ms=terms.turn_time_ms,
            time_bank_ms=terms.time_bank_ms,
            auto_play_forced=terms.auto_play_forced,
            seed=spec.seed,
            script=spec.dice_script,
            server_seed=spec.server_seed,
            pair=spec.pair,
            start=start,
            start_timeout=spec.start_timeout_ms / 1000,
            new_id=new_id,
            illegal_play_limit=terms.illegal_play_limit,
            ladder=spec.ladder,
            pair_id=spec.pair_id,
            first_seat_white=spec.first_seat_white,
            challenged=challenged,
        )
        seat_tokens = ["", ""]
        creator = "" if caller.admin else caller.key
        writes = [store.add_match(match)]
        for seat in seats:
            if seat.player_id is None:
                seat_tokens[seat.index] = new_token()
                digest = token_hash(seat_tokens[seat.index])
                writes.append(store.add_seat_token(match.id, seat.index, digest, creator))
        if self.cluster is not None:  # run here: the lease is written with the match
            writes.append(self.cluster.lease(match.id, spec.pair_id or match.id))
        writes.append(store.add_game(match.current))
        return _NewMatch(match, seat_tokens, writes, challenged, creator)

    async def _store_new(self, caller: Caller, news: list[_NewMatch]) -> None:
        """Store new matches in one transaction (refused: nothing of them is kept)."""
        ids = {new.match.id for new in news}
        if not caller.admin:  # counted while they are being stored
            self.unfinished.setdefault(caller.key, set()).update(ids)
        self._creating |= ids  # not to be adopted by a heartbeat meanwhile
        try:
            await self.writer.commit(*(w for new in news for w in new.writes))
        except ArbiterError:
            self.unfinished.get(caller.key, set()).difference_update(ids)
            raise
        finally:
            self._creating -= ids

    def _open(self, new: _NewMatch) -> tuple[MatchSession, str, str]:
        """Run a stored new match: its seat tokens, its listing, its challenge."""
        match, seat_tokens = new.match, new.seat_tokens
        if self.cluster is not None:
            self.leases[match.id] = 1
        for index, token in enumerate(seat_tokens):
            if token:
                self._add_seat_token(match.id, index, token_hash(token), new.creator)
        self.matches[match.id] = match
        self._game_added(match.current)
        if new.challenged is not None:
            seat = next(s.index for s in match.seats if s.player_id == new.challenged)
            self._notify_player(
                new.challenged, PlayerNote.about(Note.CHALLENGE, match.current, seat)
            )
        assert self.nursery is not None
        self.nursery.start_soon(self._run_match, match)
        log.info(
            "match created id=%s target=%d seats=%s,%s",
            match.id,
            match.match.target,
            match.seats[0].name,
            match.seats[1].name,
        )
        return match, seat_tokens[0], seat_tokens[1]

    def _add_seat_token(self, match_id: str, seat: int, digest: str, creator: str) -> None:
        self.tokens[digest] = Principal(match_id=match_id, seat=seat, creator=creator)
        self.seat_digests.setdefault(match_id, []).append(digest)

    def _seat(self, index: int, player_name: str, display: str) -> Seat:
        if player_name:
            player = self.by_name.get(player_name)
            if player is None:
                raise ArbiterError(Code.NOT_FOUND, f"no player named {quote(player_name)}")
            return Seat(index, player.name, player.bot, player.id, player.owner)
        name = display or f"player {index + 1}"
        if len(name) > 40 or not name.isprintable():
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a display name is at most 40 printable characters"
            )
        if name.casefold() in self.names:
            raise ArbiterError(
                Code.INVALID_ARGUMENT,
                f"{quote(name)} is a registered player's name; an open seat cannot take it",
            )
        return Seat(index, name)

    def _consent(self, spec: MatchSpec, seats: list[Seat], caller: Caller) -> str | None:
        """Refuse what the caller may not set up; return the player to challenge, if any."""
        registered = [s for s in seats if s.player_id]
        if caller.admin or not registered:
            return None
        if spec_rigged(spec):
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "seed, dice, start_position and first_seat_color are for the operator, or "
                "for games between open seats",
            )
        me = caller.principal.player_id if caller.principal is not None else None
        if me is None or me not in {s.player_id for s in registered}:
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "a registered player is seated only by itself (with its own token), by a "
                "ladder or by the operator",
            )
        others = [s.player_id for s in registered if s.player_id != me]
        return others[0] if others else None

    def _open_quota(self, key: str) -> None:
        """Refuse a new match to a caller with too many not yet over (waiting for their
        seats or in progress: a game in progress lives on the server until it ends)."""
        mine = self.unfinished.get(key)
        if not mine:
            return
        for match_id in list(mine):
            match = self.matches.get(match_id)
            if match is None or match.decided:  # over (or run by another instance)
                mine.discard(match_id)
        if len(mine) >= self.policy.open_matches:
            raise ArbiterError(
                Code.RESOURCE_EXHAUSTED,
                f"you have {len(mine)} matches not yet over; finish or let them expire "
                "before creating more",
            )

    # -- challenges ---------------------------------------------------------------------
    async def _challenge(self, digest: str | None, match_id: str) -> MatchSession:
        principal = self.authenticate(digest)
        match = self.matches.get(match_id)
        if match is None and self.cluster is not None:
            place = self.cluster.place(
                await self.store.query(self.cluster.PLACE_OF_MATCH, (match_id,))
            )
            if place is not None and place.owner is not None:
                self._elsewhere(place)
        if match is None:
            raise ArbiterError(Code.NOT_FOUND, f"no match {quote(match_id)}")
        if principal is None or principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "answering a challenge needs a player token")
        if match.challenged != principal.player_id:
            raise ArbiterError(Code.FAILED_PRECONDITION, "no challenge to you is pending there")
        return match

    async def accept_challenge(self, digest: str | None, match_id: str) -> MatchSession:
        """The challenged player takes its seat: the match goes ahead like any other."""
        match = await self._challenge(digest, match_id)
        challenged, match.challenged = match.challenged, None
        try:
            await self.writer.commit(store.update_match_options(match), fence=self.fence(match))
        except ArbiterError:
            match.challenged = challenged
            raise
        self._notify(match.current, Note.GAME_ASSIGNED)
        log.info("challenge accepted match=%s", match.id)
        return match

    async def decline_challenge(self, digest: str | None, match_id: str) -> None:
        match = await self._challenge(digest, match_id)
        await match.call_off("the challenge was declined")
        log.info("challenge declined match=%s", match.id)

    def list_challenges(self, digest: str | None) -> list[MatchSession]:
        """The matches waiting for the calling player to accept its challenge, oldest first."""
        principal = self.authenticate(digest)
        assert principal is not None
        if principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "challenges are made to a player token")
        return [
            m
            for m in self.matches.values()
            if m.challenged == principal.player_id and m.current.status is Status.WAITING
        ]

    # -- operator actions ---------------------------------------------------------------
    async def void_game(self, digest: str | None, game_id: str) -> GameSession:
        """Void a game: it ends (or stays ended) without a result that counts anywhere."""
        self.require_operator(digest)
        game = await self.game(game_id)
        if game.status in (Status.WAITING, Status.IN_PROGRESS):
            await game.match.call_off("voided by the operator")
        elif game.status is Status.FINISHED:
            game.status = Status.ABORTED
            writes = [store.update_game(game)]
            ladder = self.ladders.get(game.match.ladder)
            record = None
            if ladder is not None:
                stored = await self.reader.ladder_games(ladder.name)
                record = ladder.void(game.id, [LadderGame(**r) for r in stored])
            if record is not None:
                writes.append(store.add_ladder_game(ladder.name, record))
            await self.writer.commit(*writes)
            if game.id not in self.games:  # counted among the ended ones already
                self.ended_counts[Status.FINISHED] -= 1
                self.ended_counts[Status.ABORTED] += 1
            self._publish(game)
        log.info("game %s voided by the operator", game.id)
        return game

    def list_players(self, digest: str | None) -> list[Player]:
        self.require_operator(digest)
        return list(self.players.values())

    async def _run_match(self, match: MatchSession) -> None:
        try:
            await match.run()
            if match.called_off:
                await match.settled.wait()  # its abort is written before its end
            if self.cluster is not None and match.id not in self.leases:
                return  # taken over by another instance: it writes the rest
            await self._end_match(match)
        except LeaseLost:
            self._lose(match.id)
        except ArbiterError as e:
            # The journal cannot be written: stop this match where its journal ends; a
            # restart on a healthy store resumes it from there.
            log.error("match %s stopped: %s", match.id, e.message)
            match.current.close_streams(EventType.SERVER_SHUTDOWN)

    async def _finish_ended(self, match: MatchSession) -> None:
        """A match taken over after its last game ended: only its end is left to write."""
        try:
            await self._end_match(match)
        except LeaseLost:
            self._lose(match.id)
        except ArbiterError as e:
            log.error("match %s: its end not written: %s", match.id, e.message)

    async def _end_match(self, match: MatchSession) -> None:
        """The match is over: its scores, and (cluster) its lease given up."""
        writes = [store.update_match(match)]
        if self.cluster is not None:
            writes.append(self.cluster.release(match.id))
        await self.writer.commit(*writes, fence=self.fence(match))
        self.leases.pop(match.id, None)

    # -- games --------------------------------------------------------------------------
    async def game(self, game_id: str, *, read: bool = False) -> GameSession:
        """A game by id: live, recently ended, or read back from the store. With several
        instances, a game another one runs is answered with where it lives (Elsewhere),
        or (``read``: only to look at it) read from the store as it is now."""
        game = self.games.get(game_id)
        if game is not None:
            return game
        game = self.ended.get(game_id)
        if game is not None:
            self.ended.move_to_end(game_id)
            return game
        if self.cluster is not None and len(game_id) <= 64:
            place = self.cluster.place(
                await self.store.query(self.cluster.PLACE_OF_GAME, (game_id,))
            )
            if place is not None and place.owner is not None:  # not over: run somewhere
                if not read:
                    self._elsewhere(place)
                row = await self.reader.match(place.match_id)
                if row is not None:
                    alone = await self._read_alone(row)
                    match = await self._read_match(row, {alone.pair_id: alone} if alone else {})
                    return next(g for g in match.games if g.id == game_id)
        return await self._load_ended(game_id)

    async def _load_ended(self, game_id: str) -> GameSession:
        """An ended game's match, read back from the store into the ``ended`` cache."""
        missing = ArbiterError(Code.NOT_FOUND, f"no game {quote(game_id)}")
        if len(game_id) > 64:
            raise missing
        match_id = await self.reader.match_of(game_id)
        row = await self.reader.match(match_id) if match_id is not None else None
        if row is None:
            raise missing
        # each game's last entry only: its state (a replay reads its events on demand)
        games = await self.reader.match_ends(match_id)
        found = self.games.get(game_id) or self.ended.get(game_id)  # loaded meanwhile
        if found is not None:
            return found
        pair = await self._read_alone(row)
        match = restore_match(self, row, games, new_id, pair)
        if any(g.status not in (Status.FINISHED, Status.ABORTED) for g in match.games):
            raise missing  # not ended, and not run here
        if pair is None or pair.over:  # (else read again once its partner has ended)
            for g in match.games:
                self._keep_ended(g)
        return next(g for g in match.games if g.id == game_id)

    async def _read_alone(self, row: dict) -> Lockstep | None:
        """The pair of a ladder match read back alone, to be looked at (None: no pair).
        While the pair's other match still plays on another instance the pair waits for
        it and is never over, so its seed stays secret: it would tell every coming throw
        of the other game. (On one server a pair's ended match stays in memory until the
        pair is over, see _match_over: one read back here has no partner playing.)"""
        pair_id = row["options"].get("pair_id", "")
        if not pair_id:
            return None
        playing = self.cluster is not None and await self.reader.pair_playing(pair_id)
        return Lockstep(pair_id, 2 if playing else 1)

    def _keep_ended(self, game: GameSession) -> None:
        self.ended[game.id] = game
        self.ended.move_to_end(game.id)
        while len(self.ended) > ENDED_GAMES:
            _, old = self.ended.popitem(last=False)
            if not any(g.id in self.ended for g in old.match.games):
                old.match.release()

    def _match_over(self, match: MatchSession) -> None:
        """The match's last game has ended: it leaves memory for the bounded caches (with
        the other match of its duplicate pair, once that has ended too)."""
        if match.pair is not None and not match.pair.over:
            self.held.setdefault(match.pair_id, []).append(match)
            return
        for ended in (*self.held.pop(match.pair_id, ()), match):
            self.matches.pop(ended.id, None)
            for digest in self.seat_digests.pop(ended.id, ()):
                principal = self.tokens.pop(digest, None)
                if principal is not None:
                    self._remember_token(digest, principal)
            for game in ended.games:
                if self.games.pop(game.id, None) is not None:
                    self.ended_counts[game.status] += 1
                self._keep_ended(game)

    def _publish(self, game: GameSession, *, new: bool = False, tell: bool = True) -> None:
        """Show the game's (``new``: a new game's) summary to ListGames (see catalogue),
        here and (``tell``, cluster) on the other instances."""
        summary = summary_pb(game.card, game.snapshot())
        if new:
            self.catalogue.add(game.id, summary)
        else:
            self.catalogue.publish(game.id, summary)
        if tell and self.cluster is not None:
            data = base64.b64encode(summary.SerializeToString()).decode()
            self._tell_others("summary", g=game.id, s=data, new=new)

    def seat_in(self, game: GameSession, principal: Principal | None) -> int | None:
        """The seat ``principal`` holds in ``game``'s match, or None."""
        if principal is None:
            return None
        if principal.match_id is not None:
            return principal.seat if principal.match_id == game.match.id else None
        if principal.player_id == game.match.challenged:
            return None  # not seated until the challenge is accepted
        for seat in game.match.seats:
            if seat.player_id == principal.player_id:
                return seat.index
        return None

    async def _seat_for_action(self, digest: str | None, game_id: str) -> tuple[GameSession, int]:
        principal = self.authenticate(digest)
        game = await self.game(game_id)
        seat = self.seat_in(game, principal)
        if seat is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "you hold no seat in this game")
        return game, seat

    async def viewer(self, digest: str | None, game_id: str) -> tuple[GameSession, int | None]:
        """Whose view of a game a caller gets: (game, seat), seat None for a spectator.

        No token: a spectator. A token must hold a seat in the game: a bot that sent the
        wrong token is told so instead of silently getting a spectator's view, which never
        carries legal plays.
        """
        self.authenticate(digest, required=False)  # before any store read
        return self._viewer_of(digest, await self.game(game_id))

    async def view(self, digest: str | None, game_id: str) -> tuple[GameSession, int | None]:
        """``viewer`` for GetGame: a game another instance runs is read from the store."""
        self.authenticate(digest, required=False)  # before any store read
        return self._viewer_of(digest, await self.game(game_id, read=True))

    def _viewer_of(self, digest: str | None, game: GameSession) -> tuple[GameSession, int | None]:
        principal = self.authenticate(digest, required=False)
        seat = self.seat_in(game, principal)
        if principal is not None and seat is None and not principal.admin:
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "your token holds no seat in this game; send no token to watch it",
            )
        return game, seat

    async def subscribe_game(
        self,
        digest: str | None,
        game_id: str,
        after_seq: int,
        from_start: bool,
        sink_for: Callable[[GameSession, int | None, bool], Sink],
        client_seed: str = "",
        own_turns: bool = False,
    ) -> tuple[GameSession, int | None, list, bool]:
        """Subscribe the sink of the caller's view (``sink_for(game, seat or None, own
        turns)``): (game, seat or None, events to send first, whether live).

        A seat may add its ``client_seed`` to the game's dice until the game starts, and
        ask for its ``own_turns`` only (EVENT_FILTER_OWN_TURNS).
        """
        try:
            check_client_seed(client_seed)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, str(e)) from None
        game, seat = await self.viewer(digest, game_id)
        if own_turns and seat is None:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "EVENT_FILTER_OWN_TURNS is for a seat's stream (its token)"
            )
        if self.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        if seat is not None:
            game.offer_client_seed(seat, client_seed)
        sink = sink_for(game, seat, own_turns)
        backlog, live = await game.subscribe(sink, seat, after_seq, from_start, own_turns)
        return game, seat, backlog, live

    def unsubscribe_game(
        self, game_id: str, sink: Sink, seat: int | None, *, last: bool = True
    ) -> None:
        game = self.games.get(game_id)
        if game is not None:
            game.unsubscribe(sink, seat, last=last)

    async def submit_play(
        self,
        digest: str | None,
        game_id: str,
        turn_id: int,
        notation: str | None,
        end: str | None,
        arrival: Arrival | None = None,
    ) -> Accepted:
        """Judge a play that reached the edge at ``arrival`` (see server.core.clock);
        answered once it is durable."""
        try:
            game, seat = await self._seat_for_action(digest, game_id)
            try:
                return await game.submit(seat, turn_id, notation, end, arrival)
            except LeaseLost:
                await self._lost_while_acting(game)
                raise
        finally:
            if arrival is not None and self.arrivals.settle(arrival):
                self.arrival_settled(arrival)

    def turn_sent(self, game_id: str, turn_id: int, at: float) -> None:
        """The edge handed a seat's stream its turn at ``at`` (server.core.clock)."""
        game = self.games.get(game_id)
        if game is not None:
            game.turn_sent(turn_id, at)

    def arrival_settled(self, arrival: Arrival) -> None:
        """A stamped play was judged or dropped while its game's turn, past its deadline,
        was waiting for it: let the turn decide."""
        game = self.games.get(arrival.game_id)
        if game is not None:
            game.arrival_settled()

    async def resign(self, digest: str | None, game_id: str) -> GameResult:
        game, seat = await self._seat_for_action(digest, game_id)
        try:
            return await game.resign(seat)
        except LeaseLost:
            await self._lost_while_acting(game)
            raise

    async def _lost_while_acting(self, game: GameSession) -> None:
        """A play or resignation met the fence: the game was taken over. Stop it here and
        answer with where it lives now (Elsewhere), if that is known yet."""
        self._lose(game.match.id)
        await self.game(game.id)

    # -- player streams -----------------------------------------------------------------
    @staticmethod
    def listener_key(principal: Principal) -> str:
        """Player streams are keyed by player, or by match seat for a seat token."""
        if principal.player_id is not None:
            return principal.player_id
        return f"{principal.match_id}/{principal.seat}"

    async def subscribe_player(self, digest: str | None, sink: Sink) -> list[PlayerNote]:
        """Follow a player's games (or, with a seat token, the games of that seat's match);
        with several instances, the games of every instance (from the store and news)."""
        principal = self.authenticate(digest)
        assert principal is not None
        if self.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        elsewhere = await self._games_elsewhere(principal) if self.cluster is not None else []
        self.player_sinks.setdefault(self.listener_key(principal), set()).add(sink)
        notes = elsewhere
        for game in self.games.values():
            if game.status in (Status.WAITING, Status.IN_PROGRESS):
                seat = self.seat_in(game, principal)
                if seat is not None:
                    notes.append(PlayerNote.about(Note.GAME_ASSIGNED, game, seat))
                elif principal.player_id and game.match.challenged == principal.player_id:
                    index = game.match.seat_index(principal.player_id)
                    notes.append(PlayerNote.about(Note.CHALLENGE, game, index))
        return notes

    async def _games_elsewhere(self, principal: Principal) -> list[PlayerNote]:
        """The unfinished games of ``principal`` that other instances run (cluster)."""
        notes = []
        for game_id, row in await self.reader.unfinished_games():
            if game_id in self.games:
                continue
            seats = self._seats_of(row["seats"])
            card = RemoteCard(game_id, row["id"], seats)
            challenged = row["options"].get("challenged")
            if principal.match_id is not None:
                if principal.match_id == row["id"] and principal.seat is not None:
                    notes.append(PlayerNote(Note.GAME_ASSIGNED, card, principal.seat))
                continue
            for seat in seats:
                if seat.player_id and seat.player_id == principal.player_id:
                    kind = Note.CHALLENGE if seat.player_id == challenged else Note.GAME_ASSIGNED
                    notes.append(PlayerNote(kind, card, seat.index))
        return notes

    @staticmethod
    def _seats_of(rows: list) -> tuple[Seat, Seat]:
        """Seats as a news item or a ``matches`` row holds them."""
        a, b = (
            Seat(i, s["name"], s["bot"], s["player_id"], s.get("owner", ""))
            for i, s in enumerate(rows)
        )
        return a, b

    def unsubscribe_player(self, key: str, sink: Sink) -> None:
        """The last player stream ``sink`` fed ended (``key``: its listener key)."""
        sinks = self.player_sinks.get(key)
        if sinks is not None:
            sinks.discard(sink)
            if not sinks:
                del self.player_sinks[key]

    def _notify(self, game: GameSession, kind: Note) -> None:
        self._deliver(game.match.id, game.match.seats, game.match.challenged, kind, game)
        self._tell_note(game, kind)

    def _deliver(
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
                for sink in list(self.player_sinks.get(key, ())):
                    if game is not None:
                        sink.send(PlayerNote.about(kind, game, seat.index))
                    else:
                        sink.send(PlayerNote(kind, card, seat.index, colour(seat.index, white)))

    def _notify_player(self, player_id: str, note: PlayerNote) -> None:
        for sink in list(self.player_sinks.get(player_id, ())):
            sink.send(note)

    # -- the Host of sessions ----------------------------------------------------------
    def journal(self, game: GameSession, *events: Event) -> Commit:
        if events[0].type is EventType.GAME_STARTED:
            self._publish(game)  # the colours are known now
        writes = [store.append_event(game, event) for event in events]
        return self.writer.submit(*writes, fence=self.fence(game.match))

    async def load_events(self, game_id: str, rules: Variant, tail: int = 0) -> list[Event]:
        return await self.reader.events(game_id, rules, tail)

    async def game_created(self, game: GameSession) -> None:
        await self.writer.commit(store.add_game(game), fence=self.fence(game.match))
        self._game_added(game)

    def _game_added(self, game: GameSession) -> None:
        self.games[game.id] = game
        self._publish(game, new=True)
        self._notify(game, Note.GAME_ASSIGNED)

    async def game_over(self, game: GameSession) -> None:
        writes = [store.update_game(game)]
        ladder = self.ladders.get(game.match.ladder)
        record = ladder.game_over(game) if ladder is not None else None
        if record is not None:
            writes.append(store.add_ladder_game(game.match.ladder, record))
        await self.writer.commit(*writes, fence=self.fence(game.match))
        self._publish(game)
        self._notify(game, Note.GAME_OVER)
        if ladder is not None and self.cluster is not None:
            self._tell_others("ladder", l=ladder.name)  # the leader counts it
            self.reload_soon()
        if game is game.match.current:  # the match is over
            self._match_over(game.match)

    # -- ladders ------------------------------------------------------------------------
    async def create_ladder(
        self, digest: str | None, name: str, options: LadderOptions
    ) -> tuple[Ladder, bool]:
        """The ladder ``name``, created with ``options`` if it does not exist yet (operator)."""
        self.require_operator(digest)
        if not NAME.match(name):
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a ladder name is 1-40 letters, digits, '.', '_' or '-'"
            )
        if name in self.ladders:
            return self.ladders[name], False
        try:
            variant(options.variant)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None
        if not 0 < options.turn_time_ms <= MAX_TURN_TIME_MS or options.max_games_per_bot < 2:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a ladder needs a turn time and room for a pair (2 games)"
            )
        await self.writer.commit(store.add_ladder(name, options))
        if name in self.ladders:  # created meanwhile by the same request from elsewhere
            return self.ladders[name], False
        ladder = self._open_ladder(name, options)
        self._tell_others("ladder", l=name)
        log.info("ladder created name=%s %s", name, options)
        return ladder, True

    def _open_ladder(self, name: str, options: LadderOptions) -> Ladder:
        ladder = self.ladders[name] = Ladder(self, name, options)
        ladder.active = self.leading
        assert self.nursery is not None
        self.nursery.start_soon(ladder.run)
        return ladder

    async def reload_ladders(self, only: str = "") -> None:
        """Ladders, members, results and games in progress as the store has them (cluster:
        every instance writes there), so standings read the same from every instance."""
        read = self.reader
        for name, options in await read.ladders():
            if name not in self.ladders:
                self._open_ladder(name, LadderOptions(**options))
        for name, ladder in self.ladders.items():
            if only and name != only:
                continue
            async with ladder.lock:  # not in the middle of a pairing
                records = [LadderGame(**record) for record in await read.ladder_games(name)]
                members = []
                for player_id, ready in await read.ladder_members(name):
                    player = self.players.get(player_id)
                    if player is None:
                        found = await self._learn_players("id = ?", player_id)
                        player = found[0] if found else None
                    if player is not None:
                        members.append(Member(player_id, player.name, bool(ready)))
                live = {
                    game_id: [seat["player_id"] for seat in row["seats"]]
                    for game_id, row in await read.unfinished_games()
                    if row["options"].get("ladder") == name
                }
                ladder.reload(records, members, live)

    def reload_soon(self) -> None:
        """Reload the ladders in a moment (news of a result or a member; leader only)."""
        if self.leading and not self._reload_due and self.nursery is not None:
            self._reload_due = True
            self.nursery.start_soon(self._reload)

    async def _reload(self) -> None:
        self._reload_due = False
        try:
            await self.reload_ladders()
        except StoreError as e:
            log.warning("ladders not reloaded: %s", e.message)
        except Exception:  # a refresh in the background: the next one may do
            log.exception("ladders not reloaded")

    async def fresh_books(self, name: str) -> None:
        """Several instances: the ladder's books as the store has them, the same on every
        instance; read back at most every RELOAD_S per ladder (anyone may ask, and it
        reads every result of the ladder)."""
        if self.cluster is None:
            return
        now = trio.current_time()
        if now < self._reloaded.get(name, -math.inf) + RELOAD_S:
            return
        if name in self.ladders:  # (a name unknown here: asked each time)
            self._reloaded[name] = now
        await self.reload_ladders(name)

    def ladder(self, name: str) -> Ladder:
        if name not in self.ladders:
            raise ArbiterError(Code.NOT_FOUND, f"no ladder {name!r}")
        return self.ladders[name]

    async def join_ladder(self, digest: str | None, name: str, ready: bool) -> None:
        principal = self.authenticate(digest)
        if principal is None or principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "joining a ladder needs a player token")
        player = self.players[principal.player_id]
        if name not in self.ladders and self.cluster is not None:
            await self.reload_ladders(name)  # created on another instance
        ladder = self.ladder(name)
        await self.writer.commit(store.set_ladder_member(name, player.id, ready))
        ladder.join(player.id, player.name, ready)
        self._tell_others("ladder", l=name)

    async def reissue_token(self, name: str) -> str:
        """A new token for a registered player (operator use, e.g. a resumed local ladder);
        the old one stops working."""
        player = self.by_name.get(name)
        if player is None:
            raise ArbiterError(Code.NOT_FOUND, f"no player named {name!r}")
        token = new_token()
        await self.writer.commit(store.set_player_token(player.id, token_hash(token)))
        self._forget_tokens(player.id)
        self.tokens[token_hash(token)] = Principal(player_id=player.id)
        self._tell_others("token", p=player.id)  # the old one stops working everywhere
        return token

    # -- restart ------------------------------------------------------------------------
    async def restore(self) -> None:
        """Load what outlives a restart: players and their tokens, ladders and results,
        matches and games (in progress ones go on). A damaged store stops the server with
        a StoreError rather than half-loading it."""
        try:
            await self._restore()
        except (ValueError, KeyError, TypeError, IndexError, AssertionError) as e:
            raise StoreError(
                f"{self.store.name}: the journal is damaged ({e!r}); refusing to start from it"
            ) from None

    async def _restore(self) -> None:
        read = self.reader
        for player_id, name, bot, digest, owner in await read.players():
            self._add_player(Player(player_id, name, bool(bot), owner), digest)
        counted: set[str] = set()  # ladder games in the books (only while restoring)
        for name, options in await read.ladders():
            ladder = self._open_ladder(name, LadderOptions(**options))
            for record in await read.ladder_games(name):
                ladder.restore(LadderGame(**record))
                counted.add(record["game_id"])
            for player_id, ready in await read.ladder_members(name):
                if player_id in self.players:
                    ladder.members[player_id] = Member(
                        player_id, self.players[player_id].name, bool(ready)
                    )
        pairs: dict[str, Lockstep] = {}
        leased = set()  # cluster: unfinished matches, run by whoever holds their lease
        if self.cluster is not None:
            leased = {row[0] for row in await self.store.query("SELECT match_id FROM leases")}
        over: list[MatchSession] = []
        rows = await read.matches()
        replay = await self._replayed(rows, leased, counted)
        for match_id, seat, digest, creator in await read.seat_tokens():
            if match_id in replay:  # the others are looked up in the store when asked for
                self._add_seat_token(match_id, seat, digest, creator)
        sizes = Counter(row["options"].get("pair_id", "") for row in rows)
        for row in rows:
            if row["id"] not in replay:
                continue
            match = await self._read_match(row, pairs, sizes)
            if row["id"] in leased:
                for game in match.games:  # ListGames shows it; its owner runs it
                    self._publish(game, new=True, tell=False)
                continue
            if not await self._install(match, counted):
                over.append(match)
        for match in over:  # once every pair is whole: an ended game's partner may run on
            self._match_over(match)

    async def _replayed(self, rows: list[dict], leased: set[str], counted: set[str]) -> set[str]:
        """The matches (of ``rows``) a restart rebuilds from their journals: the newest ones,
        which ListGames lists (catalogue window), any with a game not over, any with a ladder
        game not yet in the books (``counted``), and the whole duplicate pair of each. The
        others stay in the store (read back when asked for), so that a restart costs the same
        after a year of games as after a day. Their games count for /metrics."""
        replay = {row["id"] for row in rows[-self.catalogue.window :]} | leased
        ladder = {row["id"] for row in rows if row["options"].get("ladder") in self.ladders}
        ended: list[tuple[str, int]] = []
        for match_id, game_id, status in await self.reader.game_statuses():
            if status in (Status.WAITING, Status.IN_PROGRESS) or (
                match_id in ladder and game_id not in counted
            ):
                replay.add(match_id)
            else:
                ended.append((match_id, status))
        pairs = {row["options"].get("pair_id") for row in rows if row["id"] in replay}
        replay |= {row["id"] for row in rows if row["options"].get("pair_id") in pairs - {None, ""}}
        self.ended_counts.update(
            Status(status) for match_id, status in ended if match_id not in replay
        )
        return replay

    async def _read_match(
        self, row: dict, pairs: dict[str, Lockstep], sizes: Counter | None = None
    ) -> MatchSession:
        """A match as its journal has it (not yet running). ``sizes``: how many journaled
        matches each pair has, so no game of a pair throws before its partner is back."""
        games = await self.reader.match_games(row["id"])
        pair_id = row["options"].get("pair_id", "")
        size = sizes[pair_id] if sizes else 1
        pair = pairs.setdefault(pair_id, Lockstep(pair_id, size)) if pair_id else None
        return restore_match(self, row, games, new_id, pair)

    async def _install(self, match: MatchSession, counted: set[str] | None = None) -> bool:
        """Run a match restored from the journal here (after a restart, or taken over);
        False if it is over. ``counted``: the ladder games in the books already."""
        self.matches[match.id] = match
        for game in match.games:
            self.games[game.id] = game
            self._publish(game, new=True, tell=False)
        if counted is None:
            counted = await self._counted(match.ladder) if match.ladder else set()
        await self._restore_ladder_games(match, counted)
        assert self.nursery is not None
        if not match.match.over and match.current.status in (Status.WAITING, Status.IN_PROGRESS):
            self.nursery.start_soon(self._run_match, match)
            log.info("match %s restored (game %s)", match.id, match.current.id)
            return True
        if match.id in self.leases:  # it ended just before its owner stopped
            self.nursery.start_soon(self._finish_ended, match)
        return False

    async def _counted(self, ladder: str) -> set[str]:
        """The games of ``ladder`` whose records are stored."""
        return {r["game_id"] for r in await self.reader.ladder_games(ladder)}

    async def _restore_ladder_games(self, match: MatchSession, counted: set[str]) -> None:
        """Put a restored ladder game back in its ladder's books (``counted``: the games
        in them already)."""
        ladder = self.ladders.get(match.ladder)
        if ladder is None:
            return
        for game in match.games:
            if game.id in counted:
                continue
            if game.status in (Status.FINISHED, Status.ABORTED):
                # ended just before the restart, not yet counted
                record = ladder.game_over(game)
                await self.writer.commit(
                    store.add_ladder_game(ladder.name, record), fence=self.fence(match)
                )
                continue
            if self.cluster is not None:
                continue  # the leader's books come from the store (reload_ladders)
            ladder.in_progress.add(game.id)
            for seat in match.seats:
                member = ladder.members.get(seat.player_id or "")
                if member is not None:
                    member.playing += 1

    def game_counts(self) -> dict[str, int]:
        """How many games are in each status (for /metrics)."""
        counts = {s.name.lower(): self.ended_counts[s] for s in Status}
        for game in self.games.values():
            counts[game.status.name.lower()] += 1
        return counts

    # -- several instances (server/cluster.py) ------------------------------------------
    def fence(self, match: MatchSession) -> Write | None:
        """The fence of ``match``'s journal writes: they commit only while this instance
        holds its lease at the epoch it took (None on one server)."""
        if self.cluster is None:
            return None
        return self.cluster.fence(match.id, self.leases.get(match.id, -1))

    def _tell_others(self, kind: str, **fields) -> None:
        """News for the other instances, sent when the next journal batch commits."""
        if self.cluster is not None:
            self.writer.submit(self.cluster.news(kind, **fields))

    def _tell_note(self, game: GameSession, kind: Note) -> None:
        seats = [
            {"name": s.name, "bot": s.bot, "player_id": s.player_id, "owner": s.owner}
            for s in game.match.seats
        ]
        self._tell_others(
            "note",
            n=int(kind),
            g=game.id,
            m=game.match.id,
            seats=seats,
            w=game.known_white,
            c=game.match.challenged,
        )

    async def run_cluster(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The heartbeat: renew this instance's lease, take over the matches of instances
        that stopped, stop the matches it lost, lead the ladders while it holds the lock."""
        cluster = self.cluster
        assert cluster is not None
        cluster.listen(self._news)
        first = True
        while not cluster.closed:
            before = dict(self.leases)
            try:
                beat = await cluster.beat(claim=not self.closing)
            except StoreError as e:
                log.warning("%s", e.message)
            else:
                await self._after_beat(beat, before)
            if first:  # started once the games orphaned by a stopped instance run here
                task_status.started()
                first = False
            with trio.move_on_after(cluster.interval_s):
                await self._beat_now.wait()
            self._beat_now = trio.Event()

    async def _after_beat(self, beat: Beat, before: dict[str, int]) -> None:
        for match_id, epoch in before.items():
            if beat.held.get(match_id) != epoch and self.leases.get(match_id) == epoch:
                self._lose(match_id)
        for match_id, epoch in beat.held.items():  # claimed now, or handed to us
            new = match_id not in before and match_id not in self.leases
            if new and match_id not in self._creating and match_id not in self.matches:
                self.leases[match_id] = epoch
                self._to_adopt.add(match_id)
                log.info("match %s: lease taken (epoch %d)", match_id, epoch)
        todo = [m for m in self._to_adopt if m in self.leases and m not in self.matches]
        self._to_adopt = set(todo)  # kept until adopted (a failed read is tried again)
        try:
            await self._adopt(todo)
        except (StoreError, ValueError, KeyError, TypeError, IndexError) as e:
            log.error("matches not taken over yet: %r", e)
        else:
            self._to_adopt.difference_update(todo)
        if beat.leader != self.leading:
            self.leading = beat.leader
            log.info(
                "instance %s %s the ladders",
                self.cluster.id,
                "leads" if beat.leader else "no longer leads",
            )
            if self.leading:
                await self.reload_ladders()
            for ladder in self.ladders.values():
                ladder.active = self.leading
                ladder.wake()

    async def _adopt(self, match_ids: list[str]) -> None:
        """Run matches whose leases this instance just took, from their journal. All are
        read before any runs: a duplicate pair's two games throw in lockstep, so neither
        may start throwing before the other is there."""
        pairs: dict[str, Lockstep] = {}
        read = []
        for match_id in match_ids:
            row = await self.reader.match(match_id)
            if row is not None:
                read.append(await self._read_match(row, pairs))
        for match in read:
            if match.ladder and match.ladder not in self.ladders:
                await self.reload_ladders(match.ladder)  # its result is counted here
            if match.id in self.leases and match.id not in self.matches:
                await self._install(match)
                if match.ladder:
                    self.reload_soon()

    def _lose(self, match_id: str, why: str = "another instance took it over") -> None:
        """Stop a match here at once, writing nothing more (``why``: another instance
        runs it now); its streams end (SERVER_SHUTDOWN), so clients come back and are
        sent there."""
        self.leases.pop(match_id, None)
        match = self.matches.pop(match_id, None)
        if match is None:
            return
        match.halt()
        for game in match.games:
            self.games.pop(game.id, None)
            game.close_streams(EventType.SERVER_SHUTDOWN)
        log.info("match %s: %s; stopped here", match_id, why)

    async def place_pair(self, pair_id: str, match_ids: list[str]) -> None:
        """Several instances: hand a new ladder pair (both its matches, one lease group)
        to the live instance running the fewest matches, if that is not this one."""
        if self.cluster is None:
            return
        try:
            rows = await self.store.query(self.cluster.LEAST_LOADED)
            if not rows or rows[0][0] == self.cluster.id:
                return
            await self.writer.commit(self.cluster.hand_over(pair_id, rows[0][0]))
        except StoreError as e:
            log.warning("pair %s stays here: %s", pair_id, e.message)
            return
        for match_id in match_ids:
            self._lose(match_id, f"handed to instance {rows[0][0]}")
        self._tell_others("adopt", to=rows[0][0])

    def _elsewhere(self, place: Place) -> None:
        assert self.cluster is not None
        if place.owner == self.cluster.id or not place.live or not place.address:
            raise ArbiterError(
                Code.UNAVAILABLE,
                "this game's instance stopped and another is taking it over; retry in a moment",
            )
        raise Elsewhere(
            place.address, f"this game is run by the instance at {place.address}; call it there"
        )

    def _news(self, news: dict) -> None:
        """News from another instance (see Cluster.listen)."""
        kind = news.get("k")
        if kind == "summary":
            summary = api.GameSummary.FromString(base64.b64decode(news["s"]))
            if news["g"] not in self.games:
                if news.get("new"):
                    self.catalogue.add(news["g"], summary)
                else:
                    self.catalogue.publish(news["g"], summary)
        elif kind == "note":
            seats = self._seats_of(news["seats"])
            card = RemoteCard(news["g"], news["m"], seats)
            note = Note(news["n"])
            if note is Note.CHALLENGE:
                index = next(s.index for s in seats if s.player_id == news["c"])
                self._notify_player(
                    news["c"], PlayerNote(note, card, index, colour(index, news["w"]))
                )
            else:
                self._deliver(news["m"], seats, news["c"], note, card=card, white=news["w"])
        elif kind == "ladder":
            if news["l"] not in self.ladders and self.nursery is not None:
                self.nursery.start_soon(self._reload)
            self.reload_soon()
        elif kind == "token":
            self._forget_tokens(news["p"])
        elif kind == "adopt" and self.cluster is not None and news["to"] == self.cluster.id:
            self._beat_now.set()  # a match was handed to us: take it now

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
