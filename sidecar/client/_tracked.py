"""A session handle that keeps its acknowledged revision and keeps the game's writes
across a restart (issues 20 and 34; the contract: docs/protocol.md §1, "Tracked writes
across a restart").

    tracked = await sidecar.client.track("game-1")
    await tracked.apply([op, ...])          # on top of tracked.revision

Every batch goes out under a delta ID (the game's, or "<prefix>-<n>"). What apply() ends
with, and what the game does:

- the reply: acknowledged. `revision` moves to it, never back (a replayed batch answers
  the revision it produced then, which may be older than later batches').
- `WriteKept`: not acknowledged yet, and kept. The sidecar died with the batch in flight
  (it is `pending`), or it was written while the sidecar was gone or restarting (it is
  `held`, in the order written, at most `max_held`). The supervised restart re-opens the
  session, resends the pending batch under its delta ID (the sidecar replays it if the
  dead process had applied it), then sends the held ones. `WriteKept.landed` and
  `RestartOutcome.resent` say how each ended. The game carries on; it never resends.
- `WriteNotApplied`: not in the session, and the handle will not send it: no restart
  follows, the restart lost the session, or the held queue is full. The game decides.
- the sidecar's refusal (an AioRpcError): nothing applied; STALE_REVISION moves
  `revision` to the sidecar's.
- `SidecarGone` (will_restart false): the sidecar died with the batch in flight and no
  restart follows, so whether it was applied is unknown. It stays `pending`: a sidecar on
  the same --state-dir answers for it when it is resent under its delta ID.
- `SessionLost`: a restart lost the session: replace_state() first.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import itertools
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from sidecar.client._exits import ResentBatch, SidecarExit, SidecarGone, WriteKept, WriteNotApplied
from sidecar.v1 import session_service_pb2 as session_pb
from sidecar.v1 import state_pb2

if TYPE_CHECKING:
    from sidecar.client._client import SidecarClient

__all__ = ["TrackedSession", "SessionLost", "MAX_HELD_WRITES"]

log = logging.getLogger("sidecar.tracked")

#: Writes a handle keeps while the sidecar is gone (besides the one in flight). Past it a
#: write is refused at once (WriteNotApplied) and the held ones stay. A game writing every
#: 2 ms fills it in 8 s, once a frame at 60 Hz in 68 s; a restart takes 1-2 s.
MAX_HELD_WRITES = 4096
_Landed = asyncio.Future[session_pb.ApplyDeltasResponse]


class SessionLost(RuntimeError):
    """The session was lost in a restart (no --state-dir): replace_state() first."""


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # a game that never looks at `landed` gets no "never retrieved" log


@dataclass(eq=False)
class _Pending:
    """A batch the sidecar has not acknowledged: in flight (`pending`) or `held`."""

    base_revision: int
    delta_id: str
    ops: list[state_pb2.DeltaOp]
    #: Its place in the order the game wrote (held batches are sent in this order).
    order: int = 0
    #: Created when the game is told the batch is kept (WriteKept.landed).
    landed: _Landed | None = None

    def future(self) -> _Landed:
        if self.landed is None:
            self.landed = asyncio.get_running_loop().create_future()
            self.landed.add_done_callback(_retrieved)
        return self.landed

    def land(self, reply: session_pb.ApplyDeltasResponse) -> None:
        if self.landed is not None and not self.landed.done():
            self.landed.set_result(reply)

    def fail(self, error: BaseException) -> None:
        if self.landed is not None and not self.landed.done():
            self.landed.set_exception(error)


class TrackedSession:
    def __init__(self, client: SidecarClient, session_id: str, revision: int,
                 options: session_pb.SessionOptions) -> None:
        self._client = client
        self.session_id = session_id
        #: The last revision the sidecar acknowledged (it only moves forward, but for
        #: replace_state and a lost session).
        self.revision = revision
        self.options = options
        #: The batch sent without an acknowledgement yet (resent by a restart).
        self.pending: _Pending | None = None
        #: A restart did not find the session: resync with replace_state().
        self.lost = False
        #: How many writes may be held while the sidecar is gone.
        self.max_held = MAX_HELD_WRITES
        self._held: collections.deque[_Pending] = collections.deque()
        #: Closed while a restart sends its last held writes: an apply waits then.
        self._gate: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._prefix = f"{session_id}-{os.urandom(4).hex()}"
        self._numbers = itertools.count(1)
        self._order = itertools.count()

    @property
    def held(self) -> tuple[str, ...]:
        """The delta IDs of the writes kept while the sidecar is gone, in the order sent later."""
        return tuple(batch.delta_id for batch in self._held)

    async def apply(self, ops: Iterable[state_pb2.DeltaOp], delta_id: str = "") -> session_pb.ApplyDeltasResponse:
        """Apply `ops` on top of `revision`; the outcomes are in this module's docstring.
        Cancelled by the game: the batch stays pending and the next apply settles it first."""
        if self._gate is not None:  # a restart is sending the last held writes: go after them
            await self._gate.wait()
        if self.lost:
            raise self._lost_error()
        batch = _Pending(0, delta_id or f"{self._prefix}-{next(self._numbers)}", list(ops), next(self._order))
        if self._behind():
            raise self._hold(batch)
        async with self._lock:  # FIFO: applies get here in the order written
            if self._behind():
                raise self._hold(batch)
            if self.lost:
                raise self._lost_error()
            if self.pending is not None:
                # An apply cancelled by the game left its batch's fate unknown: settle it
                # first (applied once, or refused: logged, as the game gave up on it).
                try:
                    earlier = await self._settle(self._client.sessions)
                except SidecarGone:
                    raise self._hold(batch) from None
                if not earlier.applied:
                    log.warning("a cancelled batch was not applied",
                                extra={"fields": {"session": self.session_id, "delta_id": earlier.delta_id,
                                                  "error": earlier.error}})
            return await self._send(batch)

    async def replace_state(self, snapshot: state_pb2.Snapshot, revision: int = 0,
                            allow_rewind: bool = False) -> session_pb.ReplaceStateResponse:
        """Replace the whole world (the resync after a lost session, or a load)."""
        async with self._lock:
            request = session_pb.ReplaceStateRequest(session_id=self.session_id, snapshot=snapshot,
                                                     revision=revision, allow_rewind=allow_rewind)
            reply = await self._client.replace_state(request)  # in pieces when the world is big
            self.revision = reply.revision
            if self.pending is not None:  # the replaced world supersedes it
                self.pending.fail(WriteNotApplied(self.session_id, self.pending.delta_id,
                                                  "replace_state replaced the world it was written for"))
                self.pending = None
            self.lost = False
            return reply

    # -- the restart (sidecar/client/_supervisor.py) ----------------------------------
    async def resume(self, sessions: Any) -> tuple[bool, list[ResentBatch]]:
        """Re-open the session through `sessions` (the supervisor's stub on the new process),
        settle the pending batch and send the held ones. Returns (found, what each send did).
        SidecarGone: the new process died too; what is left stays for the next restart."""
        async with self._lock:
            try:
                opened = await sessions.OpenSession(
                    session_pb.OpenSessionRequest(session_id=self.session_id, options=self.options))
            except SidecarGone:
                raise
            except grpc.aio.AioRpcError as exc:
                return False, self._lose(self.revision, f"re-opening it failed: {exc.code().name}: {exc.details()}")
            if opened.created or opened.revision < self.revision:
                # Not there (no journal), or acknowledged revisions are missing.
                return False, self._lose(opened.revision, "the session was lost in the restart")
            self.revision = opened.revision
            resent = [await self._settle(sessions)] if self.pending is not None else []
            # Only what is held now: the game may write as fast as these are sent (flush()
            # sends the rest with the gate closed).
            return True, resent + await self._flush(sessions, len(self._held))

    async def flush(self, sessions: Any) -> list[ResentBatch]:
        """Send what was held while sessions resumed, with the gate closed: a game that
        writes faster than they are sent waits for them instead of being held behind
        them forever (the restart would never end). `open_gate()` once READY."""
        self._gate = self._gate or asyncio.Event()
        async with self._lock:
            return await self._flush(sessions)

    def open_gate(self) -> None:
        if self._gate is not None:
            self._gate.set()  # the waiting applies go on in the order they came
            self._gate = None

    def abandon(self, exit: SidecarExit | None, why: str) -> None:
        """No restart follows: every held write fails (WriteNotApplied); a kept batch in
        flight stays `pending`, its `landed` raising SidecarGone (its fate is unknown)."""
        while self._held:
            batch = self._held.popleft()
            batch.fail(WriteNotApplied(self.session_id, batch.delta_id, why, exit))
        if self.pending is not None:
            self.pending.fail(self._client.connection.link.gone_error(
                f"batch {self.pending.delta_id!r} was in flight: whether it was applied is unknown"))

    # -- inside -----------------------------------------------------------------
    def _behind(self) -> bool:
        """A write goes behind the held ones: the sidecar is gone or restarting, or some are held."""
        return self._client.connection.link.refusing() is not None or bool(self._held)

    def _hold(self, batch: _Pending) -> WriteKept | WriteNotApplied:
        """Keep `batch` for the restart (WriteKept), or say it cannot be (WriteNotApplied)."""
        link = self._client.connection.link
        gone = (link.refusing() or link).gone_error()
        if not gone.will_restart:
            return WriteNotApplied(self.session_id, batch.delta_id, "the sidecar is gone and no restart follows",
                                   gone.exit)
        if len(self._held) >= self.max_held:
            return WriteNotApplied(self.session_id, batch.delta_id,
                                   f"{len(self._held)} writes are already held while the sidecar restarts "
                                   "(max_held); they are kept", gone.exit)
        # In the order written: an apply that waited for the lock was written before a
        # write held meanwhile without waiting.
        bisect.insort(self._held, batch, key=lambda held: held.order)
        return WriteKept(gone, self.session_id, batch.delta_id, batch.future())

    async def _send(self, batch: _Pending) -> session_pb.ApplyDeltasResponse:
        batch.base_revision = self.revision
        self.pending = batch
        try:
            reply: session_pb.ApplyDeltasResponse = await self._client.apply_deltas(
                self.session_id, batch.base_revision, batch.ops, batch.delta_id)
        except SidecarGone as gone:
            if gone.will_restart:
                raise WriteKept(gone, self.session_id, batch.delta_id, batch.future()) from gone
            raise  # no restart: its fate is unknown, and it stays pending
        except grpc.aio.AioRpcError as exc:
            self.pending = None  # refused: nothing applied
            self._follow_stale(exc)
            raise
        self.pending = None
        self._advance(reply)
        return reply

    async def _flush(self, sessions: Any, count: int | None = None) -> list[ResentBatch]:
        """Send the held batches in order (the first `count`, or all), each on top of the
        last (under the lock)."""
        sent: list[ResentBatch] = []
        while self._held and (count is None or len(sent) < count):
            batch = self._held.popleft()
            batch.base_revision = self.revision
            self.pending = batch  # if the sidecar dies now, the next restart resends it
            sent.append(await self._settle(sessions))
        return sent

    async def _settle(self, sessions: Any) -> ResentBatch:
        """Send the pending batch under its delta ID (a replay if it was applied)."""
        batch = self.pending
        assert batch is not None
        request = session_pb.ApplyDeltasRequest(session_id=self.session_id, base_revision=batch.base_revision,
                                                delta_id=batch.delta_id, ops=batch.ops)
        try:
            reply: session_pb.ApplyDeltasResponse = await sessions.ApplyDeltas(request)
        except SidecarGone:
            raise  # still pending: the next restart tries again
        except grpc.aio.AioRpcError as exc:
            self.pending = None
            self._follow_stale(exc)
            batch.fail(exc)
            return ResentBatch(self.session_id, batch.delta_id, applied=False,
                               error=f"{exc.code().name}: {exc.details()}")
        self.pending = None
        self._advance(reply)
        batch.land(reply)
        return ResentBatch(self.session_id, batch.delta_id, applied=True, replayed=reply.replayed,
                           revision=reply.revision)

    def _lose(self, revision: int, why: str) -> list[ResentBatch]:
        """The restart did not find the session: nothing kept can be applied to it."""
        self.lost = True
        self.revision = revision
        dropped = ([self.pending] if self.pending is not None else []) + list(self._held)
        self.pending = None
        self._held.clear()
        for batch in dropped:
            batch.fail(WriteNotApplied(self.session_id, batch.delta_id, why))
        return [ResentBatch(self.session_id, batch.delta_id, applied=False, error=why) for batch in dropped]

    def _advance(self, reply: session_pb.ApplyDeltasResponse) -> None:
        # A replay answers the revision the batch produced when first applied: older
        # than what batches acknowledged since have produced.
        self.revision = max(self.revision, reply.revision)

    def _lost_error(self) -> SessionLost:
        return SessionLost(f"session {self.session_id!r} was lost in a sidecar restart; "
                           "resync it with replace_state() first")

    def _follow_stale(self, exc: grpc.aio.AioRpcError) -> None:
        """STALE_REVISION carries the session's revision: follow it (like the C# handle)."""
        status = rpc_status.from_call(exc)
        if status is None:
            return
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info) and info.reason == "STALE_REVISION" and "current_revision" in info.metadata:
                self.revision = int(info.metadata["current_revision"])
