"""The one path every RPC takes before and after its servicer: authenticate,
parse, map errors. Installed as the server's only interceptor, so it covers
the three sidecar services, health and reflection, unary and streaming alike.

Order matters, and is why this is an interceptor rather than a decorator:

1. **Authenticate before the body is parsed.** A call without the token gets
   UNAUTHENTICATED even when its bytes are garbage (the deny handler never
   deserializes), so nothing about the request is looked at (docs/protocol.md §2).
2. **Parse tolerantly.** (Size comes first and is not checked here: a body over
   `max_request_bytes`, the server's gRPC receive limit, is refused by gRPC as its
   length prefix arrives, before it is buffered: sidecar/server.py. A whole world
   bigger than that comes in pieces: sidecar/servicers/chunks.py.) grpc answers
   UNKNOWN with a Python exception text when a
   deserializer raises; here bytes that do not parse (corrupt wire format,
   invalid UTF-8 in a string) become a `Malformed` value, and the call gets
   INVALID_ARGUMENT / INVALID_REQUEST. A streaming request whose handler reports
   errors in-stream (StreamDeltas) receives the `Malformed` items itself.
3. **Map every error once.** A `SidecarError` becomes its status and reason; any
   other exception is logged with its traceback and becomes INTERNAL / INTERNAL
   with no exception text (docs/protocol.md §4). Statuses a handler set itself
   (grpc's own `abort`, e.g. health's NOT_FOUND) and cancellation pass through.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from sidecar import runtrace
from sidecar.auth import OPEN_METHODS, TokenCheck
from sidecar.errors import InvalidRequest, SidecarError, Unauthenticated
from sidecar.servicers.status import abort, to_status

__all__ = ["CallInterceptor", "Malformed", "parsed", "IN_STREAM_ERRORS"]

#: Streaming-request methods that answer a bad message in their response stream
#: and go on, so they are handed `Malformed` items instead of the call failing.
IN_STREAM_ERRORS = frozenset({"/sidecar.v1.SessionService/StreamDeltas"})

T = TypeVar("T")


class Malformed:
    """What the tolerant deserializer hands on for bytes it refused to parse or
    could not parse; `error` is what the call (or the stream item) reports."""

    def __init__(self, error: SidecarError) -> None:
        self.error = error


def parsed(request: T | Malformed) -> T:
    """The request, or its error when its bytes were refused or did not parse."""
    if isinstance(request, Malformed):
        raise request.error
    return request


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None
    owner = getattr(deserialize, "__self__", None)
    type_name = getattr(owner, "__name__", "request message")

    def tolerant(data: bytes) -> Any:
        try:
            request = deserialize(data)
        except Exception as exc:  # noqa: BLE001 - any parse failure is the client's bad bytes
            return Malformed(InvalidRequest(
                f"the request is not a valid {type_name} (corrupt wire format or invalid UTF-8): "
                f"{str(exc) or type(exc).__name__}"
            ))
        runtrace.mark("parsed")
        return request

    return tolerant


def _ignore_body(data: bytes) -> None:
    """The deny handler's deserializer: an unauthenticated body is never parsed."""
    return None


# The base is Any to mypy: grpc ships no type stubs.
class CallInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, token: str) -> None:
        self._tokens = TokenCheck(token)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        runtrace.begin()
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler  # grpc answers UNIMPLEMENTED
        method = handler_call_details.method
        if method not in OPEN_METHODS and not self._tokens.authorized(handler_call_details.invocation_metadata):
            return _deny(handler)
        return _guarded(handler, method)


def _shape(handler: grpc.RpcMethodHandler) -> tuple[Callable[..., Any], Callable[..., grpc.RpcMethodHandler]]:
    """The handler's behavior and the grpc constructor for its shape."""
    if handler.request_streaming and handler.response_streaming:
        return handler.stream_stream, grpc.stream_stream_rpc_method_handler
    if handler.request_streaming:
        return handler.stream_unary, grpc.stream_unary_rpc_method_handler
    if handler.response_streaming:
        return handler.unary_stream, grpc.unary_stream_rpc_method_handler
    return handler.unary_unary, grpc.unary_unary_rpc_method_handler


def _deny(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler that answers UNAUTHENTICATED and runs nothing.

    Request-streaming whatever the method's shape: grpc.aio reads a unary request
    whole (up to the receive limit) before its handler runs, a streaming one only
    when the handler asks, and this one never asks. So an unauthenticated body is
    neither parsed nor received: HTTP/2 flow control stops the sender after one
    window. On the wire the answer is the same status for every shape."""
    status = to_status(Unauthenticated("missing or wrong 'authorization: Bearer <token>' metadata"))

    async def deny(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort_with_status(status)
        yield  # pragma: no cover  (makes this an async generator)

    return grpc.stream_stream_rpc_method_handler(deny, _ignore_body, handler.response_serializer)


def _guarded(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    behavior, make = _shape(handler)
    in_stream = method in IN_STREAM_ERRORS

    def request_of(request: Any) -> Any:
        if not handler.request_streaming:
            return parsed(request)
        return request if in_stream else _parsed_stream(request)

    if inspect.isasyncgenfunction(behavior):

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            responses = None
            try:
                responses = behavior(request_of(request), context)
                async for response in responses:
                    yield response
            except (grpc.aio.AbortError, grpc.aio.UsageError):
                raise
            except Exception as exc:  # noqa: BLE001 - the one mapping of errors to statuses
                await abort(context, exc)
            finally:
                # Closed at our yield (the client went away): close the servicer's
                # generator now, so its cleanup (Run cancels its run) runs at once.
                if responses is not None:
                    await responses.aclose()

        wrapped: Callable[..., Any] = stream
    else:

        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                result = behavior(request_of(request), context)
                return await result if inspect.isawaitable(result) else result
            except (grpc.aio.AbortError, grpc.aio.UsageError):
                raise
            except Exception as exc:  # noqa: BLE001 - the one mapping of errors to statuses
                await abort(context, exc)

        wrapped = call
    return make(wrapped, _tolerant(handler.request_deserializer), handler.response_serializer)


async def _parsed_stream(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for request in requests:
        yield parsed(request)
