"""The core's Prometheus metrics (the edge serves them on ``/metrics`` with its own,
server.edge.metrics).

One :class:`Metrics` per core, with a registry of its own (tests run several arbiters in
one process). Counters and histograms are updated where things happen; the gauge of games
by status is filled in at scrape time (:meth:`Metrics.set_games`).
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE  # noqa: N811
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Seconds. A turn takes from a millisecond (a bot) to minutes (a person).
TURN_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
)
# How late a clock that ran out was acted on: exact to the millisecond when the server is idle.
LATE_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
COMMIT_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.games = Gauge(
            "nardy_games", "Games on this arbiter by status.", ["status"], registry=r
        )
        self.turns = Counter(
            "nardy_turns",
            "Turns ended: played by the player, played automatically (forced), "
            "or passed (no legal play).",
            ["how"],
            registry=r,
        )
        self.turn_latency = Histogram(
            "nardy_turn_latency_seconds",
            "From a turn's start to its play arriving (the "
            "mover's thinking time as charged to its clock).",
            buckets=TURN_BUCKETS,
            registry=r,
        )
        self.clock_lateness = Histogram(
            "nardy_clock_lateness_seconds",
            "How long after its deadline a clock that ran out was acted on.",
            buckets=LATE_BUCKETS,
            registry=r,
        )
        self.journal_commit = Histogram(
            "nardy_journal_commit_seconds",
            "Time to commit one journal entry (a game event) to the store.",
            buckets=COMMIT_BUCKETS,
            registry=r,
        )
        for how in ("played", "automatic", "passed"):
            self.turns.labels(how)

    def set_games(self, by_status: Mapping[str, int]) -> None:
        for status, n in by_status.items():
            self.games.labels(status).set(n)

    def exposition(self) -> bytes:
        """The text exposition format, as Prometheus scrapes it."""
        return generate_latest(self.registry)


__all__ = ["CONTENT_TYPE", "Metrics"]
