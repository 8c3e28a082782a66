"""Taps: what the core sends the edge for its streams, once per message whatever their number.

A tap is one audience of a game (a seat, its own turns only or every event, or the
spectators) or one player's notices. The core encodes each message once for a tap and
tells it on the link; the edge fans it out to every stream that follows the tap
(server.edge.streams). A tap counts its streams: the last to leave drops it, and a tap
that closes (the game ended, the server stops) ends them all at the edge.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Protocol


class Teller(Protocol):
    """The link as a tap sees it."""

    def tell(self, tap: int, message: bytes, turn_id: int, seq: int) -> None: ...
    def close_tap(self, tap: int) -> None: ...


Encode = Callable[[Any], tuple[bytes, int, int]]  # item -> (message, turn offered, seq)


class Tap:
    """A Sink (server.core.audience) for every edge stream of one audience."""

    __slots__ = ("id", "key", "encode", "streams", "closed", "_taps")

    def __init__(self, taps: Taps, tap_id: int, key: tuple, encode: Encode) -> None:
        self._taps = taps
        self.id = tap_id
        self.key = key
        self.encode = encode
        self.streams = 0
        self.closed = False

    def send(self, item: Any) -> None:
        if not self.closed:
            self._taps.link.tell(self.id, *self.encode(item))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._taps.drop(self)
            self._taps.link.close_tap(self.id)


class Taps:
    """The core's taps by key and by id."""

    def __init__(self, link: Teller) -> None:
        self.link = link
        self._ids = itertools.count(1)
        self._by_key: dict[tuple, Tap] = {}
        self.by_id: dict[int, Tap] = {}

    def tap(self, key: tuple, encode: Encode) -> Tap:
        """The open tap of ``key``, or a new one."""
        tap = self._by_key.get(key)
        if tap is None:
            tap = Tap(self, next(self._ids), key, encode)
            self._by_key[key] = self.by_id[tap.id] = tap
        return tap

    def drop(self, tap: Tap) -> None:
        if self._by_key.get(tap.key) is tap:
            del self._by_key[tap.key]
        self.by_id.pop(tap.id, None)

    def __len__(self) -> int:
        return len(self.by_id)
