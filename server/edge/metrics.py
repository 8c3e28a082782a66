"""The edge's Prometheus metrics: its streams and refusals (the core's are server.core.metrics;
``/metrics`` serves both)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class EdgeMetrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.streams = Gauge(
            "nardy_open_streams", "Server streams open now, by kind.", ["kind"], registry=r
        )
        self.refusals = Counter(
            "nardy_refusals", "Requests refused, by gRPC status code.", ["code"], registry=r
        )
        self.core_restarts = Counter(
            "nardy_core_restarts", "Times the core stopped and was started again.", registry=r
        )
        self.game_builds = Counter(
            "nardy_web_game_builds",
            "Games built for the web view's pages: once per change, shared by their viewers.",
            registry=r,
        )
        for kind in ("game", "player"):
            self.streams.labels(kind)

    def exposition(self) -> bytes:
        """The text exposition format, as Prometheus scrapes it."""
        return generate_latest(self.registry)
