"""Turns a SidecarError into a gRPC status with a stable reason.

Every error status carries google.rpc.ErrorInfo (domain "game-sidecar",
reason, metadata) in `grpc-status-details-bin`, and the reason again in the
`sidecar-reason` trailing metadata for clients that do not parse details (both
names are the process contract's, sidecar/process_contract.py).
"""

from __future__ import annotations

import logging
from typing import NoReturn

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from sidecar.errors import SidecarError
from sidecar.process_contract import ERROR_DOMAIN, REASON_KEY
from sidecar.v1 import errors_pb2

__all__ = ["abort", "to_status", "error_detail"]

log = logging.getLogger("sidecar.servicers")


def _as_sidecar_error(exc: BaseException) -> SidecarError:
    """An unexpected exception becomes INTERNAL; its text stays in the log (it may
    hold paths, SQL or game data), the game gets a fixed message."""
    if isinstance(exc, SidecarError):
        return exc
    return SidecarError("internal error: a bug in the sidecar (its log has the details)")


def to_status(exc: BaseException) -> grpc.Status:
    err = _as_sidecar_error(exc)
    code = getattr(code_pb2, err.code)
    info = error_details_pb2.ErrorInfo(reason=err.reason, domain=ERROR_DOMAIN, metadata=err.metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = rpc_status.to_status(status_pb2.Status(code=code, message=err.message, details=[detail]))
    # Trailing metadata is replaced by to_status; add the plain reason too.
    status_md = tuple(status.trailing_metadata or ())
    return _Status(status.code, status.details, status_md + ((REASON_KEY, err.reason),))


# The base is Any to mypy: grpc ships no type stubs.
class _Status(grpc.Status):  # type: ignore[misc]
    def __init__(
        self, code: grpc.StatusCode, details: str, trailing_metadata: tuple[tuple[str, str | bytes], ...]
    ) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


async def abort(context: grpc.aio.ServicerContext, exc: BaseException) -> NoReturn:
    """End the call with the status for `exc` (never returns)."""
    if not isinstance(exc, SidecarError):
        log.exception("unexpected error", exc_info=exc)
    await context.abort_with_status(to_status(exc))
    raise AssertionError("unreachable")  # abort_with_status raises


def error_detail(exc: BaseException) -> errors_pb2.ErrorDetail:
    """The in-stream form of an error (StreamDeltas)."""
    err = _as_sidecar_error(exc)
    code = getattr(grpc.StatusCode, err.code).value[0]
    return errors_pb2.ErrorDetail(code=code, reason=err.reason, message=err.message, metadata=err.metadata)
