"""Limits per caller: token buckets keyed by token (or peer address when anonymous), and
the streams a caller holds open; and the connections the edge takes in all.

Runs in the transport's asyncio thread, before a request reaches the core; a caller over
its rate gets RESOURCE_EXHAUSTED and can retry after a short wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

# Entries the edge remembers per token (its identity, its rate bucket) and per game (when
# its turn was handed out) before it forgets the stalest (least recently used; for rate
# buckets, those refilled). Each costs a few hundred bytes and every game brings two new
# seat tokens, so the edge's memory levels off once this many are held; a forgotten
# token's identity is asked of the core again.
REMEMBERED = 10_000
ANSWER_BYTES = 1024  # an answer's bytes that count as one request more
# Streams (and waiting calls) a caller may still hold once the callers' streams fill the
# server's budget for them (StreamQuota): a player's stream and a game or two.
CROWDED = 4


def descriptors() -> int:
    """The file descriptors this process may have open: its soft limit, raised first to
    its hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):  # (an unlimited hard limit some kernels refuse)
            pass
    return soft


def connection_quota() -> int:
    """The gRPC connections the edge accepts at once: three quarters of its descriptors,
    so that a flood of connections that never end (a client answering pings keeps one open
    without a call) leaves the rest for the web view (an eighth,
    server.edge.web.connections), the link to the core and starting a new core."""
    return max(16, descriptors() * 3 // 4)


@dataclass
class Bucket:
    tokens: float
    stamp: float


class RateLimiter:
    """``rate`` requests per second on average, bursts of up to ``burst``, per key."""

    def __init__(self, rate: float, burst: float, max_keys: int = REMEMBERED) -> None:
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

    def wait(self, key: str, now: float | None = None) -> float:
        """Seconds until ``key`` may make its next request (0: now)."""
        bucket = self._buckets.get(key)
        if bucket is None:
            return 0.0
        now = time.monotonic() if now is None else now
        return max(0.0, (1 - bucket.tokens) / self.rate - (now - bucket.stamp))

    def owes(self, key: str, now: float | None = None) -> bool:
        """Is ``key`` still in debt (see :meth:`charge`)? Nothing is taken."""
        bucket = self._buckets.get(key)
        if bucket is None:
            return False
        now = time.monotonic() if now is None else now
        return bucket.tokens + (now - bucket.stamp) * self.rate < 0

    def charge(self, key: str, cost: float) -> None:
        """Take ``cost`` more requests' worth from the bucket of ``key`` (just allowed a
        request), into debt if need be: its next requests wait until it has refilled."""
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.tokens -= cost

    def charge_answer(self, key: str, size: int) -> None:
        """An answer of ``size`` bytes sent to ``key``: made, sent and read by the byte, it
        counts a request more for each ANSWER_BYTES beyond its first (see :meth:`charge`)."""
        self.charge(key, size // ANSWER_BYTES)

    def _forget(self, now: float) -> None:
        """Drop the buckets that have refilled: they hold no information."""
        full = [
            k
            for k, b in self._buckets.items()
            if b.tokens + (now - b.stamp) * self.rate >= self.burst
        ]
        for k in full:
            del self._buckets[k]


class OneAtATime:
    """Per key, one holder at a time; the others wait their turn, in order."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # -> (lock, holder and waiters)

    @contextlib.asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        lock, n = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = lock, n + 1
        try:
            async with lock:
                yield
        finally:
            lock, n = self._locks[key]
            if n == 1:
                del self._locks[key]
            else:
                self._locks[key] = lock, n - 1

    def __len__(self) -> int:
        return len(self._locks)


class StreamQuota:
    """At most ``most`` streams open at once per key. grpc refuses every new call, anyone's,
    once the server holds ``maximum_concurrent_rpcs``: without a quota one caller's idle
    streams would shut everyone else out. Many callers at their quota could still fill it
    (two hundred at 100 each): once the streams of all keys reach ``budget``, a key holding
    :data:`CROWDED` or more opens no more, so the calls of everyone else still fit."""

    def __init__(self, most: int, budget: int) -> None:
        self.most = most
        self.budget = budget
        self.total = 0
        self._open: Counter[str] = Counter()

    def take(self, key: str) -> bool:
        """Count a new stream of ``key``; False (nothing counted) when it may open no more."""
        held = self._open[key]
        if held >= self.most or (self.total >= self.budget and held >= CROWDED):
            return False
        self._open[key] += 1
        self.total += 1
        return True

    def refusal(self, key: str) -> str:
        """Why :meth:`take` refused ``key``'s stream (or waiting call)."""
        if self._open[key] >= self.most:
            return f"at most {self.most} streams and waiting calls per caller; end some first"
        return (
            f"the server holds all the streams it takes; while it does, at most {CROWDED} per "
            "caller: end some first, or retry later"
        )

    def give_back(self, key: str) -> None:
        """A stream that :meth:`take` counted has ended."""
        self._open[key] -= 1
        self.total -= 1
        if self._open[key] <= 0:
            del self._open[key]
