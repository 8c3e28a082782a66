"""Which instance runs which match, as the rest of the core asks it: :class:`Sole`, an
arbiter alone on its store, owns everything and every hook here does nothing; several
instances on one PostgreSQL are server.core.shared's ``Shared``. The rest of the core asks
its owner, never whether there are several instances.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from nardy.v1 import arbiter_pb2 as api
from server.core.principals import Player, Principal
from server.core.runtime import Runtime
from server.core.store import Write

if TYPE_CHECKING:
    from server.core.match import MatchSession
    from server.core.notes import Note, PlayerNote
    from server.core.session import GameSession


class Sole:
    """An arbiter alone on its store: it owns every match, and nobody else needs telling."""

    leading = True  # pairs ladder games
    books_shared = False  # the ladders' books are this instance's alone
    issues_every_token = True  # a token it did not issue (or restore) is unknown
    settings_shared = False  # nobody else changes the stored settings

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def id(self) -> str:
        return ""

    # -- leases -----------------------------------------------------------------------
    def fence(self, match: MatchSession) -> Write | None:
        """The fence of ``match``'s journal writes (None: none needed)."""
        return None

    def claim(self, match_id: str, group: str) -> list[Write]:
        """Writes that make a new match this instance's (with the match)."""
        return []

    def release(self, match_id: str) -> list[Write]:
        """Writes that give up an ended match (with its end)."""
        return []

    def opened(self, match_id: str) -> None:
        """A new match of this instance's runs."""

    def ended(self, match_id: str) -> None:
        """A match of this instance's is over here (ended, or taken over)."""

    def owns(self, match_id: str) -> bool:
        """Whether this instance still runs ``match_id`` (else another one writes the rest)."""
        return True

    def holds(self, match_id: str) -> bool:
        """Whether this instance holds a lease on ``match_id`` (alone: it needs none)."""
        return False

    @contextlib.contextmanager
    def creating(self, match_ids: set[str]) -> Iterator[None]:
        """New matches being stored (not to be taken over meanwhile)."""
        yield

    async def leased(self) -> set[str]:
        """Unfinished matches that some instance holds (a restart leaves them be)."""
        return set()

    # -- what other instances hold --------------------------------------------------------
    async def learn_players(self, condition: str, *params) -> list[Player]:
        """Players another instance registered (``condition`` on the players table)."""
        return []

    async def running_elsewhere(self, game_id: str, *, read: bool) -> GameSession | None:
        """A game another instance runs: Elsewhere, or (``read``) as the store has it now."""
        return None

    async def match_elsewhere(self, match_id: str) -> None:
        """Elsewhere if another instance runs ``match_id``."""

    async def pair_playing(self, pair_id: str) -> bool:
        """Whether a duplicate pair's other match still plays on another instance."""
        return False

    async def games_elsewhere(self, principal: Principal) -> list[PlayerNote]:
        """The unfinished games of ``principal`` that other instances run."""
        return []

    async def challenges_elsewhere(self, principal: Principal) -> list[MatchSession]:
        """The matches other instances run that wait for ``principal`` (a player) to
        accept."""
        return []

    # -- telling the others -----------------------------------------------------------------
    def tell(self, kind: str, **fields) -> None:
        """News for the other instances, sent when the next journal batch commits."""

    def tell_note(self, game: GameSession, kind: Note) -> None:
        """A player stream's notice about ``game``, for the players' other instances."""

    def tell_summary(self, game_id: str, summary: api.GameSummary, new: bool) -> None:
        """A game's new summary (ListGames), for the other instances' lists."""

    async def place_pair(self, pair_id: str, match_ids: list[str]) -> None:
        """Hand a new ladder pair to the instance running the fewest matches."""
