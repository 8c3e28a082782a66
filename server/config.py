"""What ``nardy serve`` is told: one configuration for the edge and the core."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from server.core.policy import Policy

HEARTBEAT_S = 15.0


def host_port(host: str, port: int) -> str:
    """``HOST:PORT`` for an address, an IPv6 host in brackets (``[::1]:50051``)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    db: str = "nardy.db"
    heartbeat_s: float = HEARTBEAT_S  # an idle stream is sent a heartbeat this often
    grace_s: float = 1.0  # calls in flight when the server stops get this long
    # A core that has not answered the edge for this long is not serving (health, the log);
    # for core_kill_s it is killed and started again from the journal.
    core_stall_s: float = 10.0
    core_kill_s: float = 60.0
    max_message_bytes: int = 64 * 1024  # requests are small; refuse anything bigger
    max_concurrent_rpcs: int = 20_000
    rate_per_s: float = 1000.0  # requests per second per token (or address), on average
    rate_burst: float = 2000.0
    streams_per_caller: int = 100  # streams and calls in progress one caller may hold
    http_port: int | None = None  # the read-only web view and /metrics (None: off; 0: any)
    http_host: str | None = None  # default: the gRPC host
    admin_token: str | None = None  # None: the one stored (hashed), else a new one printed once
    registration_open: bool = True
    players_per_hour: int = Policy.players_per_hour
    open_matches: int = Policy.open_matches
    match_counted_s: float = Policy.match_counted_s
    tls_cert: str | None = None  # PEM files: serve TLS only (no plaintext port)
    tls_key: str | None = None
    lease_s: float = 10.0  # several instances: a dead instance's games are taken over after this
    advertise: str | None = None  # host:port clients are sent to (default: host and port)
    # Several instances behind a load balancer: a call about a game another instance runs
    # is forwarded to it (server.edge.peers) instead of refused with its address.
    forward: bool = False
    # Addresses or networks of reverse proxies (and forwarding instances) whose x-real-ip
    # metadata names the caller, for the limits kept per address.
    trusted_proxies: list[str] = field(default_factory=list)
    log_level: int | str = "INFO"
    # Offer ArbiterService.Play (False: the server answers it UNIMPLEMENTED, as one that
    # predates it: the compliance checker's scenario for engines that must fall back).
    play_stream: bool = True

    @property
    def policy(self) -> Policy:
        return Policy(
            registration_open=self.registration_open,
            players_per_hour=self.players_per_hour,
            open_matches=self.open_matches,
            match_counted_s=self.match_counted_s,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServerConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in json.loads(text).items() if k in known})
