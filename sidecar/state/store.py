"""SessionStore: every session of the sidecar, their revisions, idempotent
delta replays (a delta ID remembered with its batch's digest), revision
waits, saves, and (with a state dir) the journal.

Order of a write, under the session's lock: check (replay window, base
revision, whole batch), commit to the journal, then apply in memory and wake
revision waiters. So memory never runs ahead of the journal, a rejected batch
touches neither, and an ack means committed. Session objects keep their
identity for their whole life (runs hold them).

What a write checks besides the batch (delta ID replays, revisions, IDs and
capacity) is in sidecar/state/write_checks.py; a session's slot (its lock, its
revision waiters, writing its records and snapshots) in sidecar/state/slot.py.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Sequence

from sidecar.config import StateLimits
from sidecar.errors import SessionExists, SessionNotFound, ShuttingDown, SidecarError, StaleRevision
from sidecar.state import codec
from sidecar.state.apply import apply_ops, remember_delta
from sidecar.state.blobcheck import session_from_blob
from sidecar.state.codec import Compaction
from sidecar.state.journal import Journal
from sidecar.state.model import Session, SessionOptions, TranscriptEntry, TranscriptSummary, World
from sidecar.state.ops import Op
from sidecar.state.recovery import apply_compaction, recover_session
from sidecar.state.slot import Slot as _Slot
from sidecar.state.validate import validate_batch
from sidecar.state.write_checks import check_capacity, check_id, next_revision, replayed, resync_ops, target_revision

__all__ = ["SessionStore", "JOURNAL_FILE"]

JOURNAL_FILE = "state.sqlite3"
log = logging.getLogger("sidecar.state")


class SessionStore:
    def __init__(self, limits: StateLimits, state_dir: str | None = None) -> None:
        self.limits = limits
        self.state_dir = state_dir or None
        self._slots: dict[str, _Slot] = {}
        self._journal: Journal | None = None
        self._closed = False
        #: Called with a session's ID after it opens and after each write that changes its
        #: state (not a replayed delta); must not block (the run scheduler's warm-up).
        self.on_change: list[Callable[[str], None]] = []

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        """Open the journal (with a state dir) and bring every session back."""
        if self.state_dir is None:
            return
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        self._journal = Journal(os.path.join(self.state_dir, JOURNAL_FILE), self.limits.journal_synchronous)
        for stored in await self._journal.open():
            session, complete = recover_session(stored, self.limits)
            slot = _Slot.recovered(session, stored)
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

    # -- sessions --------------------------------------------------------------
    async def open(
        self, session_id: str, options: SessionOptions | None = None, update_options: bool = False
    ) -> tuple[Session, bool]:
        """Create the session, or return the existing one (bool: created)."""
        check_id(session_id, self.limits)
        slot = self._slots.get(session_id) if session_id else None
        if slot is not None:
            if update_options and options is not None:
                async with slot.lock:
                    slot.alive()
                    await self._record(slot, "options", slot.session.revision, "", codec.encode_options(options))
                    slot.session.options = options
            return slot.session, False
        check_capacity(len(self._slots), self.limits)
        session = Session(id=session_id or f"s-{uuid.uuid4().hex}", options=options or SessionOptions())
        await self._add(session)
        self._changed(session.id)
        return session, True

    async def _add(self, session: Session) -> None:
        """Hold a new session and snapshot it; nothing stays held when that fails."""
        slot = _Slot(session)
        self._slots[session.id] = slot  # before the await: a second open finds it
        async with slot.lock:
            try:
                await self._snapshot(slot)
            except BaseException:
                self._slots.pop(session.id, None)
                raise

    async def close(self, session_id: str) -> None:
        slot = self._slot(session_id)
        async with slot.lock:
            slot.alive()
            if self._journal is not None:
                await self._journal.submit(Journal.delete_stmts(session_id))
            slot.close(session_id)
            self._slots.pop(session_id, None)

    # -- deltas ----------------------------------------------------------------
    async def apply(self, session_id: str, base_revision: int, delta_id: str, ops: Sequence[Op]) -> tuple[int, bool]:
        """Apply one batch atomically: (new revision, False), or (original revision, True) on replay.

        A remembered delta ID over other ops is DeltaIdReused: replaying it would
        drop the new batch in silence (a game that restarted its delta counter)."""
        slot = self._slot(session_id)
        digest = codec.ops_digest(ops) if delta_id else b""
        async with slot.lock:
            slot.alive()
            s = slot.session
            if delta_id:
                done = replayed(s, delta_id, digest, self.limits)
                if done is not None:
                    return done, True
            if base_revision != s.revision:
                raise StaleRevision(
                    f"base_revision {base_revision} is not the session's revision {s.revision}",
                    current_revision=s.revision,
                )
            validate_batch(s.world, ops, self.limits)
            revision = next_revision(s)
            if self._journal is not None:
                await self._record(slot, "delta", revision, delta_id, codec.encode_ops(ops), digest)
            apply_ops(s, ops, revision, self.limits)
            if delta_id:
                remember_delta(s, delta_id, revision, self.limits.delta_id_window, digest)
            slot.wake()
        self._changed(session_id)
        if self._journal is not None:
            await self.compact_if_due(session_id)
        return revision, False

    async def replace(self, session_id: str, world: World, revision: int = 0, allow_rewind: bool = False) -> int:
        """Replace the whole world (resync). revision 0 = current + 1."""
        slot = self._slot(session_id)
        async with slot.lock:
            slot.alive()
            s = slot.session
            new_rev = target_revision(s.revision, revision, allow_rewind)
            ops = resync_ops(world, self.limits)
            if self._journal is not None:
                await self._record(slot, "replace", new_rev, "", codec.encode_ops(ops))
            s.world = World()
            apply_ops(s, ops, new_rev, self.limits)
            slot.wake()
        self._changed(session_id)
        if self._journal is not None:
            await self.compact_if_due(session_id)
        return new_rev

    async def import_(self, session_id: str, blob: bytes, overwrite: bool = False) -> tuple[str, int]:
        """Restore a save blob into `session_id` (or the blob's own ID): (session ID, revision)."""
        imported = session_from_blob(blob, session_id, self.limits)
        target = imported.id
        slot = self._slots.get(target)
        if slot is None:
            check_capacity(len(self._slots), self.limits)
            await self._add(imported)
            self._changed(target)
            return target, imported.revision
        if not overwrite:
            raise SessionExists(f"session {target!r} exists; set overwrite to replace it")
        async with slot.lock:
            slot.alive()
            await self._snapshot(slot, imported)
            for name in Session.__struct_fields__:
                if name != "id":
                    setattr(slot.session, name, getattr(imported, name))
            slot.wake()
        self._changed(target)
        return target, imported.revision

    def _changed(self, session_id: str) -> None:
        for listener in self.on_change:
            listener(session_id)

    async def wait_for_revision(self, session_id: str, revision: int, timeout_s: float) -> None:
        """Return once the session reaches `revision`, else RevisionNotReached."""
        await self._slot(session_id).wait_for_revision(session_id, revision, timeout_s)

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
            slot.alive()
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
            slot.alive()
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
        await slot.record(self._journal, kind, revision, delta_id, body, digest)

    async def _snapshot(self, slot: _Slot, session: Session | None = None) -> None:
        """Write the session whole and drop its tail (creation, import, compaction)."""
        self._writable()
        if self._journal is None:
            return
        await slot.snapshot(self._journal, session)

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
