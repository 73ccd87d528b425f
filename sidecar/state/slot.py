"""One session's place in the store: the session, its lock, the revision
waiters, and where its journal stands (last record's sequence number, the tail
written since the last snapshot, what the journal holds of runs' changes).

Kept apart from sidecar/state/store.py, which holds the order of a write
(check -> journal -> memory) and decides whether one may happen; here is the
bookkeeping beside that order, which decides nothing: writing one record or a
whole snapshot of the slot (the store says when), and waking or waiting for a
revision.
"""

from __future__ import annotations

import asyncio

from sidecar.errors import RevisionNotReached, SessionNotFound
from sidecar.state import codec
from sidecar.state.journal import Journal, Record, StoredSession
from sidecar.state.model import Session
from sidecar.state.saved import Saved as _Saved

__all__ = ["Slot"]


class Slot:
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

    @classmethod
    def recovered(cls, session: Session, stored: StoredSession) -> Slot:
        """The slot of a session brought back from the journal (`stored`)."""
        # Past every stored record, replayed or not: new records must not collide.
        slot = cls(session, stored.tail[-1].seq if stored.tail else stored.seq)
        slot.tail_records = len(stored.tail)
        slot.tail_bytes = sum(len(r.body) for r in stored.tail)
        return slot

    def alive(self) -> None:
        """Raise SessionNotFound once the session was closed (a writer that waited for the lock)."""
        if self.closed:
            raise SessionNotFound(f"no session {self.session.id!r}", metadata={"session_id": self.session.id})

    def close(self, session_id: str) -> None:
        """Mark the slot closed and fail its revision waiters: the session is gone."""
        self.closed = True
        for _, fut in self.waiters:
            if not fut.done():
                fut.set_exception(SessionNotFound(f"session {session_id!r} was closed"))
        self.waiters.clear()

    # -- journal ---------------------------------------------------------------
    async def record(
        self, journal: Journal, kind: str, revision: int, delta_id: str, body: bytes, digest: bytes = b""
    ) -> None:
        """Append one record after the slot's last and count it in the tail."""
        self.seq += 1
        rec = Record(self.seq, kind, revision, delta_id, body, digest)
        await journal.submit([Journal.record_stmt(self.session.id, rec)])
        self.tail_records += 1
        self.tail_bytes += len(body)

    async def snapshot(self, journal: Journal, session: Session | None = None) -> None:
        """Write the session whole and drop its tail (creation, import, compaction)."""
        session = session or self.session
        data = await codec.encode_snapshot(session, self.session.id)
        # Taken as the snapshot was encoded (no await between): what it holds.
        saved = _Saved(session)
        await journal.submit(Journal.snapshot_stmts(self.session.id, self.seq, data))
        self.saved = saved
        self.tail_records = 0
        self.tail_bytes = 0

    # -- revision waits --------------------------------------------------------
    async def wait_for_revision(self, session_id: str, revision: int, timeout_s: float) -> None:
        """Return once the session reaches `revision`, else RevisionNotReached."""
        if self.session.revision >= revision:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, fut)
        self.waiters.append(entry)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            raise RevisionNotReached(
                f"session {session_id!r} is at revision {self.session.revision}, not {revision}, after {timeout_s:g}s",
                metadata={"current_revision": str(self.session.revision), "min_revision": str(revision)},
            ) from None
        finally:
            if entry in self.waiters:
                self.waiters.remove(entry)

    def wake(self) -> None:
        if not self.waiters:
            return
        rev = self.session.revision
        keep = []
        for wanted, fut in self.waiters:
            if wanted <= rev:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((wanted, fut))
        self.waiters[:] = keep
