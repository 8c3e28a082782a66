"""Calls about a game another instance runs, forwarded to it (``nardy serve --forward``).

Several instances on one PostgreSQL database each run some of the games
(server.core.cluster). Without forwarding, a call about a game another instance runs is
refused UNAVAILABLE with that instance's address in ``nardy-instance``, and the client
goes there itself. With it, the instance the client reached makes the same call on the
one that runs the game, with the caller's own credentials, and passes the answer back,
message for message: behind a load balancer (nginx's ``grpc_pass``) a client needs one
address and nothing of instances.

A forwarded call carries ``nardy-forwarded`` (the instance that gets it never forwards it
again: one that no longer runs the game refuses it as it would without forwarding, and
the client retries) and ``x-real-ip``, the caller's address, which that instance takes for
its limits when this one is among its ``--trusted-proxy`` addresses. A refusal comes back
as the owner made it (its code, message and trailing metadata) without ``nardy-instance``: the
address behind the balancer is the only one the client uses. An owner that does not
answer (dead, its games not yet taken over) is UNAVAILABLE: retry.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import NoReturn

import grpc

from server.edge.streams import Gone, writer
from server.errors import INSTANCE_KEY

log = logging.getLogger("nardy.edge")

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

    @staticmethod
    def _metadata(context: grpc.aio.ServicerContext, client: str) -> tuple:
        passed = [(k, v) for k, v in context.invocation_metadata() or () if k in PASSED]
        return (*passed, (FORWARDED, "1"), ("x-real-ip", client))

    async def unary(self, address: str, method: str, request: bytes, context, client: str) -> bytes:
        call = self._channel(address).unary_unary(method)  # (bytes in, bytes out)
        try:
            return await call(
                request,
                metadata=self._metadata(context, client),
                timeout=context.time_remaining(),
            )
        except grpc.aio.AioRpcError as e:
            await _refuse(context, e)

    async def stream(self, address: str, method: str, request: bytes, context, client: str):
        """A server stream (SubscribeGame), written to ``context`` as it comes."""
        call = self._channel(address).unary_stream(method)(
            request, metadata=self._metadata(context, client), timeout=context.time_remaining()
        )
        await self._relay(call, context)

    async def play(self, address: str, method: str, first: bytes, context, client: str):
        """The Play stream: ``first`` (its subscribe message, read already) and every
        message after it go to the owner, every answer comes back."""

        async def requests() -> AsyncIterator[bytes]:
            yield first
            while (data := await context.read()) is not grpc.aio.EOF:
                yield data

        call = self._channel(address).stream_stream(method)(
            requests(), metadata=self._metadata(context, client)
        )
        await self._relay(call, context)

    @staticmethod
    async def _relay(call, context) -> None:
        write = writer(context)
        try:
            async for message in call:
                await write(message)
        except grpc.aio.AioRpcError as e:
            await _refuse(context, e)
        except Gone as e:
            log.debug("a forwarded stream's caller went away under a write: %s", e)
        finally:
            call.cancel()

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


async def _refuse(context, error: grpc.aio.AioRpcError) -> NoReturn:
    """End the call as the owner ended it, without ``nardy-instance``; UNAVAILABLE (the
    owner away, or not the owner any more) with a message of our own (a connection
    failure's details name addresses behind the balancer)."""
    code = error.code()
    trailing = tuple((k, v) for k, v in error.trailing_metadata() or () if k != INSTANCE_KEY)
    details = OWNER_AWAY if code == grpc.StatusCode.UNAVAILABLE else error.details() or ""
    await context.abort(code, details, trailing_metadata=trailing)
    raise AssertionError("abort returns by raising")
