"""What strangers may do on this server (``nardy serve`` options)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_TURN_TIME_MS = 24 * 3600 * 1000  # a turn's time, and a bank's, at most


@dataclass(frozen=True)
class Policy:
    registration_open: bool = True  # False: only the operator registers players
    players_per_hour: int = 30  # anonymous registrations per peer address per hour
    open_matches: int = 20  # matches not yet over, per caller (operator: no limit)
    match_counted_s: float = 10.0  # of those, each counted at least this long from creation
    waiting_challenges: int = 20  # challenges waiting for one player's answer, at most
    challenges_from_one: int = 5  # of those, from one challenger
    max_start_timeout_ms: int = 600_000  # how long a created match may wait for its seats
    ladder_joins_per_minute: int = 30  # JoinLadder calls per player, ready (each is written)
