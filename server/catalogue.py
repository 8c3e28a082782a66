"""The games as ListGames shows them, answered in the transport's thread.

The trio thread publishes a game's summary message whenever it changes (created, started,
ended, voided); a published message is never changed again, only replaced. ListGames reads
these from the grpc.aio thread without crossing the bridge, so a caller asking for many
games costs the core nothing: a list append, a dict assignment and a dict lookup are
atomic in CPython, and a summary is published before its id is listed.

Pages run newest first. A page token is the position (in publication order) where the
next page starts looking; each call looks at no more than ``SCAN`` games, so a filter that
matches few games yields short pages (possibly empty) with a token to go on.
"""

from __future__ import annotations

from nardy.v1 import arbiter_pb2 as api

MAX_PAGE = 500
DEFAULT_PAGE = 50
SCAN = 5000


class Catalogue:
    def __init__(self) -> None:
        self._order: list[str] = []  # game ids, oldest first (append only)
        self._summaries: dict[str, api.GameSummary] = {}

    def publish(self, game_id: str, summary: api.GameSummary) -> None:
        """Called in the trio thread with a new message each time (never mutated later)."""
        new = game_id not in self._summaries
        self._summaries[game_id] = summary
        if new:
            self._order.append(game_id)

    def page(
        self, status: int, ladder: str, limit: int, token: str
    ) -> tuple[list[api.GameSummary], str]:
        """(games, next page token) newest first; ValueError for a bad token."""
        size = max(1, min(limit or DEFAULT_PAGE, MAX_PAGE))
        end = len(self._order)
        if token:
            if not token.isdigit() or int(token) > end:
                raise ValueError("page_token: not a token this server gave")
            end = int(token)
        out: list[api.GameSummary] = []
        i = end
        stop = max(0, end - SCAN)
        while i > stop and len(out) < size:
            i -= 1
            s = self._summaries[self._order[i]]
            if (not status or s.status == status) and (not ladder or s.ladder == ladder):
                out.append(s)
        return out, (str(i) if i > 0 else "")
