"""Who a call speaks for: players, principals (what a token names) and callers."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass


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

    @property
    def listener(self) -> str:
        """Whose player stream it follows: the player's, or a seat's of its match."""
        if self.player_id is not None:
            return self.player_id
        return f"{self.match_id}/{self.seat}"


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


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh bearer token: 256 random bits, URL-safe, with a ``nardy_`` prefix so it never
    begins with ``-`` (a command line would read it as an option) and secret scanners can
    recognise it."""
    return "nardy_" + secrets.token_urlsafe(32)


def new_id() -> str:
    return secrets.token_hex(6)
