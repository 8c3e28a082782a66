"""The roster: registered players, and who every token speaks for (players' tokens, the
seat tokens of matches, the operator's). Tokens are known by their SHA-256 only; every
one issued is in :attr:`Roster.issued` (server.issued), which the edge mirrors to refuse
made-up tokens without asking."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable

from server.core import statements
from server.core.ownership import Sole
from server.core.policy import Policy
from server.core.principals import (
    OPERATOR,
    Caller,
    Player,
    Principal,
    new_id,
    new_token,
    token_hash,
)
from server.core.recent import Recent
from server.core.runtime import Runtime
from server.errors import MISSING_TOKEN, ArbiterError, Code
from server.issued import Issued

log = logging.getLogger("nardy.server")

NAME = re.compile(r"[A-Za-z0-9._-]{1,40}")  # (whole names: fullmatch)
RECENT_TOKENS = 256  # ended matches' seat tokens kept in memory; the others are looked up


class Roster:
    def __init__(
        self, runtime: Runtime, owner: Sole, admin_hash: str | None, policy: Policy
    ) -> None:
        self.runtime = runtime
        self.owner = owner
        self.admin_hash = admin_hash  # SHA-256 of the operator token (the token is not kept)
        self.policy = policy
        self.players: dict[str, Player] = {}
        self.by_name: dict[str, Player] = {}  # by name case-folded (Bob is bob)
        self.names: set[str] = set()  # registered names, case-folded (display names avoid them)
        self.tokens: dict[str, Principal] = {}  # players' and live matches' seat tokens
        self.recent_tokens: dict[str, Principal] = {}  # ended matches' (bounded, oldest out)
        self.seat_digests: dict[str, list[str]] = {}  # live match id -> its seat tokens
        self.registrations = Recent(3600)  # addresses' registrations in the last hour
        self.issued = Issued()  # every token issued (here, or restored from the store)
        if admin_hash is not None:
            self.issued.add(admin_hash)
        # told of tokens as they are issued, before anyone is handed them (the edge)
        self.on_issued: Callable[[list[str]], None] = lambda digests: None

    # -- players ------------------------------------------------------------------------
    async def register(
        self, caller: Caller, name: str, bot: bool, owner: str = ""
    ) -> tuple[str, str]:
        """A new player and its token (anyone may, while registration is open, a few an
        hour from one address; the operator always)."""
        counted = None
        if not caller.admin:
            if not self.policy.registration_open:
                raise ArbiterError(
                    Code.PERMISSION_DENIED,
                    "registration is closed on this server: ask its operator to register you",
                )
            if self.registrations.count(caller.address) >= self.policy.players_per_hour:
                raise ArbiterError(
                    Code.RESOURCE_EXHAUSTED,
                    f"at most {self.policy.players_per_hour} registrations per hour from one "
                    "address; try again later",
                )
            # counted from now, not once stored: calls at once all passed the check
            self.registrations.add(caller.address)
            counted = caller.address
        try:
            return await self._register(name, bot, owner)
        except BaseException:
            if counted is not None:
                self.registrations.take_back(counted)
            raise

    async def _register(self, name: str, bot: bool, owner: str) -> tuple[str, str]:
        if not NAME.fullmatch(name):
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "a player name is 1-40 letters, digits, '.', '_' or '-'"
            )
        await self.owner.learn_players("lower(name) = lower(?)", name)
        if name.casefold() in self.names:
            raise ArbiterError(Code.ALREADY_EXISTS, f"player name {name!r} is taken")
        if len(owner) > 80 or not owner.isprintable():
            raise ArbiterError(Code.INVALID_ARGUMENT, "an owner is at most 80 printable characters")
        player = Player(new_id(), name, bot, owner)
        token = new_token()
        self.names.add(name.casefold())  # taken while it is being stored
        try:
            await self.runtime.writer.commit(
                statements.add_player(player.id, name, bot, token_hash(token), owner)
            )
        except ArbiterError:
            self.names.discard(name.casefold())
            # refused by the store's unique name: another instance registered it meanwhile
            if await self.owner.learn_players("lower(name) = lower(?)", name):
                raise ArbiterError(Code.ALREADY_EXISTS, f"player name {name!r} is taken") from None
            raise
        self.add(player, token_hash(token))
        self.issue([token_hash(token)])
        log.info("player registered name=%s id=%s", name, player.id)
        return player.id, token

    def add(self, player: Player, digest: str) -> None:
        self.players[player.id] = self.by_name[player.name.casefold()] = player
        self.names.add(player.name.casefold())
        self.tokens[digest] = Principal(player_id=player.id)
        self.issued.add(digest)

    def issue(self, digests: list[str]) -> None:
        """Tokens just issued here, before they are handed out: told to the edge (and to
        the other instances, whose edges may have concluded something of them)."""
        for digest in digests:
            self.issued.add(digest)
        self.on_issued(digests)
        self.owner.tell("issued", d=digests)

    def heard_issued(self, digests: list[str]) -> None:
        """Tokens another instance issued."""
        for digest in digests:
            self.issued.add(digest)
        self.on_issued(digests)

    def forget_tokens(self, player_id: str) -> None:
        for key, principal in list(self.tokens.items()):
            if principal.player_id == player_id:
                del self.tokens[key]

    async def player(self, player_id: str) -> Player | None:
        """A player by id (registered on another instance: read from the store)."""
        player = self.players.get(player_id)
        if player is None:
            found = await self.owner.learn_players("id = ?", player_id)
            player = found[0] if found else None
        return player

    def list_players(self, digest: str | None) -> list[Player]:
        self.require_operator(digest)
        return list(self.players.values())

    async def reissue_token(self, name: str) -> str:
        """A new token for a registered player (operator use, e.g. a resumed local ladder);
        the old one stops working."""
        player = self.by_name.get(name.casefold())
        if player is None:
            raise ArbiterError(Code.NOT_FOUND, f"no player named {name!r}")
        token = new_token()
        await self.runtime.writer.commit(statements.set_player_token(player.id, token_hash(token)))
        self.forget_tokens(player.id)
        self.tokens[token_hash(token)] = Principal(player_id=player.id)
        self.issue([token_hash(token)])
        self.owner.tell("token", p=player.id)  # the old one stops working everywhere
        return token

    # -- tokens -------------------------------------------------------------------------
    def principal(self, digest: str | None) -> Principal | None:
        """Who the token of ``digest`` (its hex SHA-256) speaks for, or None (no token, or
        one not known in memory): a dict lookup."""
        if not digest:
            return None
        if self.admin_hash is not None and secrets.compare_digest(digest, self.admin_hash):
            return OPERATOR
        return self.tokens.get(digest) or self.recent_tokens.get(digest)

    def never_issued(self, digest: str) -> bool:
        """Whether the token of ``digest`` was surely never issued (alone on the store: it
        issued every token there; several instances: not known here)."""
        return self.owner.issues_every_token and digest not in self.issued

    async def stored_principal(self, digest: str) -> Principal | None:
        """Who the token of ``digest`` speaks for, looking in the store for the seat tokens
        of matches that ended a while ago, and the tokens other instances issued."""
        principal = self.principal(digest)
        if principal is not None:
            return principal
        if self.never_issued(digest):
            return None  # nothing to look up
        if await self.owner.learn_players("token_hash = ?", digest):
            return self.tokens.get(digest)  # a player registered on another instance
        row = await self.runtime.reader.seat_token(digest)
        if row is None:
            return None
        principal = Principal(match_id=row[0], seat=row[1], creator=row[2])
        self._remember(digest, principal)
        return principal

    def _remember(self, digest: str, principal: Principal) -> None:
        self.recent_tokens[digest] = principal
        while len(self.recent_tokens) > RECENT_TOKENS:
            del self.recent_tokens[next(iter(self.recent_tokens))]

    def authenticate(self, digest: str | None, *, required: bool = True) -> Principal | None:
        """Who the caller's token (``digest``) speaks for; UNAUTHENTICATED if it is unknown,
        or (``required``) missing."""
        if not digest:
            if required:
                raise ArbiterError(Code.UNAUTHENTICATED, MISSING_TOKEN)
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

    def require_player(self, digest: str | None, what: str) -> Player:
        """The registered player whose token it is (PERMISSION_DENIED for any other)."""
        principal = self.authenticate(digest)
        if principal is None or principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, f"{what} needs a player token")
        return self.players[principal.player_id]

    def add_seat_token(self, match_id: str, seat: int, digest: str, creator: str) -> None:
        self.tokens[digest] = Principal(match_id=match_id, seat=seat, creator=creator)
        self.seat_digests.setdefault(match_id, []).append(digest)
        self.issued.add(digest)

    def seat_keys(self, match_id: str) -> set[str]:
        """Whom a live match's seat tokens count as (their match's creator, see
        Principal.key)."""
        digests = self.seat_digests.get(match_id, ())
        return {self.tokens[d].key for d in digests if d in self.tokens}

    def match_ended(self, match_id: str) -> None:
        """An ended match's seat tokens move to the bounded ones (then to the store)."""
        for digest in self.seat_digests.pop(match_id, ()):
            principal = self.tokens.pop(digest, None)
            if principal is not None:
                self._remember(digest, principal)
