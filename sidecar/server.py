"""grpc.aio wiring: the call interceptor (auth, parsing, errors), health, reflection, the three
services, and the orderly shutdown (docs/protocol.md §1)."""

from __future__ import annotations

import asyncio
import logging
import os

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from sidecar import heap
from sidecar.app import App
from sidecar.config import Config
from sidecar.lifecycle import ListenSpec
from sidecar.servicers.calls import CallInterceptor
from sidecar.session_gate import SessionGate
from sidecar.state.dirlock import StateDirLock
from sidecar.v1 import (
    agent_service_pb2,
    agent_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
    sidecar_service_pb2,
    sidecar_service_pb2_grpc,
)

__all__ = ["build_app", "SidecarServer", "SERVICE_NAMES"]

log = logging.getLogger("sidecar.server")

SERVICE_NAMES = (
    sidecar_service_pb2.DESCRIPTOR.services_by_name["SidecarService"].full_name,
    session_service_pb2.DESCRIPTOR.services_by_name["SessionService"].full_name,
    agent_service_pb2.DESCRIPTOR.services_by_name["AgentService"].full_name,
)

#: Replies carry whole worlds too (GetState, ExportSession).
MAX_SEND_BYTES = 64 * 1024 * 1024
#: Keepalive pings more often than this count as abuse (clients send one a second).
CLIENT_PING_FLOOR_MS = 500
#: In-flight calls get this long to finish when the server stops.
STOP_GRACE_S = 0.3


def build_app(config: Config) -> App:
    """Construct the domain parts. Cheap: nothing slow is imported or loaded here."""
    from sidecar.context import ContextEngine
    from sidecar.llm import ModelGateway
    from sidecar.runs import RunScheduler
    from sidecar.state.store import SessionStore

    store = SessionStore(config.state, config.state_dir or None)
    gateway = ModelGateway(config)
    context = ContextEngine(config)
    # `app` is read when the scheduler asks, after it is bound below.
    gate = SessionGate()
    runs = RunScheduler(config, store, gateway, context, draining=lambda: app.shutting_down, gate=gate)
    app = App(
        gate=gate,
        config=config,
        store=store,
        gateway=gateway,
        runs=runs,
        context=context,
        capabilities=["stream_deltas", "replace_state", "export_import", "preview_prompt", "chunked_world"],
    )
    if gateway.local_model_status().ready:
        app.capabilities.append("local_model")
    if config.state_dir:
        app.capabilities.append("journal")
    return app


