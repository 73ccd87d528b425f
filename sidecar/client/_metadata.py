"""What rides on every call's metadata between a Python client and the sidecar:
the bearer token on the way out (docs/protocol.md §2; one interceptor per call
shape) and the stable reason (`sidecar-reason`, docs/protocol.md §4) on the way
back, with whether a failed request may be sent again.

Kept apart from sidecar/client/_client.py, which holds the calls themselves; these
names are importable from there too, where games import them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from sidecar.client._exits import SidecarGone, WriteKept
from sidecar.process_contract import AUTH_HEADER, REASON_KEY
from sidecar.v1 import errors_pb2

__all__ = ["RETRYABLE_REASONS", "auth_interceptors", "error_reason", "is_retryable"]


def error_reason(error: grpc.aio.AioRpcError | grpc.RpcError) -> str:
    """The stable reason of a sidecar error status, e.g. "STALE_REVISION" ("" if none)."""
    for key, value in error.trailing_metadata() or ():
        if key == REASON_KEY:
            return str(value)
    return ""


def _retryable_reasons() -> frozenset[str]:
    """The reasons errors.proto marks `[(retryable) = true]`, by their wire names."""
    return frozenset(
        value.name.removeprefix("ERROR_REASON_")
        for value in errors_pb2.ErrorReason.DESCRIPTOR.values
        if value.GetOptions().Extensions[errors_pb2.retryable]
    )


#: Reasons whose request may succeed if sent again unchanged, after a wait: declared in
#: proto/sidecar/v1/errors.proto, read here (and by the C++ client's Status::retryable()).
#: STALE_REVISION is not among them (the same base fails again: catch up first), nor
#: SHUTTING_DOWN.
RETRYABLE_REASONS = _retryable_reasons()


def is_retryable(error: grpc.aio.AioRpcError | grpc.RpcError) -> bool:
    """True when the failed request may succeed if sent again unchanged (`RETRYABLE_REASONS`,
    after a backoff). A `SidecarGone` is when its `will_restart` is: wait for the status
    READY, then send it again (C#'s `IsRetryable`, C++'s `Status::retryable()`). Never a
    `WriteKept`: its handle sends it; sent again, it would be a second batch."""
    if isinstance(error, WriteKept):
        return False
    if isinstance(error, SidecarGone):
        return error.will_restart
    return error_reason(error) in RETRYABLE_REASONS


class _Auth:
    """Adds `authorization: Bearer <token>` to every call (plain metadata: call
    credentials are dropped on insecure channels)."""

    def __init__(self, token: str) -> None:
        self._pair = (AUTH_HEADER, f"Bearer {token}")

    def _details(self, d: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(tuple(d.metadata) if d.metadata else ()), self._pair)
        return grpc.aio.ClientCallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready)


#: What an interceptor hands the call on to (grpc's own types are Any to mypy).
_Continuation = Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]]


# grpc.aio sorts a channel's interceptors by the first interceptor type each one
# is an instance of, so each call shape needs its own object. The bases are Any
# to mypy (grpc ships no type stubs), hence the ignores.
class _AuthUnaryUnary(_Auth, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_unary_unary(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request)


class _AuthUnaryStream(_Auth, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_unary_stream(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request)


class _AuthStreamUnary(_Auth, grpc.aio.StreamUnaryClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_stream_unary(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request_iterator: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request_iterator)


class _AuthStreamStream(_Auth, grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]  # grpc: no stubs
    async def intercept_stream_stream(
        self, continuation: _Continuation, client_call_details: grpc.aio.ClientCallDetails, request_iterator: object
    ) -> Any:
        return await continuation(self._details(client_call_details), request_iterator)


def auth_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors that attach the sidecar token to calls of every shape."""
    return [cls(token) for cls in (_AuthUnaryUnary, _AuthUnaryStream, _AuthStreamUnary, _AuthStreamStream)]
