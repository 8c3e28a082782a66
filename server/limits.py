"""Rate limits per caller: token buckets keyed by token (or peer address when anonymous).

Runs in the transport's asyncio thread, before a request reaches the core; a caller over
its rate gets RESOURCE_EXHAUSTED and can retry after a short wait.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """``rate`` requests per second on average, bursts of up to ``burst``, per key."""

    def __init__(self, rate: float, burst: float, max_keys: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._buckets: dict[str, Bucket] = {}

    def allow(self, key: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_keys:
                self._forget(now)
            bucket = self._buckets[key] = Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
        bucket.stamp = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def _forget(self, now: float) -> None:
        """Drop the buckets that have refilled: they hold no information."""
        full = [
            k
            for k, b in self._buckets.items()
            if b.tokens + (now - b.stamp) * self.rate >= self.burst
        ]
        for k in full:
            del self._buckets[k]
