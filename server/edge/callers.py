"""Who calls: the bearer token, the peer, and the limits keyed on verified identities.

The edge sends the core a token's SHA-256, never the token. It keeps what the core said
of each token (:class:`Identities`): a known one's key names the principal for the rate
limit and the quota of streams; an unknown one is refused here at once, without the core
(a negative cache, so that a stranger repeating a bad token costs the core nothing). A
token the server never issued is refused without the core: the core sends the edge a
filter of every token it issued (server.issued), and each new one before it is handed
out. Another token the edge has not seen yet is charged to its peer address while the
core is asked (with several instances, which issue tokens too, and no filter: each
address with a budget of such asks of its own). Every transport (gRPC, the web view's HTTP
API) gives its calls' :class:`Credentials` to the same :class:`Gate`.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote

import grpc

from server.edge.limits import REMEMBERED, OneAtATime, RateLimiter, StreamQuota
from server.issued import Issued
from server.link import link_pb

log = logging.getLogger("nardy.edge")

TOO_FAST = "too many requests; slow down and retry"
UNKNOWN_TOKEN = "unknown token"
MALFORMED = "the authorization metadata must be one value 'Bearer <token>'"


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a call says of its caller: its bearer token (None: none sent), whether its
    authorization was malformed (sent, but not ``Bearer <token>``: refused, never served
    as an anonymous caller's call), and its peer address (see :func:`address_of`)."""

    token: str | None
    malformed: bool
    address: str


def address_of(host: str) -> str:
    """A peer's host as limits count it: an IPv6 host by its /64 (one subscriber's usual
    share: 2^64 addresses, else a budget each), an IPv4-mapped one as IPv4."""
    with contextlib.suppress(ValueError):
        ip = ipaddress.ip_address(host.partition("%")[0])
        if isinstance(ip, ipaddress.IPv6Address):
            mapped = ip.ipv4_mapped
            return str(mapped) if mapped else str(ipaddress.IPv6Network((ip, 64), strict=False))
    return host


REAL_IP = "x-real-ip"  # the client's address, as a trusted proxy (or instance) saw it
Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


def networks(specs: list[str] | tuple[str, ...]) -> Networks:
    """``--trusted-proxy`` values (addresses or CIDR networks) as networks (ValueError for
    one that is neither)."""
    out = []
    for spec in specs:
        try:
            out.append(ipaddress.ip_network(spec.strip(), strict=False))
        except ValueError:
            raise ValueError(f"--trusted-proxy takes addresses or networks, not {spec!r}") from None
    return tuple(out)


def client_host(context: grpc.aio.ServicerContext, trusted: Networks = ()) -> str:
    """The caller's host without its port ("ipv4:1.2.3.4:5678" -> "1.2.3.4"); for a peer
    in ``trusted`` (a reverse proxy, another instance forwarding a call) the ``x-real-ip``
    it sent instead (:func:`real_host`)."""
    peer = unquote(context.peer() or "")
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer
    host = rest.rpartition(":")[0].strip("[]")
    return real_host(host, _real_ips(context), trusted)


def _real_ips(context: grpc.aio.ServicerContext) -> Iterator[str]:
    """The call's ``x-real-ip`` values, read only when asked for."""
    for key, value in context.invocation_metadata() or ():
        if key == REAL_IP:
            yield value


def real_host(host: str, claimed: Iterable[str], trusted: Networks) -> str:
    """The client's host: ``host``, the peer's, unless it is in ``trusted``: then the first
    of the addresses that peer ``claimed`` for its client (``X-Real-IP``), if one is an
    address. From any other peer a claim is ignored."""
    if trusted and within(host, trusted):
        for value in claimed:
            if isinstance(value, str):
                with contextlib.suppress(ValueError):
                    return str(ipaddress.ip_address(value.strip()))
    return host


def within(host: str, trusted: Networks) -> bool:
    """Whether ``host`` (an address) is in one of the ``trusted`` networks."""
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in trusted)


