"""A session handle that keeps its acknowledged revision and survives a restart
(issue 20; the C# TrackedSession does the same).

    tracked = await sidecar.client.track("game-1")
    await tracked.apply([op, ...])          # on top of tracked.revision

Every batch goes out under a delta ID (the game's, or "<prefix>-<n>"), and is
kept as `pending` until the sidecar acknowledges it. When the sidecar exits
before the acknowledgement, the game gets `SidecarGone` and the batch stays
pending; the supervised restart (sidecar/supervisor.py) re-opens the session
and resends it under the same ID: the sidecar replays it if it had applied it
(`replayed`), else applies it now. Either way it is in the session once, and
the restart's `RestartOutcome.resent` says what happened. A session the new
process does not have (no --state-dir) is reported lost: `lost` is set, and the
game resyncs it with `replace_state` before applying more.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from sidecar.exits import ResentBatch, SidecarGone
from sidecar.v1 import session_service_pb2 as session_pb
from sidecar.v1 import state_pb2

if TYPE_CHECKING:
    from sidecar.client import SidecarClient

__all__ = ["TrackedSession", "SessionLost"]

log = logging.getLogger("sidecar.tracked")


class SessionLost(RuntimeError):
    """The session was lost in a restart (no --state-dir): replace_state() first."""


@dataclass(frozen=True)
class _Pending:
    base_revision: int
    delta_id: str
    ops: list[state_pb2.DeltaOp]


class TrackedSession:
    def __init__(self, client: SidecarClient, session_id: str, revision: int,
                 options: session_pb.SessionOptions) -> None:
        self._client = client
        self.session_id = session_id
        #: The last revision the sidecar acknowledged.
        self.revision = revision
        self.options = options
        #: The batch sent without an acknowledgement yet (resent by a restart).
        self.pending: _Pending | None = None
        #: A restart did not find the session: resync with replace_state().
        self.lost = False
        self._lock = asyncio.Lock()
        self._prefix = f"{session_id}-{os.urandom(4).hex()}"
        self._numbers = itertools.count(1)

    async def apply(self, ops: Iterable[state_pb2.DeltaOp], delta_id: str = "") -> session_pb.ApplyDeltasResponse:
        """Apply `ops` on top of `revision`. SidecarGone: the batch stays pending and
        a supervised restart resends it (do not resend it yourself under another ID).
        STALE_REVISION: `revision` moves to the sidecar's and nothing was applied.
        Cancelled: the batch stays pending and the next apply resends it first."""
        async with self._lock:
            if self.lost:
                raise SessionLost(f"session {self.session_id!r} was lost in a sidecar restart; "
                                  "resync it with replace_state() first")
            if self.pending is not None:
                # An apply cancelled by the game left its batch's fate unknown: settle it
                # first (applied once, or refused: logged, as the game gave up on it).
                earlier = await self._settle()
                if not earlier.applied:
                    log.warning("a cancelled batch was not applied",
                                extra={"fields": {"session": self.session_id, "delta_id": earlier.delta_id,
                                                  "error": earlier.error}})
            batch = _Pending(self.revision, delta_id or f"{self._prefix}-{next(self._numbers)}", list(ops))
            if self._client.gone:  # never sent: not pending
                raise self._client._link.gone_error("no call is made while it is gone")
            self.pending = batch
            try:
                reply: session_pb.ApplyDeltasResponse = await self._client.apply_deltas(
                    self.session_id, batch.base_revision, batch.ops, batch.delta_id)
            except SidecarGone:
                raise
            except grpc.aio.AioRpcError as exc:
                self.pending = None  # refused: nothing applied
                self._follow_stale(exc)
                raise
            self.pending = None
            self.revision = reply.revision
            return reply

    async def replace_state(self, snapshot: state_pb2.Snapshot, revision: int = 0,
                            allow_rewind: bool = False) -> session_pb.ReplaceStateResponse:
        """Replace the whole world (the resync after a lost session, or a load)."""
        async with self._lock:
            request = session_pb.ReplaceStateRequest(session_id=self.session_id, snapshot=snapshot,
                                                     revision=revision, allow_rewind=allow_rewind)
            reply = await self._client.replace_state(request)  # in pieces when the world is big
            self.revision = reply.revision
            self.pending = None  # the replaced world supersedes it
            self.lost = False
            return reply

    async def resume(self) -> tuple[bool, ResentBatch | None]:
        """After a restart: re-open the session and settle its pending batch.
        Returns (found, what the resend did)."""
        async with self._lock:
            opened = await self._client.sessions.OpenSession(
                session_pb.OpenSessionRequest(session_id=self.session_id, options=self.options))
            if opened.created or opened.revision < self.revision:
                # Not there (no journal), or acknowledged revisions are missing.
                self.lost = True
                self.revision = opened.revision
                dropped = self.pending
                self.pending = None
                if dropped is None:
                    return False, None
                return False, ResentBatch(self.session_id, dropped.delta_id, applied=False,
                                          error="the session was lost in the restart")
            self.revision = opened.revision
            if self.pending is None:
                return True, None
            return True, await self._settle()

    async def _settle(self) -> ResentBatch:
        """Resend the pending batch under its delta ID (a replay if it was applied)."""
        batch = self.pending
        assert batch is not None
        try:
            reply = await self._client.apply_deltas(self.session_id, batch.base_revision, batch.ops, batch.delta_id)
        except SidecarGone:
            raise  # still pending: the next restart tries again
        except grpc.aio.AioRpcError as exc:
            self.pending = None
            self._follow_stale(exc)
            return ResentBatch(self.session_id, batch.delta_id, applied=False,
                               error=f"{exc.code().name}: {exc.details()}")
        self.pending = None
        self.revision = reply.revision
        return ResentBatch(self.session_id, batch.delta_id, applied=True, replayed=reply.replayed,
                           revision=reply.revision)

    def _follow_stale(self, exc: grpc.aio.AioRpcError) -> None:
        """STALE_REVISION carries the session's revision: follow it (like the C# handle)."""
        status = rpc_status.from_call(exc)
        if status is None:
            return
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info) and info.reason == "STALE_REVISION" and "current_revision" in info.metadata:
                self.revision = int(info.metadata["current_revision"])
