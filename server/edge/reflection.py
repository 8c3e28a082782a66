"""gRPC server reflection, both versions: ``grpc.reflection.v1`` and ``v1alpha``.

grpcio-reflection ships only v1alpha; v1 (what current grpcurl, Postman and grpcui ask for
first) has the very same messages under another package name, so the same servicer answers
it through a generic handler: the bytes on the wire are identical.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
from grpc_reflection.v1alpha import _async as reflection_aio
from grpc_reflection.v1alpha import reflection
from grpc_reflection.v1alpha import reflection_pb2 as messages

V1 = "grpc.reflection.v1.ServerReflection"


def enable_reflection(
    service_names: list[str],
    server: grpc.aio.Server,
    wrap: Callable[[grpc.RpcMethodHandler], grpc.RpcMethodHandler] = lambda handler: handler,
) -> None:
    """Serve reflection (v1 and v1alpha) listing ``service_names`` and the two itself;
    ``wrap`` wraps its handler (e.g. server.service.held_streams)."""
    names = [*service_names, V1, reflection.SERVICE_NAME]
    servicer = reflection_aio.ReflectionServicer(names)
    handler = wrap(
        grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=messages.ServerReflectionRequest.FromString,
            response_serializer=messages.ServerReflectionResponse.SerializeToString,
        )
    )
    for service in (V1, reflection.SERVICE_NAME):
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, {"ServerReflectionInfo": handler}),)
        )