def peer_address(context: grpc.aio.ServicerContext, trusted: Networks = ()) -> str:
    """The caller's address for limits: :func:`client_host` as :func:`address_of` counts it."""
    return address_of(client_host(context, trusted))


def bearer(values: Iterable[str]) -> tuple[str | None, bool]:
    """The token of the ``authorization`` value ``Bearer <token>`` (None: no token), and
    whether it is malformed (sent, but not one value ``Bearer <token>``)."""
    sent = list(values)
    if len(sent) == 1 and isinstance(sent[0], str):
        scheme, _, token = sent[0].partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip(), False
    return None, bool(sent)


def grpc_credentials(context: grpc.aio.ServicerContext, trusted: Networks = ()) -> Credentials:
    """A gRPC call's credentials: its ``authorization`` metadata and its peer (for a
    peer in ``trusted``, the caller it names: :func:`client_host`)."""
    values = [v for k, v in context.invocation_metadata() or () if k == "authorization"]
    token, malformed = bearer(values)
    return Credentials(token, malformed, peer_address(context, trusted))


@dataclass(frozen=True, slots=True)
class Identity:
    key: str  # for limits and quotas (never the token)
    operator: bool


UNKNOWN = Identity("", False)  # a token the core does not know


class Identities:
    """What the core said of tokens, by digest: at most ``most`` known ones (least recently
    used out) and ``most`` unknown ones, each for ``unknown_s`` seconds."""

    def __init__(self, most: int = REMEMBERED, unknown_s: float = 600.0) -> None:
        self.most = most
        self.unknown_s = unknown_s
        self._known: OrderedDict[str, Identity] = OrderedDict()
        self._unknown: OrderedDict[str, float] = OrderedDict()  # digest -> until

    def get(self, digest: str) -> Identity | None:
        """The token's identity, UNKNOWN, or None (not asked yet)."""
        identity = self._known.get(digest)
        if identity is not None:
            self._known.move_to_end(digest)
            return identity
        until = self._unknown.get(digest)
        if until is not None:
            if time.monotonic() < until:
                return UNKNOWN
            del self._unknown[digest]
        return None

    def learn(self, digest: str, told: link_pb.Identity) -> None:
        if told.known:
            self._unknown.pop(digest, None)
            self._known[digest] = Identity(told.key, told.operator)
            self._known.move_to_end(digest)
            if len(self._known) > self.most:
                self._known.popitem(last=False)
        else:
            self._known.pop(digest, None)
            self._unknown[digest] = time.monotonic() + self.unknown_s
            self._unknown.move_to_end(digest)
            if len(self._unknown) > self.most:
                self._unknown.popitem(last=False)

    def forget(self, digest: str) -> None:
        """The core refused a token it knew before (reissued): ask again next time."""
        self._known.pop(digest, None)

    def issued(self, digest: str) -> None:
        """The server has just issued the token of ``digest``: whatever was concluded of it
        before is forgotten (it is asked again)."""
        self._unknown.pop(digest, None)

    def __len__(self) -> int:
        return len(self._known) + len(self._unknown)


@dataclass(slots=True)
class Who:
    """A call's caller as checked at the edge."""

    caller: link_pb.Caller
    key: str
    operator: bool
    identify: bool  # the core is to say who the token speaks for