class SidecarServer:
    """One running server. `start()` binds and serves; `stop()` drains and cleans up."""

    def __init__(self, config: Config, token: str, app: App | None = None, *, settle_heap: bool = False) -> None:
        """`settle_heap`: freeze the heap once loaded (sidecar/heap.py); for the process
        that is the sidecar, not for a server started inside a test process."""
        self.config = config
        self._settle_heap_when_loaded = settle_heap
        self.app = app or build_app(config)
        self.stopped = asyncio.Event()
        self._stop_requested = asyncio.Event()
        self._health = health.aio.HealthServicer()
        self._server = grpc.aio.server(
            interceptors=[CallInterceptor(token)],
            options=[
                ("grpc.so_reuseport", 0),
                # The clients ping every second, also when idle, to notice a dead or hung
                # sidecar (docs/protocol.md §1, "When the sidecar exits"). gRPC's default
                # answers that with GOAWAY too_many_pings after three idle pings.
                ("grpc.keepalive_permit_without_calls", 1),
                ("grpc.http2.min_ping_interval_without_data_ms", CLIENT_PING_FLOOR_MS),
                # gRPC receives a message whole before any handler sees it, and refuses
                # one whose length prefix says it is over this limit before buffering
                # it. So no request makes the sidecar hold more than max_request_bytes;
                # a whole world bigger than that is sent in pieces (ReplaceStateChunked,
                # ImportSessionChunked: sidecar/servicers/chunks.py).
                ("grpc.max_receive_message_length", config.state.request_bytes()),
                # Without probing, a stream's receive window grows only while its handler
                # reads a message: a body nobody reads (an unauthenticated call,
                # sidecar/servicers/calls.py) stops after one window instead of being
                # taken in by a window the probe had grown (docs/benchmarks.md, issue 24).
                ("grpc.http2.bdp_probe", 0),
                ("grpc.max_send_message_length", MAX_SEND_BYTES),
            ],
        )
        self._listen: ListenSpec | None = None
        self._settle: asyncio.Task[None] | None = None
        self._state_lock: StateDirLock | None = None
        self._loading = False

    def request_stop(self, why: str = "") -> None:
        if not self._stop_requested.is_set():
            log.info("stop requested", extra={"fields": {"why": why}})
            self._stop_requested.set()

    async def wait_stop_requested(self) -> None:
        await self._stop_requested.wait()

    async def start(self, listen: ListenSpec, *, load: bool = True) -> ListenSpec:
        """Bind, register everything, start serving; returns the spec with the bound port.
        `load=False`: the caller starts the background loading (`load()`) itself, as the
        sidecar's main does once its handshake is out."""
        from sidecar.servicers.agent_service import AgentServicer
        from sidecar.servicers.session_service import SessionServicer
        from sidecar.servicers.sidecar_service import SidecarServicer

        app = self.app
        if self.config.state_dir:
            # One process per journal, before it is read: StateDirBusy (exit code 3) otherwise.
            os.makedirs(self.config.state_dir, mode=0o700, exist_ok=True)
            self._state_lock = StateDirLock(self.config.state_dir)
            self._state_lock.acquire()
        await app.store.start()
        sidecar_service_pb2_grpc.add_SidecarServiceServicer_to_server(
            SidecarServicer(app, self.request_stop), self._server
        )
        session_service_pb2_grpc.add_SessionServiceServicer_to_server(SessionServicer(app), self._server)
        agent_service_pb2_grpc.add_AgentServiceServicer_to_server(AgentServicer(app), self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self._server,
        )
        port = self._server.add_insecure_port(listen.grpc_target)
        if listen.transport == "tcp":
            if port == 0:
                raise OSError(f"cannot bind {listen.grpc_target}")
            listen.port = port
        await self._server.start()
        for name in ("", *SERVICE_NAMES):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._listen = listen
        log.info("serving", extra={"fields": {"address": listen.handshake_address(), "transport": listen.transport}})
        if load:
            self.load()
        return listen

    def load(self) -> None:
        """Begin the background loading (the embedded model, litellm): on threads that
        contend for the interpreter with whatever runs beside them, so the sidecar's
        main starts them after its handshake, not before it."""
        if self._loading:
            return
        self._loading = True
        self.app.gateway.start()
        if self._settle_heap_when_loaded:
            self._settle = asyncio.create_task(self._settle_heap(), name="settle-heap")

    async def _settle_heap(self) -> None:
        """Once the background loading is over, freeze what start-up made, so the
        collector never walks it again (a full collection inside a first token was
        the tail of its time: sidecar/heap.py)."""
        await self.app.gateway.loaded()
        heap.settle()

    async def stop(self, reason: str = "") -> None:
        """Drain: health NOT_SERVING, no new work, cancel runs, stop, flush the journal."""
        if self.stopped.is_set():
            return
        app = self.app
        app.shutting_down = True
        log.info("shutting down", extra={"fields": {"reason": reason}})
        if self._settle is not None:
            self._settle.cancel()
        try:
            await self._health.enter_graceful_shutdown()
            await app.runs.aclose()
            await self._server.stop(STOP_GRACE_S)
            await app.store.aclose()
            await app.gateway.aclose()
        finally:
            if self._listen is not None:
                self._listen.cleanup()
            if self._state_lock is not None:
                self._state_lock.release()  # after the journal is closed
            self.stopped.set()
            log.info("stopped")
