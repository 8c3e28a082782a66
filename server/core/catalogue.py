"""The games as ListGames shows them, read outside the trio thread.

The trio thread publishes a game's summary message whenever it changes (created, started,
ended, voided); a published message is never changed again, only replaced. ListGames and
the web view read these in another thread without crossing the bridge, so a caller asking
for many games costs the core nothing: a list append, a dict assignment, a dict lookup and the
assignment of a tuple are atomic in CPython, and a summary is published before its id is
listed.

Memory stays bounded over a long run: the catalogue keeps the newest ``window`` games in
publication order, plus every older game still waiting or in progress; older ended games
live in the store only (GetGame and SubscribeGame still answer for them by id).

Pages run newest first. A page token is the position (in publication order) where the
next page starts looking; each call looks at no more than ``SCAN`` games, so a filter that
matches few games yields short pages (possibly empty) with a token to go on.
"""

from __future__ import annotations

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

MAX_PAGE = 500
DEFAULT_PAGE = 50
SCAN = 5000
WINDOW = 2000  # newest games listed whatever their status (older: only live ones)
LIVE = (pb.GAME_STATUS_WAITING, pb.GAME_STATUS_IN_PROGRESS)


class Catalogue:
    def __init__(self, window: int | None = None) -> None:
        self.window = max(1, window or WINDOW)
        # (position of the first listed id, ids in publication order): replaced as a whole
        # when trimmed, so a reader in another thread always sees a consistent pair.
        self._listed: tuple[int, list[str]] = (0, [])
        self._summaries: dict[str, api.GameSummary] = {}
        self._old_live: dict[str, int] = {}  # live games older than the window: id -> position

    def add(self, game_id: str, summary: api.GameSummary) -> None:
        """A new game, listed as the newest (called in the trio thread, like publish); a
        game listed already (several instances: one taken over) is only updated."""
        if game_id in self._summaries:
            self._summaries[game_id] = summary
            return
        self._summaries[game_id] = summary
        base, order = self._listed
        order.append(game_id)
        if len(order) > self.window + self.window // 4:
            self._trim(base, order)

    def publish(self, game_id: str, summary: api.GameSummary) -> None:
        """A listed game's new summary: a new message each time (never mutated later).
        A game no longer listed (ended, older than the window) stays unlisted."""
        if game_id not in self._summaries:
            return
        if game_id in self._old_live and summary.status not in LIVE:
            del self._old_live[game_id]  # ended outside the window: the store has it
            del self._summaries[game_id]
            return
        self._summaries[game_id] = summary

    def _trim(self, base: int, order: list[str]) -> None:
        drop = len(order) - self.window
        for position, game_id in enumerate(order[:drop], base):
            if self._summaries[game_id].status in LIVE:
                self._old_live[game_id] = position
            else:
                del self._summaries[game_id]
        self._listed = (base + drop, order[drop:])

    def __len__(self) -> int:
        return len(self._summaries)

    def page(
        self, status: int, ladder: str, limit: int, token: str
    ) -> tuple[list[api.GameSummary], str]:
        """(games, next page token) newest first; ValueError for a bad token."""
        size = max(1, min(limit or DEFAULT_PAGE, MAX_PAGE))
        base, order = self._listed
        end = base + len(order)
        if token:
            if not (len(token) <= 20 and token.isascii() and token.isdigit()) or int(token) > end:
                raise ValueError("page_token: not a token this server gave")
            end = int(token)
        out: list[api.GameSummary] = []

        def wanted(s: api.GameSummary | None) -> bool:
            return (
                s is not None
                and (not status or s.status == status)
                and (not ladder or s.ladder == ladder)
            )

        i = end
        stop = max(0, end - SCAN)
        while i > max(stop, base) and len(out) < size:
            i -= 1
            s = self._summaries.get(order[i - base])
            if wanted(s):
                out.append(s)
        if i <= base and len(out) < size:  # below the window: the old games still live
            older = sorted(
                ((p, g) for g, p in self._old_live.copy().items() if p < i), reverse=True
            )
            for p, game_id in older:
                if len(out) >= size:
                    break
                s = self._summaries.get(game_id)
                if wanted(s):
                    out.append(s)
                    i = p
            else:
                i = 0
        return out, (str(i) if i > 0 else "")
