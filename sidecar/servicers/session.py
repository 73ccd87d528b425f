"""SessionService: sessions and their revisioned state, over `app.store`
(`sidecar.state.store.SessionStore`). Thin: convert, call the store, map errors.

Register it with `add_session_service(app, server)` rather than the generated
`add_SessionServiceServicer_to_server`: the same handlers, but a request whose
bytes do not parse (corrupt wire format, invalid UTF-8 in a string) reaches the
servicer and gets INVALID_ARGUMENT / INVALID_REQUEST instead of grpc's UNKNOWN.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from sidecar.app import App
from sidecar.errors import InvalidRequest, LimitExceeded, ShuttingDown, SidecarError
from sidecar.servicers.convert_state import ops_from_pb, options_from_pb, options_to_pb, world_from_pb, world_to_pb
from sidecar.servicers.status import abort, error_detail
from sidecar.state.codec import BLOB_VERSION
from sidecar.state.ops import Op
from sidecar.state.store import SessionStore
from sidecar.v1 import session_service_pb2 as pb
from sidecar.v1 import session_service_pb2_grpc as pb_grpc

__all__ = ["SessionServicer", "add_session_service"]

log = logging.getLogger("sidecar.servicers.session")
_KINDS = range(0, 7)
M = TypeVar("M", bound=Message)


class _Malformed:
    """What the tolerant deserializer hands the servicer for bytes that do not parse."""

    def __init__(self, type_name: str, error: str) -> None:
        self.type_name = type_name
        self.error = error


def _tolerant(cls: type[Message]) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except DecodeError as exc:
            return _Malformed(cls.__name__, str(exc))

    return deserialize


def _parsed(request: M) -> M:
    if isinstance(request, _Malformed):
        raise InvalidRequest(
            f"the request is not a valid {request.type_name} (corrupt wire format or invalid UTF-8): {request.error}"
        )
    return request


_METHODS: dict[str, tuple[type[Message], type[Message], bool]] = {
    "OpenSession": (pb.OpenSessionRequest, pb.OpenSessionResponse, False),
    "CloseSession": (pb.CloseSessionRequest, pb.CloseSessionResponse, False),
    "ApplyDeltas": (pb.ApplyDeltasRequest, pb.ApplyDeltasResponse, False),
    "StreamDeltas": (pb.StreamDeltasRequest, pb.StreamDeltasResponse, True),
    "ReplaceState": (pb.ReplaceStateRequest, pb.ReplaceStateResponse, False),
    "GetState": (pb.GetStateRequest, pb.GetStateResponse, False),
    "ExportSession": (pb.ExportSessionRequest, pb.ExportSessionResponse, False),
    "ImportSession": (pb.ImportSessionRequest, pb.ImportSessionResponse, False),
}


def add_session_service(app: App, server: grpc.aio.Server) -> SessionServicer:
    """Register SessionService on `server` with tolerant request parsing."""
    servicer = SessionServicer(app)
    handlers = {}
    for name, (req, resp, streaming) in _METHODS.items():
        make = grpc.stream_stream_rpc_method_handler if streaming else grpc.unary_unary_rpc_method_handler
        handlers[name] = make(
            getattr(servicer, name), request_deserializer=_tolerant(req), response_serializer=resp.SerializeToString
        )
    service = pb.DESCRIPTOR.services_by_name["SessionService"].full_name
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_registered_method_handlers(service, handlers)
    return servicer


def _unary(method: Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Any]]) -> Any:
    """A unary RPC: the request parsed (tolerantly), any error turned into its status."""

    @functools.wraps(method)
    async def rpc(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await method(self, _parsed(request), context)
        except Exception as exc:
            await abort(context, exc)

    return rpc


class SessionServicer(pb_grpc.SessionServiceServicer):
    def __init__(self, app: App) -> None:
        self._app = app

    @property
    def _store(self) -> SessionStore:
        return self._app.store  # type: ignore[return-value]

    def _admit(self) -> None:
        if self._app.shutting_down:
            raise ShuttingDown("the sidecar is shutting down and takes no new work")

    def _ops(self, ops: object) -> list[Op]:
        limit = self._store.limits.max_ops_per_batch
        if len(ops) > limit:  # type: ignore[arg-type]
            raise LimitExceeded(
                f"batch has {len(ops)} ops, over max_ops_per_batch={limit}",  # type: ignore[arg-type]
                metadata={"limit": "max_ops_per_batch"},
            )
        return ops_from_pb(ops)  # type: ignore[arg-type]

    @_unary
    async def OpenSession(
        self, request: pb.OpenSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.OpenSessionResponse:
        self._admit()
        options = options_from_pb(request.options) if request.HasField("options") else None
        session, created = await self._store.open(request.session_id, options, request.update_options)
        return pb.OpenSessionResponse(
            session_id=session.id,
            revision=session.revision,
            created=created,
            options=options_to_pb(session.options),
        )

    @_unary
    async def CloseSession(
        self, request: pb.CloseSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.CloseSessionResponse:
        _need_id(request.session_id)
        self._store.get(request.session_id)
        cancelled = await self._cancel_runs(request.session_id)
        await self._store.close(request.session_id)
        return pb.CloseSessionResponse(cancelled_runs=cancelled)

    async def _cancel_runs(self, session_id: str) -> int:
        return int(await self._app.runs.cancel_session(session_id))  # type: ignore[attr-defined]

    @_unary
    async def ApplyDeltas(
        self, request: pb.ApplyDeltasRequest, context: grpc.aio.ServicerContext
    ) -> pb.ApplyDeltasResponse:
        self._admit()
        _need_id(request.session_id)
        revision, replayed = await self._store.apply(
            request.session_id, request.base_revision, request.delta_id, self._ops(request.ops)
        )
        return pb.ApplyDeltasResponse(revision=revision, replayed=replayed)

    async def StreamDeltas(
        self, request_iterator: AsyncIterator[pb.StreamDeltasRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.StreamDeltasResponse]:
        store = self._store
        async for request in request_iterator:
            try:
                request = _parsed(request)
                self._admit()
                _need_id(request.session_id)
                revision, replayed = await store.apply(
                    request.session_id, request.base_revision, request.delta_id, self._ops(request.ops)
                )
                yield pb.StreamDeltasResponse(delta_id=request.delta_id, revision=revision, replayed=replayed)
            except Exception as exc:  # reported in the stream, which goes on
                if not isinstance(exc, SidecarError):
                    log.exception("unexpected error in StreamDeltas", exc_info=exc)
                if isinstance(request, _Malformed):
                    yield pb.StreamDeltasResponse(error=error_detail(exc))
                    continue
                current = 0
                try:
                    current = store.get(request.session_id).revision
                except SidecarError:
                    pass
                yield pb.StreamDeltasResponse(delta_id=request.delta_id, revision=current, error=error_detail(exc))

    @_unary
    async def ReplaceState(
        self, request: pb.ReplaceStateRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReplaceStateResponse:
        self._admit()
        _need_id(request.session_id)
        self._store.get(request.session_id)
        world = world_from_pb(request.snapshot)
        revision = await self._store.replace(request.session_id, world, request.revision, request.allow_rewind)
        return pb.ReplaceStateResponse(revision=revision)

    @_unary
    async def GetState(self, request: pb.GetStateRequest, context: grpc.aio.ServicerContext) -> pb.GetStateResponse:
        _need_id(request.session_id)
        bad = [k for k in request.kinds if k not in _KINDS]
        if bad:
            raise InvalidRequest(f"kinds: {bad[0]} is not an EntityKind value")
        session = self._store.get(request.session_id)
        snapshot = world_to_pb(session.world, request.kinds, request.entity_ids)
        return pb.GetStateResponse(revision=session.revision, snapshot=snapshot)

    @_unary
    async def ExportSession(
        self, request: pb.ExportSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ExportSessionResponse:
        _need_id(request.session_id)
        session = self._store.get(request.session_id)
        revision = session.revision
        blob = self._store.export(request.session_id)
        return pb.ExportSessionResponse(blob=blob, format_version=BLOB_VERSION, revision=revision)

    @_unary
    async def ImportSession(
        self, request: pb.ImportSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ImportSessionResponse:
        self._admit()
        session_id, revision = await self._store.import_(request.session_id, request.blob, request.overwrite)
        return pb.ImportSessionResponse(session_id=session_id, revision=revision)


def _need_id(session_id: str) -> None:
    if not session_id:
        raise InvalidRequest("session_id is empty")
