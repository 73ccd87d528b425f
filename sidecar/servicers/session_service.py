"""SessionService: sessions and their revisioned state, over `app.store`
(`sidecar.state.store.SessionStore`). Thin: convert, call the store, raise.

Errors, authentication and unparseable requests are handled for every service
by `sidecar.servicers.calls.CallInterceptor`; StreamDeltas alone reports a bad
batch (an unparseable one too) inside its response stream and goes on.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

import grpc
import msgspec

from sidecar.app import App
from sidecar.errors import InvalidRequest, LimitExceeded, ShuttingDown, SidecarError
from sidecar.servicers.calls import Malformed, parsed
from sidecar.servicers.chunks import assemble
from sidecar.servicers.convert_enums import KIND_NUMBERS
from sidecar.servicers.convert_options import options_from_pb, options_to_pb
from sidecar.servicers.convert_state_from_pb import ops_from_pb, world_from_pb
from sidecar.servicers.convert_state_to_pb import world_to_pb
from sidecar.servicers.status import error_detail
from sidecar.sessions import close_session
from sidecar.state.codec import BLOB_VERSION
from sidecar.state.ops import Op
from sidecar.state.store import SessionStore
from sidecar.v1 import session_service_pb2 as pb
from sidecar.v1 import session_service_pb2_grpc as pb_grpc
from sidecar.v1.state_pb2 import DeltaOp

__all__ = ["SessionServicer"]

log = logging.getLogger("sidecar.servicers.session_service")


# The base is Any to mypy: grpc and the generated *_grpc.py ship no type stubs.
class SessionServicer(pb_grpc.SessionServiceServicer):  # type: ignore[misc]
    def __init__(self, app: App) -> None:
        self._app = app

    @property
    def _store(self) -> SessionStore:
        return self._app.store

    def _admit(self) -> None:
        if self._app.shutting_down:
            raise ShuttingDown("the sidecar is shutting down and takes no new work")

    def _ops(self, ops: Sequence[DeltaOp]) -> list[Op]:
        limit = self._store.limits.max_ops_per_batch
        if len(ops) > limit:
            raise LimitExceeded(
                f"batch has {len(ops)} ops, over max_ops_per_batch={limit}",
                metadata={"limit": "max_ops_per_batch"},
            )
        return ops_from_pb(ops)

    async def OpenSession(
        self, request: pb.OpenSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.OpenSessionResponse:
        self._admit()
        options = options_from_pb(request.options) if request.HasField("options") else None
        async with self._app.gate.write(request.session_id):
            session, created = await self._store.open(request.session_id, options, request.update_options)
        return pb.OpenSessionResponse(
            session_id=session.id,
            revision=session.revision,
            created=created,
            options=options_to_pb(session.options),
        )

    async def CloseSession(
        self, request: pb.CloseSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.CloseSessionResponse:
        _need_id(request.session_id)
        app = self._app
        async with app.gate.write(request.session_id):
            cancelled = await close_session(request.session_id, self._store, app.runs, app.context)
        return pb.CloseSessionResponse(cancelled_runs=cancelled)

    async def ApplyDeltas(
        self, request: pb.ApplyDeltasRequest, context: grpc.aio.ServicerContext
    ) -> pb.ApplyDeltasResponse:
        self._admit()
        _need_id(request.session_id)
        ops = self._ops(request.ops)
        async with self._app.gate.write(request.session_id):
            revision, replayed = await self._store.apply(
                request.session_id, request.base_revision, request.delta_id, ops
            )
        return pb.ApplyDeltasResponse(revision=revision, replayed=replayed)

    async def StreamDeltas(
        self, request_iterator: AsyncIterator[pb.StreamDeltasRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.StreamDeltasResponse]:
        store = self._store
        async for request in request_iterator:
            try:
                request = parsed(request)
                self._admit()
                _need_id(request.session_id)
                ops = self._ops(request.ops)
                async with self._app.gate.write(request.session_id):
                    revision, replayed = await store.apply(
                        request.session_id, request.base_revision, request.delta_id, ops
                    )
                yield pb.StreamDeltasResponse(delta_id=request.delta_id, revision=revision, replayed=replayed)
            except Exception as exc:  # reported in the stream, which goes on
                if not isinstance(exc, SidecarError):
                    log.exception("unexpected error in StreamDeltas", exc_info=exc)
                if isinstance(request, Malformed):
                    yield pb.StreamDeltasResponse(error=error_detail(exc))
                    continue
                current = 0
                try:
                    current = store.get(request.session_id).revision
                except SidecarError:
                    pass
                yield pb.StreamDeltasResponse(delta_id=request.delta_id, revision=current, error=error_detail(exc))

    async def ReplaceState(
        self, request: pb.ReplaceStateRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReplaceStateResponse:
        self._admit()
        _need_id(request.session_id)
        self._store.get(request.session_id)
        world = world_from_pb(request.snapshot)
        async with self._app.gate.write(request.session_id):
            revision = await self._store.replace(request.session_id, world, request.revision, request.allow_rewind)
        return pb.ReplaceStateResponse(revision=revision)

    async def ReplaceStateChunked(
        self, request_iterator: AsyncIterator[pb.ReplaceStateChunkedRequest], context: grpc.aio.ServicerContext
    ) -> pb.ReplaceStateChunkedResponse:
        self._admit()
        limit = self._store.limits.max_snapshot_bytes
        request = await assemble(request_iterator, pb.ReplaceStateRequest, limit)
        reply = await self.ReplaceState(request, context)
        return pb.ReplaceStateChunkedResponse(revision=reply.revision)

    async def GetState(self, request: pb.GetStateRequest, context: grpc.aio.ServicerContext) -> pb.GetStateResponse:
        _need_id(request.session_id)
        bad = [k for k in request.kinds if k not in KIND_NUMBERS]
        if bad:
            raise InvalidRequest(f"kinds: {bad[0]} is not an EntityKind value")
        session = self._store.get(request.session_id)
        snapshot = world_to_pb(session.world, request.kinds, request.entity_ids)
        return pb.GetStateResponse(revision=session.revision, snapshot=snapshot)

    async def ExportSession(
        self, request: pb.ExportSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ExportSessionResponse:
        _need_id(request.session_id)
        session = self._store.get(request.session_id)
        revision = session.revision
        blob = self._store.export(request.session_id)
        return pb.ExportSessionResponse(blob=blob, format_version=BLOB_VERSION, revision=revision)

    async def ImportSession(
        self, request: pb.ImportSessionRequest, context: grpc.aio.ServicerContext
    ) -> pb.ImportSessionResponse:
        self._admit()
        async with self._app.gate.write(request.session_id or _blob_session_id(request.blob)):
            session_id, revision = await self._store.import_(request.session_id, request.blob, request.overwrite)
        return pb.ImportSessionResponse(session_id=session_id, revision=revision)

    async def ImportSessionChunked(
        self, request_iterator: AsyncIterator[pb.ImportSessionChunkedRequest], context: grpc.aio.ServicerContext
    ) -> pb.ImportSessionChunkedResponse:
        self._admit()
        limit = self._store.limits.max_snapshot_bytes
        request = await assemble(request_iterator, pb.ImportSessionRequest, limit)
        reply = await self.ImportSession(request, context)
        return pb.ImportSessionChunkedResponse(session_id=reply.session_id, revision=reply.revision)


class _BlobId(msgspec.Struct):
    """The session ID a save's envelope names (sidecar/state/codec.py); the rest is skipped."""

    session_id: str = ""


_blob_id = msgspec.msgpack.Decoder(_BlobId).decode


def _blob_session_id(blob: bytes) -> str:
    """The session an import without a target goes into (the store says whether the
    blob is valid; a blob this cannot read imports nowhere)."""
    try:
        return _blob_id(blob).session_id
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""


def _need_id(session_id: str) -> None:
    if not session_id:
        raise InvalidRequest("session_id is empty")
