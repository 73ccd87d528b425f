"""The one auth check (PROTOCOL.md §2): `authorization: Bearer <token>` on every
RPC except grpc.health.v1.Health/Check, compared in constant time."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from sidecar.errors import Unauthenticated
from sidecar.servicers.status import to_status

__all__ = ["AuthInterceptor", "OPEN_METHODS"]

OPEN_METHODS = frozenset({"/grpc.health.v1.Health/Check"})


class AuthInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def _authorized(self, metadata: Any) -> bool:
        for key, value in metadata or ():
            if key == "authorization":
                given = value.encode() if isinstance(value, str) else bytes(value)
                return hmac.compare_digest(given, self._expected)
        return False

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method in OPEN_METHODS:
            return handler
        if self._authorized(handler_call_details.invocation_metadata):
            return handler
        return _deny(handler)


def _deny(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same shape that answers UNAUTHENTICATED and runs nothing."""
    status = to_status(Unauthenticated("missing or wrong 'authorization: Bearer <token>' metadata"))

    async def deny_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort_with_status(status)

    async def deny_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort_with_status(status)
        yield  # pragma: no cover  (makes this an async generator)

    des, ser = handler.request_deserializer, handler.response_serializer
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(deny_stream, des, ser)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(deny_unary, des, ser)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(deny_stream, des, ser)
    return grpc.unary_unary_rpc_method_handler(deny_unary, des, ser)
