"""The real sidecar with one fault injected, for the C API's lane test
(clients/cpp/capi/tests/test_capi.c, `test_sessions_do_not_wait`): ApplyDeltas on a
session whose ID starts with "stalled" answers only after STALL_S seconds, as a big
import or a slow disk would make one session's call. Everything else, the handshake
and the other sessions included, is the real sidecar.

    python stalling_sidecar.py serve --config sidecar_test.toml
"""

from __future__ import annotations

import asyncio
import sys

import grpc

from sidecar import cli
from sidecar.servicers.session_service import SessionServicer
from sidecar.v1 import session_service_pb2 as pb

STALL_S = 3.0

_apply = SessionServicer.ApplyDeltas


async def _stalling_apply(
    self: SessionServicer, request: pb.ApplyDeltasRequest, context: grpc.aio.ServicerContext
) -> pb.ApplyDeltasResponse:
    if request.session_id.startswith("stalled"):
        await asyncio.sleep(STALL_S)
    return await _apply(self, request, context)


SessionServicer.ApplyDeltas = _stalling_apply  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(cli.main(sys.argv[1:]))
