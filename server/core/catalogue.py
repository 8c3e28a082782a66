"""The games as ListGames shows them, read outside the trio thread.

The trio thread publishes a game's summary message whenever it changes (created, started,
ended, voided); a published message is never changed again, only replaced. ListGames and
the web view read these in another thread without crossing the bridge, so a caller asking
for many games costs the core nothing: a list append, a dict assignment, a dict lookup and the
assignment of a tuple are atomic in CPython, and a summary is published before its id is
listed.

Memory stays bounded over a long run: the catalogue keeps the newest ``window`` ended games
in publication order, and every game still waiting or in progress; older ended games live
in the store only (GetGame and SubscribeGame still answer for them by id), and so do games
called off before they began, which leave the list when they end.

Pages run newest first. A page token is the position (in publication order) where the
next page starts looking; each call looks at no more than ``SCAN`` games, so a filter that
matches few games yields short pages (possibly empty) with a token to go on.
"""

from __future__ import annotations

from bisect import bisect_left

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

MAX_PAGE = 500
DEFAULT_PAGE = 50
SCAN = 5000
WINDOW = 2000  # newest ended games listed (and every live one)
LIVE = (pb.GAME_STATUS_WAITING, pb.GAME_STATUS_IN_PROGRESS)


class Catalogue:
    def __init__(self, window: int | None = None) -> None:
        self.window = max(1, window or WINDOW)
        # (positions, ids) of the listed games in publication order: a position is given
        # once and kept, so a page token stays good while the lists are trimmed; an id is
        # appended before its position, so a reader bounded by the positions always finds
        # its id. Replaced as a whole when trimmed (a reader in another thread always sees
        # a consistent pair).
        self._listed: tuple[list[int], list[str]] = ([], [])
        self._next = 0  # the position of the next game listed
        self._slack = self.window // 4  # trimmed once this many more are listed
        self._trim_at = self.window + self._slack  # listed ids (live, ended, gone) that trim
        self._ended = 0  # ended games listed
        self._summaries: dict[str, api.GameSummary] = {}

    def add(self, game_id: str, summary: api.GameSummary) -> None:
        """A new game, listed as the newest (called in the trio thread, like publish); a
        game listed already (several instances: one taken over) is only updated."""
        if game_id in self._summaries:
            self._summaries[game_id] = summary
            return
        self._summaries[game_id] = summary
        positions, ids = self._listed
        ids.append(game_id)
        positions.append(self._next)
        self._next += 1
        self._ended += summary.status not in LIVE
        if len(ids) > self._trim_at or self._ended > self.window + self._slack:
            self._trim(positions, ids)

    def publish(self, game_id: str, summary: api.GameSummary) -> None:
        """A listed game's new summary: a new message each time (never mutated later).
        A game no longer listed stays unlisted, and so does a match's first game called
        off before it began (nobody came, a challenge declined: it went from waiting to
        aborted), which GetGame still answers: matches nobody plays are made by anyone as
        fast as the quota allows, and would push the games played out of the window."""
        old = self._summaries.get(game_id)
        if old is None:
            return
        if (  # (a match's first game: a later one comes only from games played)
            summary.game_number == 1
            and old.status == pb.GAME_STATUS_WAITING
            and summary.status == pb.GAME_STATUS_ABORTED
        ):
            del self._summaries[game_id]
            return
        self._summaries[game_id] = summary
        if old.status in LIVE and summary.status not in LIVE:
            self._ended += 1
            if self._ended > self.window + self._slack:
                self._trim(*self._listed)

    def _trim(self, positions: list[int], ids: list[str]) -> None:
        """Keep every live game and the newest ``window`` ended ones."""
        listed = [(p, g) for p, g in zip(positions, ids, strict=False) if g in self._summaries]
        ended = [g for _, g in listed if self._summaries[g].status not in LIVE]
        for game_id in ended[: max(0, len(ended) - self.window)]:
            del self._summaries[game_id]  # (the store has it)
        kept = [(p, g) for p, g in listed if g in self._summaries]
        self._listed = ([p for p, _ in kept], [g for _, g in kept])
        self._trim_at = len(kept) + self._slack
        self._ended = min(len(ended), self.window)

    def __len__(self) -> int:
        return len(self._summaries)

    def page(
        self, status: int, ladder: str, limit: int, token: str
    ) -> tuple[list[api.GameSummary], str]:
        """(games, next page token) newest first; ValueError for a bad token."""
        size = max(1, min(limit or DEFAULT_PAGE, MAX_PAGE))
        positions, ids = self._listed
        count = len(positions)  # (ids may hold one more: being added)
        end = positions[count - 1] + 1 if count else 0
        if token:
            digits = len(token) <= 20 and token.isascii() and token.isdigit()
            if not digits or int(token) > self._next:
                raise ValueError("page_token: not a token this server gave")
            end = int(token)
        out: list[api.GameSummary] = []
        k = bisect_left(positions, end, 0, count)  # the listed games below ``end``
        stop = max(0, k - SCAN)
        while k > stop and len(out) < size:
            k -= 1
            s = self._summaries.get(ids[k])
            if s is not None and status in (0, s.status) and ladder in ("", s.ladder):
                out.append(s)
        return out, (str(positions[k]) if k > 0 else "")