class Refused(Exception):
    """A call refused, at the edge or by the core; ``instance``: the address of the
    instance that runs the game (the ``nardy-instance`` trailing metadata)."""

    def __init__(self, code: grpc.StatusCode, message: str, instance: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.instance = instance


class Gate:
    """Every call's first checks, in order: the token's form, what is known of it, the
    rate limit of its identity (or of the peer address)."""

    def __init__(self, limiter: RateLimiter, streams: StreamQuota, trusted: Networks = ()) -> None:
        self.limiter = limiter
        self.streams = streams
        self.trusted = trusted  # proxies whose x-real-ip names the caller
        self.identities = Identities()
        # tokens not seen yet asked of the core without a filter, per peer address: a
        # budget of their own, so that a flood of requests does not lock a verified
        # newcomer of that address out, nor made-up tokens cost the core beyond a rate
        self.lookups = RateLimiter(limiter.rate, limiter.burst, limiter.max_keys)
        # every token the server issued (None: not known here, the core is asked)
        self.issued: Issued | None = None
        self.opening = OneAtATime()  # streams being opened, one at a time per caller

    # -- what the core tells of tokens (server.edge.link.Tokens) -----------------------------
    def tokens_ready(self, tokens: bytes) -> None:
        """A core is ready: the filter of every token it issued (empty: none, ask it)."""
        try:
            self.issued = Issued.load(tokens) if tokens else None
        except ValueError:
            log.error("the core's filter of tokens is unreadable; asking it of each token")
            self.issued = None

    def tokens_issued(self, digests: list[str]) -> None:
        """Tokens just issued (before they are handed out)."""
        for digest in digests:
            if self.issued is not None:
                self.issued.add(digest)
            self.identities.issued(digest)

    def check(self, credentials: Credentials) -> Who:
        """The caller, or Refused. A token never issued is refused (its address charged);
        another token not known here yet is not charged: the caller must be identified
        first (:attr:`Who.identify`, then :meth:`charge`)."""
        token, address = credentials.token, credentials.address
        if credentials.malformed:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, MALFORMED)
        caller = link_pb.Caller(address=address)
        key, operator, identify = f"addr:{address}", False, False
        if token is not None:
            caller.digest = digest = hashlib.sha256(token.encode()).hexdigest()
            identity = self.identities.get(digest)
            if identity is UNKNOWN:
                raise Refused(grpc.StatusCode.UNAUTHENTICATED, UNKNOWN_TOKEN)
            if identity is None:
                if self.issued is not None and digest not in self.issued:
                    self.charge(Who(caller, key, operator, False))  # (a made-up token)
                    raise Refused(grpc.StatusCode.UNAUTHENTICATED, UNKNOWN_TOKEN)
                if self.issued is None and not self.lookups.allow(key):
                    raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_FAST)
                return Who(caller, key, operator, True)
            key, operator = identity.key, identity.operator
        who = Who(caller, key, operator, identify)
        self.charge(who)
        return who

    def charge(self, who: Who) -> None:
        """One request of ``who``'s against its rate (Refused when over it)."""
        if not self.limiter.allow(who.key):
            raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_FAST)

    @contextlib.asynccontextmanager
    async def open_stream(self, who: Who) -> AsyncIterator[None]:
        """A stream is opened, and its replay charged (into debt: see RateLimiter.charge),
        one at a time per caller: a burst of replays is paid for replay by replay, not
        all built first. Refused while the caller still owes for its last."""
        async with self.opening.turn(who.key):
            if self.limiter.owes(who.key):
                raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_FAST)
            yield

    def answered(self, who: Who, reply: link_pb.Reply) -> None:
        """Learn from the core's reply what it said of the caller's token."""
        if who.identify and reply.HasField("identity"):
            told = reply.identity
            if told.known or told.final:
                self.identities.learn(who.caller.digest, told)
            if told.known:
                who.key, who.operator = told.key, told.operator
                who.identify = False
        elif who.caller.digest and reply.code == grpc.StatusCode.UNAUTHENTICATED.value[0]:
            self.identities.forget(who.caller.digest)

    def hold(self, who: Who) -> None:
        """Take a place in the caller's quota of streams and waiting calls (the operator:
        none); Refused when it holds too many."""
        if not who.operator and not self.streams.take(who.key):
            raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED, self.streams.refusal(who.key))

    def release(self, who: Who) -> None:
        if not who.operator:
            self.streams.give_back(who.key)
