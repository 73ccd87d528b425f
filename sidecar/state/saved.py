"""What the journal already holds of a session's run-written parts (transcripts,
notes, usage, error counts), so the store's "run" record carries only what
changed since the last one: its size follows the run, not the session's
history (issue 23). Taken whole at each snapshot and after recovery.
"""

from __future__ import annotations

import msgspec

from sidecar.state.codec import RunChanges, TranscriptTail
from sidecar.state.model import ActorUsage, Session

__all__ = ["Saved"]


class Saved:
    """The journal's view of one session's run-written parts."""

    __slots__ = ("lengths", "notes", "usage", "errors")

    def __init__(self, session: Session) -> None:
        self.lengths = {actor: len(entries) for actor, entries in session.transcripts.items()}
        self.notes = dict(session.notes)
        self.usage = {actor: _usage_key(u) for actor, u in session.usage.items()}
        self.errors = dict(session.errors_by_reason)

    def changes(self, s: Session) -> RunChanges | None:
        """What `s` holds beyond this (None: nothing). O(actors), never O(history)."""
        out = RunChanges()
        for actor, entries in s.transcripts.items():
            saved = self.lengths.get(actor, 0)
            if len(entries) > saved:
                out.transcripts[actor] = TranscriptTail(saved, entries[saved:])
            elif len(entries) < saved:  # not written by runs; journal it whole to be safe
                out.transcripts[actor] = TranscriptTail(0, list(entries))
        out.notes = {a: n for a, n in s.notes.items() if self.notes.get(a) != n}
        out.usage = {a: u for a, u in s.usage.items() if self.usage.get(a) != _usage_key(u)}
        if s.errors_by_reason != self.errors:
            out.errors_by_reason = dict(s.errors_by_reason)
        if not (out.transcripts or out.notes or out.usage or out.errors_by_reason is not None):
            return None
        # Copies: the session's own structs change after this returns.
        out.usage = {a: msgspec.structs.replace(u) for a, u in out.usage.items()}
        return out

    def advance(self, c: RunChanges) -> None:
        for actor, tail in c.transcripts.items():
            self.lengths[actor] = tail.start + len(tail.entries)
        self.notes.update(c.notes)
        self.usage.update({a: _usage_key(u) for a, u in c.usage.items()})
        if c.errors_by_reason is not None:
            self.errors = dict(c.errors_by_reason)


def _usage_key(u: ActorUsage) -> tuple[object, ...]:
    return msgspec.structs.astuple(u)
