"""A request sent in pieces (ReplaceStateChunked, ImportSessionChunked), put back together.

The server's gRPC receive limit is `max_request_bytes` (sidecar/server.py), so that no
request, authenticated or not, makes gRPC buffer more than that before the sidecar can
refuse it. The two requests that carry a whole world may be bigger: they come as a stream
of `*ChunkedRequest` pieces, each within the receive limit, whose data concatenated is the
request's wire form. The total is checked as the pieces arrive: past
`max_snapshot_bytes` nothing more is kept. The rest of the stream is read and dropped
(up to as much again) before the refusal is sent, because a client still sending when
the call ends sees its own write fail (gRPC reports that, INTERNAL, instead of the
sidecar's LIMIT_EXCEEDED); a stream longer than that is cut off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, TypeVar

from google.protobuf.message import Message

from sidecar.errors import InvalidRequest, LimitExceeded

__all__ = ["assemble"]

M = TypeVar("M", bound=Message)


async def assemble(chunks: AsyncIterator[Any], message_type: type[M], max_bytes: int) -> M:
    """The `message_type` request whose serialized bytes the chunks carry.

    Raises LimitExceeded (`max_snapshot_bytes`) as soon as the pieces add up to more
    than `max_bytes`, InvalidRequest for an empty stream or bytes that do not parse."""
    data = bytearray()
    pieces = 0
    over = False
    dropped = 0
    async for chunk in chunks:
        pieces += 1
        if over:
            dropped += len(chunk.data)
            if dropped > max_bytes:
                break
        elif len(data) + len(chunk.data) > max_bytes:
            over, data = True, bytearray()
        else:
            data += chunk.data  # (the interceptor refused a piece that did not parse)
    if over:
        raise LimitExceeded(
            f"the chunked {message_type.__name__} is over max_snapshot_bytes={max_bytes}",
            metadata={"limit": "max_snapshot_bytes"},
        )
    if not pieces:
        raise InvalidRequest(f"the chunked {message_type.__name__} has no pieces")
    request: M = message_type()
    try:
        request.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the client's bad bytes
        raise InvalidRequest(
            f"the chunks do not make a valid {message_type.__name__} (corrupt wire format or invalid UTF-8): "
            f"{str(exc) or type(exc).__name__}"
        ) from None
    return request
