"""Brings a session back from the journal: its last snapshot, then every
record of its tail in order, through the same engine that applied them live
(so revisions, delta-ID windows and aliases come back exactly)."""

from __future__ import annotations

import logging

from sidecar.config import StateLimits
from sidecar.state import codec
from sidecar.state.apply import apply_ops, remember_delta
from sidecar.state.codec import Compaction, Extras, RunChanges
from sidecar.state.journal import Record, StoredSession
from sidecar.state.model import Session, World

__all__ = ["recover_session", "apply_run_changes", "apply_compaction"]

log = logging.getLogger("sidecar.state")


def recover_session(stored: StoredSession, limits: StateLimits) -> tuple[Session, bool]:
    """(session at its last committed revision, whether every record replayed)."""
    session = codec.decode_snapshot(stored.snapshot)
    session.id = stored.id
    for rec in stored.tail:
        try:
            _replay(session, rec, limits)
        except Exception:  # noqa: BLE001 - keep what replayed; say where it stopped
            log.exception(
                "journal record does not replay; session stops at the revision before it",
                extra={"fields": {"session_id": stored.id, "seq": rec.seq, "revision": session.revision}},
            )
            return session, False
    return session, True


def _replay(session: Session, rec: Record, limits: StateLimits) -> None:
    kind, revision, body = rec.kind, rec.revision, rec.body
    if kind == "delta":
        apply_ops(session, codec.decode_ops(body), revision, limits)
        if rec.delta_id:
            remember_delta(session, rec.delta_id, revision, limits.delta_id_window, rec.digest)
    elif kind == "replace":
        session.world = World()
        apply_ops(session, codec.decode_ops(body), revision, limits)
    elif kind == "options":
        session.options = codec.decode_options(body)
    elif kind == "extras":
        extras: Extras = codec.decode_extras(body)
        session.aliases = extras.aliases
        session.transcripts = extras.transcripts
        session.notes = extras.notes
        session.usage = extras.usage
        session.errors_by_reason = extras.errors_by_reason
    elif kind == "run":
        apply_run_changes(session, codec.decode_run(body))
    elif kind == "compact":
        apply_compaction(session, codec.decode_compaction(body))
    else:
        raise ValueError(f"unknown journal record kind {kind!r}")


def apply_run_changes(session: Session, changes: RunChanges) -> None:
    """Replay a "run" record: each transcript from its tail's start is the tail."""
    for actor, tail in changes.transcripts.items():
        log_ = session.transcripts.setdefault(actor, [])
        if tail.start > len(log_):
            raise ValueError(f"transcript tail of {actor!r} starts at {tail.start}, past its {len(log_)} entries")
        del log_[tail.start :]
        log_.extend(tail.entries)
    session.notes.update(changes.notes)
    session.usage.update(changes.usage)
    if changes.errors_by_reason is not None:
        session.errors_by_reason = changes.errors_by_reason


def apply_compaction(session: Session, c: Compaction) -> None:
    """The oldest `removed` entries leave the transcript (a new list: caches keyed on
    the list's identity re-render), and the summary says what they held."""
    entries = session.transcripts.get(c.actor_id, [])
    if c.removed > len(entries):
        raise ValueError(f"compaction of {c.actor_id!r} removes {c.removed} of {len(entries)} entries")
    session.transcripts[c.actor_id] = entries[c.removed :]
    session.summaries[c.actor_id] = c.summary
    # What the actor's last prompt held stays: it names entries by their number from the
    # transcript's first ever (sidecar/context/window.py), which a compaction does not shift.
