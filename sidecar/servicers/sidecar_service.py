"""SidecarService: GetInfo and Shutdown."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

import grpc

from sidecar import __version__
from sidecar.app import App
from sidecar.process_contract import PROTOCOL_VERSION
from sidecar.v1 import sidecar_service_pb2 as pb
from sidecar.v1 import sidecar_service_pb2_grpc as pb_grpc

log = logging.getLogger("sidecar.servicers.sidecar_service")


# The base is Any to mypy: grpc and the generated *_grpc.py ship no type stubs.
class SidecarServicer(pb_grpc.SidecarServiceServicer):  # type: ignore[misc]
    def __init__(self, app: App, request_shutdown: Callable[[str], None]) -> None:
        self._app = app
        self._request_shutdown = request_shutdown

    async def GetInfo(self, request: pb.GetInfoRequest, context: grpc.aio.ServicerContext) -> pb.GetInfoResponse:
        app = self._app
        profiles = [pb.ModelProfileInfo(**info) for info in app.gateway.profiles_info()]
        response = pb.GetInfoResponse(
            version=__version__,
            protocol_versions=[PROTOCOL_VERSION],
            capabilities=app.capabilities,
            profiles=profiles,
            llm_ready=app.gateway.ready,
            pid=os.getpid(),
            durable=bool(app.config.state_dir),
            local_model=_local_model_info(app),
        )
        if request.include_stats:
            response.stats.extend(_session_stats(app))
        return response

    async def Shutdown(self, request: pb.ShutdownRequest, context: grpc.aio.ServicerContext) -> pb.ShutdownResponse:
        log.info("shutdown requested", extra={"fields": {"reason": request.reason}})
        # Answer first; the drain starts right after this call returns.
        asyncio.get_running_loop().call_soon(self._request_shutdown, "Shutdown RPC")
        return pb.ShutdownResponse()


def _local_model_info(app: App) -> pb.LocalModelInfo:
    s = app.gateway.local_model_status()
    return pb.LocalModelInfo(runtime_found=s.runtime_found, weights_found=s.weights_found,
                             weights_source=s.weights_source, weights_path=s.weights_path, problem=s.problem)


_STATS_FIELDS = frozenset(pb.SessionStats.DESCRIPTOR.fields_by_name)


def _session_stats(app: App) -> list[pb.SessionStats]:
    """The scheduler's per-session counters, as far as the wire carries them."""
    stats = app.runs.stats()
    return [pb.SessionStats(**{k: v for k, v in s.items() if k in _STATS_FIELDS}) for s in stats]
