"""Calls about a game another instance runs, forwarded to it (``nardy serve --forward``).

Several instances on one PostgreSQL database each run some of the games
(server.core.cluster). Without forwarding, a call about a game another instance runs is
refused UNAVAILABLE with that instance's address in ``nardy-instance``, and the client
goes there itself. With it, the instance the client reached makes the same call on the
one that runs the game, with the caller's own credentials, and passes the answer back,
message for message: behind a load balancer (nginx's ``grpc_pass``) a client needs one
address and nothing of instances. The gRPC services (server.edge.services) and the web
view's calls (server.edge.web.api) forward alike: bytes in, bytes out, a refusal as
:class:`Refused`.

A forwarded call carries ``nardy-forwarded`` (the instance that gets it never forwards it
again: one that no longer runs the game refuses it as it would without forwarding, and
the client retries) and ``x-real-ip``, the caller's address, which that instance takes for
its limits when this one is among its ``--trusted-proxy`` addresses. A refusal comes back
as the owner made it (its code, message and trailing metadata) without ``nardy-instance``: the
address behind the balancer is the only one the client uses. An owner that does not
answer (dead, its games not yet taken over) is UNAVAILABLE: retry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import grpc

from server.edge.callers import Refused

Metadata = Sequence[tuple[str, str]]  # a call's metadata, as grpc gives it

FORWARDED = "nardy-forwarded"  # metadata: the call comes from another instance
PASSED = ("authorization",)  # the caller's metadata the owner needs
OWNER_AWAY = "the instance running this game does not answer (it is being taken over); retry"


def forwarded(context: grpc.aio.ServicerContext) -> bool:
    """The call was forwarded here by another instance."""
    return any(key == FORWARDED for key, _ in context.invocation_metadata() or ())


class Peers:
    """Channels to the other instances, by address (their ``--advertise``), and the three
    shapes of forwarded call: unary, a server stream, the Play stream."""

    def __init__(self, tls: bool) -> None:
        self.tls = tls  # instances serving TLS reach each other over TLS (system roots)
        self._channels: dict[str, grpc.aio.Channel] = {}

    def _channel(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            if self.tls:
                channel = grpc.aio.secure_channel(address, grpc.ssl_channel_credentials())
            else:
                channel = grpc.aio.insecure_channel(address)
            self._channels[address] = channel
        return channel

    async def unary(
        self,
        address: str,
        method: str,
        request: bytes,
        caller: Metadata,
        client: str,
        timeout: float | None = None,
    ) -> bytes:
        """The owner's answer (``caller``: the caller's metadata; ``client``: its address);
        Refused as the owner refused it."""
        call = self._channel(address).unary_unary(method)  # (bytes in, bytes out)
        try:
            return await call(request, metadata=_passed(caller, client), timeout=timeout)
        except grpc.aio.AioRpcError as e:
            raise _refusal(e) from None

    def stream(
        self, address: str, method: str, request: bytes, caller: Metadata, client: str
    ) -> AsyncIterator[bytes]:
        """A server stream's messages (SubscribeGame) as the owner sends them."""
        call = self._channel(address).unary_stream(method)
        return _relayed(call(request, metadata=_passed(caller, client)))

    def play(
        self,
        address: str,
        method: str,
        requests: AsyncIterator[bytes],
        caller: Metadata,
        client: str,
    ) -> AsyncIterator[bytes]:
        """The Play stream: every request goes to the owner, every answer comes back."""
        call = self._channel(address).stream_stream(method)
        return _relayed(call(requests, metadata=_passed(caller, client)))

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


def _passed(caller: Metadata, client: str) -> tuple:
    """The metadata of a forwarded call: the caller's credentials, the mark of a forwarded
    call, the caller's address."""
    passed = [(k, v) for k, v in caller or () if k in PASSED]
    return (*passed, (FORWARDED, "1"), ("x-real-ip", client))


async def _relayed(call) -> AsyncIterator[bytes]:
    """A forwarded stream's messages; the call is cancelled once this is closed."""
    try:
        async for message in call:
            yield message
    except grpc.aio.AioRpcError as e:
        raise _refusal(e) from None
    finally:
        call.cancel()


def _refusal(error: grpc.aio.AioRpcError) -> Refused:
    """The owner's refusal as the caller gets it, without ``nardy-instance`` (the address
    behind the balancer is the only one the client uses); UNAVAILABLE (the owner away, or
    not the owner any more) with a message of our own (a connection failure's details name
    addresses behind the balancer)."""
    code = error.code()
    away = code == grpc.StatusCode.UNAVAILABLE
    return Refused(code, OWNER_AWAY if away else error.details() or "")
