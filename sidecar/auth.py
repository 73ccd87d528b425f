"""The one token check (docs/protocol.md §2): `authorization: Bearer <token>` on
every RPC except grpc.health.v1.Health/Check, compared in constant time. Applied
by `sidecar.servicers.calls.CallInterceptor`, before a request body is parsed."""

from __future__ import annotations

import hmac
from typing import Any

from sidecar.process_contract import AUTH_HEADER

__all__ = ["TokenCheck", "OPEN_METHODS"]

OPEN_METHODS = frozenset({"/grpc.health.v1.Health/Check"})


class TokenCheck:
    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def authorized(self, metadata: Any) -> bool:
        for key, value in metadata or ():
            if key == AUTH_HEADER:
                given = value.encode() if isinstance(value, str) else bytes(value)
                return hmac.compare_digest(given, self._expected)
        return False
