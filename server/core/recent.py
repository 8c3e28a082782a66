"""Quotas over a sliding window: how often a key (an address, a player) did something lately."""

from __future__ import annotations

from collections import deque

import trio


class Recent:
    """When each key did something within the last ``span`` seconds (trio's clock). A key
    with nothing left in the window is forgotten: keys that stop leave nothing behind."""

    def __init__(self, span: float) -> None:
        self.span = span
        self._times: dict[str, deque[float]] = {}

    def count(self, key: str) -> int:
        """How many times ``key`` did it in the window."""
        times = self._times.get(key)
        if times is None:
            return 0
        now = trio.current_time()
        while times and times[0] < now - self.span:
            times.popleft()
        if not times:
            del self._times[key]
        return len(times)

    def add(self, key: str) -> None:
        self._times.setdefault(key, deque()).append(trio.current_time())

    def take_back(self, key: str) -> None:
        """``key``'s newest ``add`` did not happen after all (the stamps are in time order)."""
        times = self._times.get(key)
        if times:
            times.pop()
        if not times:
            self._times.pop(key, None)

    def __len__(self) -> int:
        return len(self._times)
