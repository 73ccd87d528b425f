"""SessionStore: every session of the sidecar, their revisions, idempotent
delta replays (a delta ID remembered with its batch's digest), revision
waits, saves, and (with a state dir) the journal.

Order of a write, under the session's lock: check (replay window, base
revision, whole batch), commit to the journal, then apply in memory and wake
revision waiters. So memory never runs ahead of the journal, a rejected batch
touches neither, and an ack means committed. Session objects keep their
identity for their whole life (runs hold them).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Sequence

import msgspec

from sidecar.config import StateLimits
from sidecar.errors import (
    CapacityExceeded,
    DeltaIdReused,
    InvalidRequest,
    LimitExceeded,
    RevisionNotReached,
    SessionExists,
    SessionNotFound,
    ShuttingDown,
    SidecarError,
    StaleRevision,
)
from sidecar.state import codec
from sidecar.state.aliases import assign_alias
from sidecar.state.apply import apply_ops, remember_delta
from sidecar.state.blobcheck import check_blob_session
from sidecar.state.codec import Compaction
from sidecar.state.journal import Journal, Record
from sidecar.state.model import (
    MAX_REVISION,
    Session,
    SessionOptions,
    TranscriptEntry,
    TranscriptSummary,
    World,
)
from sidecar.state.ops import Op, world_to_ops
from sidecar.state.recovery import apply_compaction, recover_session
from sidecar.state.saved import Saved as _Saved
from sidecar.state.validate import validate_batch

__all__ = ["SessionStore", "JOURNAL_FILE"]

JOURNAL_FILE = "state.sqlite3"
log = logging.getLogger("sidecar.state")


class _Slot:
    """A session plus what the store keeps beside it."""

    __slots__ = ("session", "lock", "waiters", "seq", "tail_records", "tail_bytes", "closed", "saved")

    def __init__(self, session: Session, seq: int = 0) -> None:
        self.session = session
        self.lock = asyncio.Lock()
        self.waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.seq = seq
        self.tail_records = 0
        self.tail_bytes = 0
        self.closed = False
        self.saved = _Saved(session)


class SessionStore:
    def __init__(self, limits: StateLimits, state_dir: str | None = None) -> None:
        self.limits = limits
        self.state_dir = state_dir or None
        self._slots: dict[str, _Slot] = {}
        self._journal: Journal | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        """Open the journal (with a state dir) and bring every session back."""
        if self.state_dir is None:
            return
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        self._journal = Journal(os.path.join(self.state_dir, JOURNAL_FILE), self.limits.journal_synchronous)
        for stored in await self._journal.open():
            session, complete = recover_session(stored, self.limits)
            # Past every stored record, replayed or not: new records must not collide.
            slot = _Slot(session, stored.tail[-1].seq if stored.tail else stored.seq)
            slot.tail_records = len(stored.tail)
            slot.tail_bytes = sum(len(r.body) for r in stored.tail)
            self._slots[session.id] = slot
            if not complete:
                # Make the journal say what memory holds (the record that did not replay goes).
                async with slot.lock:
                    await self._snapshot(slot)
        if self._slots:
            log.info("recovered sessions", extra={"fields": {"sessions": len(self._slots)}})

    async def aclose(self) -> None:
        """Flush and close the journal (shutdown). Later writes get ShuttingDown
        rather than silently going unjournaled."""
        self._closed = True
        if self._journal is not None:
            journal = self._journal
            await journal.close()

    @property
    def durable(self) -> bool:
        return self._journal is not None

    # -- reading ---------------------------------------------------------------
    def get(self, session_id: str) -> Session:
        return self._slot(session_id).session

    def session_ids(self) -> list[str]:
        return list(self._slots)

    def export(self, session_id: str) -> bytes:
        return codec.export_blob(self.get(session_id))

    def _slot(self, session_id: str) -> _Slot:
        slot = self._slots.get(session_id)
        if slot is None:
            raise SessionNotFound(f"no session {session_id!r}", metadata={"session_id": session_id})
        return slot

    def _check_id(self, session_id: str) -> None:
        if len(session_id) > self.limits.max_id_length:
            raise LimitExceeded(
                f"session_id has {len(session_id)} characters, over max_id_length={self.limits.max_id_length}",
                metadata={"limit": "max_id_length"},
            )

    def _check_capacity(self) -> None:
        if len(self._slots) >= self.limits.max_sessions:
            raise CapacityExceeded(
                f"{len(self._slots)} sessions open, max_sessions={self.limits.max_sessions}",
                metadata={"limit": "max_sessions"},
            )

    # -- sessions --------------------------------------------------------------
    async def open(
        self, session_id: str, options: SessionOptions | None = None, update_options: bool = False
    ) -> tuple[Session, bool]:
        """Create the session, or return the existing one (bool: created)."""
        self._check_id(session_id)
        slot = self._slots.get(session_id) if session_id else None
        if slot is not None:
            if update_options and options is not None:
                async with slot.lock:
                    self._alive(slot)
                    await self._record(slot, "options", slot.session.revision, "", codec.encode_options(options))
                    slot.session.options = options
            return slot.session, False
        self._check_capacity()
        session = Session(id=session_id or f"s-{uuid.uuid4().hex}", options=options or SessionOptions())
        slot = _Slot(session)
        self._slots[session.id] = slot  # before the await: a second open finds it
        async with slot.lock:
            try:
                await self._snapshot(slot)
            except BaseException:
                self._slots.pop(session.id, None)
                raise
        return session, True

    async def close(self, session_id: str) -> None:
        slot = self._slot(session_id)
        async with slot.lock:
            self._alive(slot)
            if self._journal is not None:
                await self._journal.submit(Journal.delete_stmts(session_id))
            slot.closed = True
            self._slots.pop(session_id, None)
            for _, fut in slot.waiters:
                if not fut.done():
                    fut.set_exception(SessionNotFound(f"session {session_id!r} was closed"))
            slot.waiters.clear()

    def _alive(self, slot: _Slot) -> None:
        if slot.closed:
            raise SessionNotFound(f"no session {slot.session.id!r}", metadata={"session_id": slot.session.id})

    # -- deltas ----------------------------------------------------------------
    async def apply(self, session_id: str, base_revision: int, delta_id: str, ops: Sequence[Op]) -> tuple[int, bool]:
        """Apply one batch atomically: (new revision, False), or (original revision, True) on replay.

        A remembered delta ID over other ops is DeltaIdReused: replaying it would
        drop the new batch in silence (a game that restarted its delta counter)."""
        slot = self._slot(session_id)
        digest = codec.ops_digest(ops) if delta_id else b""
        async with slot.lock:
            self._alive(slot)
            s = slot.session
            if delta_id:
                done = s.recent_deltas.get(delta_id)
                if done is not None:
                    # No stored digest: remembered before digests were kept; a replay as before.
                    if s.delta_digests.get(delta_id, digest) != digest:
                        raise DeltaIdReused(
                            f"delta_id {delta_id!r} was applied at revision {done} with other ops; "
                            "nothing was applied: a retry must resend the same batch, a new batch "
                            f"needs a delta_id not among the session's last {self.limits.delta_id_window}",
                            revision=done,
                        )
                    return done, True
                if len(delta_id) > self.limits.max_id_length:
                    raise LimitExceeded(
                        f"delta_id has {len(delta_id)} characters, over max_id_length={self.limits.max_id_length}",
                        metadata={"limit": "max_id_length"},
                    )
            if base_revision != s.revision:
                raise StaleRevision(
                    f"base_revision {base_revision} is not the session's revision {s.revision}",
                    current_revision=s.revision,
                )
            validate_batch(s.world, ops, self.limits)
            revision = s.revision + 1
            if revision > MAX_REVISION:
                raise LimitExceeded(
                    f"the session is at revision {s.revision}, the highest there is (MAX_REVISION = 2^53-1); "
                    "ReplaceState with allow_rewind to go on",
                    metadata={"limit": "max_revision", "current_revision": str(s.revision)},
                )
            if self._journal is not None:
                await self._record(slot, "delta", revision, delta_id, codec.encode_ops(ops), digest)
            apply_ops(s, ops, revision, self.limits)
            if delta_id:
                remember_delta(s, delta_id, revision, self.limits.delta_id_window, digest)
            self._wake(slot)
        if self._journal is not None:
            await self.compact_if_due(session_id)
        return revision, False

    async def replace(self, session_id: str, world: World, revision: int = 0, allow_rewind: bool = False) -> int:
        """Replace the whole world (resync). revision 0 = current + 1."""
        slot = self._slot(session_id)
        async with slot.lock:
            self._alive(slot)
            s = slot.session
            new_rev = self._target_revision(s.revision, revision, allow_rewind)
            ops = world_to_ops(world)
            validate_batch(
                World(), ops, _snapshot_limits(self.limits, ops), fresh_ids=world.entities, history_refs=False
            )
            if self._journal is not None:
                await self._record(slot, "replace", new_rev, "", codec.encode_ops(ops))
            s.world = World()
            apply_ops(s, ops, new_rev, self.limits)
            self._wake(slot)
        if self._journal is not None:
            await self.compact_if_due(session_id)
        return new_rev

    @staticmethod
    def _target_revision(current: int, wanted: int, allow_rewind: bool) -> int:
        if not 0 <= wanted <= MAX_REVISION:
            raise InvalidRequest(f"revision {wanted} is outside 0..{MAX_REVISION} (2^53-1)")
        if wanted == 0:
            if current + 1 > MAX_REVISION:
                raise InvalidRequest(
                    f"the session is at revision {current}, the highest there is; set a revision with allow_rewind",
                    metadata={"current_revision": str(current)},
                )
            return current + 1
        if wanted <= current and not allow_rewind:
            raise InvalidRequest(
                f"revision {wanted} does not move past the current revision {current}; set allow_rewind to go back",
                metadata={"current_revision": str(current)},
            )
        return wanted

    async def import_(self, session_id: str, blob: bytes, overwrite: bool = False) -> tuple[str, int]:
        """Restore a save blob into `session_id` (or the blob's own ID): (session ID, revision)."""
        imported = codec.import_blob(blob)
        target = session_id or imported.id
        if not target:
            raise InvalidRequest("the blob names no session and session_id is empty")
        self._check_id(target)
        # Whole, before anything is journaled or replaced: a bad blob changes nothing.
        check_blob_session(imported, self.limits)
        imported.id = target
        for entity in imported.world.entities.values():
            assign_alias(imported.aliases, entity, imported.options.alias_mode)
        slot = self._slots.get(target)
        if slot is None:
            self._check_capacity()
            slot = _Slot(imported)
            self._slots[target] = slot
            async with slot.lock:
                try:
                    await self._snapshot(slot)
                except BaseException:
                    self._slots.pop(target, None)
                    raise
            return target, imported.revision
        if not overwrite:
            raise SessionExists(f"session {target!r} exists; set overwrite to replace it")
        async with slot.lock:
            self._alive(slot)
            await self._snapshot(slot, imported)
            for name in Session.__struct_fields__:
                if name != "id":
                    setattr(slot.session, name, getattr(imported, name))
            self._wake(slot)
            return target, imported.revision

    async def wait_for_revision(self, session_id: str, revision: int, timeout_s: float) -> None:
        """Return once the session reaches `revision`, else RevisionNotReached."""
        slot = self._slot(session_id)
        if slot.session.revision >= revision:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, fut)
        slot.waiters.append(entry)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            raise RevisionNotReached(
                f"session {session_id!r} is at revision {slot.session.revision}, not {revision}, after {timeout_s:g}s",
                metadata={"current_revision": str(slot.session.revision), "min_revision": str(revision)},
            ) from None
        finally:
            if entry in slot.waiters:
                slot.waiters.remove(entry)

    def _wake(self, slot: _Slot) -> None:
        if not slot.waiters:
            return
        rev = slot.session.revision
        keep = []
        for wanted, fut in slot.waiters:
            if wanted <= rev:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((wanted, fut))
        slot.waiters[:] = keep

    # -- journal ---------------------------------------------------------------
    async def persist_extras(self, session_id: str) -> None:
        """Journal what runs changed since the last record: new transcript entries,
        and changed notes, usage and error counts (aliases change only with the
        world, whose records replay them). A failed write raises (StorageFull on a
        full disk) and is retried whole by the next call: the marker of what the
        journal holds moves only after a commit."""
        if self._journal is None:
            return
        slot = self._slot(session_id)
        async with slot.lock:
            self._alive(slot)
            s = slot.session
            changes = slot.saved.changes(s)
            if changes is None:
                return
            await self._record(slot, "run", s.revision, "", codec.encode_run(changes))
            slot.saved.advance(changes)
        await self.compact_if_due(session_id)

    async def compact_transcript(
        self, session_id: str, actor_id: str, expect: list[TranscriptEntry], removed: int, summary: TranscriptSummary
    ) -> bool:
        """Drop the oldest `removed` entries of an actor's transcript and set its
        summary, journaled first. `expect` is the transcript list the caller read:
        False (nothing changed) when the transcript was replaced meanwhile (an
        import, a restart), so a summary never lands on another history."""
        slot = self._slot(session_id)
        async with slot.lock:
            self._alive(slot)
            s = slot.session
            entries = s.transcripts.get(actor_id)
            if entries is not expect or removed > len(entries):
                return False
            change = Compaction(actor_id, removed, summary)
            if self._journal is not None:
                # What runs added so far goes first: the compaction's indexes are the journal's.
                pending = slot.saved.changes(s)
                if pending is not None:
                    await self._record(slot, "run", s.revision, "", codec.encode_run(pending))
                    slot.saved.advance(pending)
                await self._record(slot, "compact", s.revision, "", codec.encode_compaction(change))
            apply_compaction(s, change)
            lengths = slot.saved.lengths
            lengths[actor_id] = max(0, lengths.get(actor_id, 0) - removed)
        if self._journal is not None:
            await self.compact_if_due(session_id)
        return True

    def _writable(self) -> None:
        if self._closed:
            raise ShuttingDown("the session store is closed (the sidecar is shutting down)")

    async def _record(
        self, slot: _Slot, kind: str, revision: int, delta_id: str, body: bytes, digest: bytes = b""
    ) -> None:
        self._writable()
        if self._journal is None:
            return
        slot.seq += 1
        rec = Record(slot.seq, kind, revision, delta_id, body, digest)
        await self._journal.submit([Journal.record_stmt(slot.session.id, rec)])
        slot.tail_records += 1
        slot.tail_bytes += len(body)

    async def _snapshot(self, slot: _Slot, session: Session | None = None) -> None:
        """Write the session whole and drop its tail (creation, import, compaction)."""
        self._writable()
        if self._journal is None:
            return
        session = session or slot.session
        data = await codec.encode_snapshot(session, slot.session.id)
        # Taken as the snapshot was encoded (no await between): what it holds.
        saved = _Saved(session)
        await self._journal.submit(Journal.snapshot_stmts(slot.session.id, slot.seq, data))
        slot.saved = saved
        slot.tail_records = 0
        slot.tail_bytes = 0

    async def compact_if_due(self, session_id: str) -> bool:
        """Snapshot the session when its tail is long; True when it did."""
        slot = self._slots.get(session_id)
        if slot is None or self._journal is None:
            return False
        lim = self.limits
        if slot.tail_records < lim.journal_compact_records and slot.tail_bytes < lim.journal_compact_bytes:
            return False
        try:
            async with slot.lock:
                if slot.closed or self._closed:
                    return False
                await self._snapshot(slot)
        except SidecarError:
            # The write that triggered it is committed and acknowledged; the tail
            # stays valid, so a failed compaction is retried after the next write.
            log.warning("journal compaction failed", exc_info=True, extra={"fields": {"session_id": session_id}})
            return False
        return True


def _snapshot_limits(limits: StateLimits, ops: Sequence[Op]) -> StateLimits:
    """A snapshot is one batch, but the batch-size limit is for deltas; the
    entity and collection limits still apply."""
    return msgspec.structs.replace(limits, max_ops_per_batch=max(limits.max_ops_per_batch, len(ops)))
