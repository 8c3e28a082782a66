"""Requests that are not protobuf at all: refused as INVALID_ARGUMENT, not as UNKNOWN.

grpcio turns a request it cannot parse into a bare UNKNOWN status. Every method of the
nardy services is wrapped when it is registered: a failed parse becomes a marker the
handler answers with INVALID_ARGUMENT, so that a client learns what it did wrong.
(Wrapped once, not by a server interceptor: grpc.aio runs interceptors on every call.)
"""

from __future__ import annotations

import grpc
from google.protobuf.message import DecodeError


class Unparsable:
    """A request whose bytes did not parse."""


UNPARSABLE = Unparsable()
MESSAGE = "the request is not a valid protobuf message of its type"


def _deserializer(parse):
    def safe(data: bytes):
        try:
            return parse(data)
        except (DecodeError, ValueError):
            return UNPARSABLE

    return safe


def _unary(behaviour):
    async def handle(request, context):
        if request is UNPARSABLE:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, MESSAGE)
        return await behaviour(request, context)

    return handle


def _stream(behaviour):
    async def handle(request, context):
        if request is UNPARSABLE:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, MESSAGE)
        async for item in behaviour(request, context):
            yield item

    return handle


def refuse_unparsable(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """``handler`` answering an unparsable request with INVALID_ARGUMENT; wrapped once,
    when the method is registered (server.bridge.Registry). A request-streaming method's
    messages that do not parse come to it as :data:`UNPARSABLE`, for it to refuse."""
    if handler.request_deserializer is None:
        return handler
    if handler.request_streaming:
        return handler._replace(request_deserializer=_deserializer(handler.request_deserializer))
    if handler.response_streaming:
        return handler._replace(
            request_deserializer=_deserializer(handler.request_deserializer),
            unary_stream=_stream(handler.unary_stream),
        )
    return handler._replace(
        request_deserializer=_deserializer(handler.request_deserializer),
        unary_unary=_unary(handler.unary_unary),
    )
