"""History: an actor's transcript rendered as chat turns, and the transcript
entries a run appends.

Each entry renders to the same text every turn (player lines as escaped quoted
strings, replies as the model wrote them, engine IDs scrubbed), so the history
is an append-only prefix. Renders are cached per actor and extended as the
transcript grows; a new session revision re-renders (the ID scrub may change).
"""

from __future__ import annotations

import time

from sidecar.context.select import game_text
from sidecar.context.session_lru import SessionLRU
from sidecar.context.window import HistoryItem
from sidecar.projection import Projection
from sidecar.projection.dealias import Piece
from sidecar.prompts.escape import quote
from sidecar.state.model import EntryMention, Role, Session, TranscriptEntry

__all__ = ["HistoryCache", "render_entry", "new_entry", "CONTINUE_TURN"]

#: How a Continue input reads in the history (its turn asks no more than this).
CONTINUE_TURN = "Go on."


def render_entry(proj: Projection, entry: TranscriptEntry, at: int = -1) -> HistoryItem:
    """`at`: the entry's number counted from the transcript's first entry ever."""
    if entry.role == "player":
        who = proj.ref_text(entry.speaker_id) if entry.speaker_id else "The player"
        return HistoryItem("user", f"{who} says: {quote(proj.text(entry.text))}", at=at)
    if entry.role == "event":
        return HistoryItem("user", f"Event: {game_text(proj, entry.text)}", at=at)
    if entry.role == "continue":
        return HistoryItem("user", CONTINUE_TURN, at=at)
    text = proj.text(entry.text).strip() or "…"
    return HistoryItem("assistant", text + (" …" if entry.interrupted else ""), at=at)


def new_entry(
    role: Role,
    text: str,
    speaker_id: str,
    *,
    interrupted: bool = False,
    run_id: str = "",
    revision: int = 0,
    shown: Piece | None = None,
) -> TranscriptEntry:
    """`shown`: the text as the game was shown it (dealiased), when that may differ from `text`."""
    entry = TranscriptEntry(
        role=role,
        text=text,
        speaker_id=speaker_id,
        interrupted=interrupted,
        run_id=run_id,
        unix_ms=int(time.time() * 1000),
        revision=revision,
    )
    if shown is not None:
        entry.shown = shown.text
        entry.mentions = [EntryMention(m.entity_id, m.start, m.length) for m in shown.mentions]
    return entry


class _Rendered:
    __slots__ = ("base", "entries", "items")

    def __init__(self, base: object, entries: list[TranscriptEntry]) -> None:
        self.base = base
        self.entries = entries
        self.items: list[HistoryItem] = []


class HistoryCache:
    def __init__(self, maxsize: int = 4096) -> None:
        #: (session ID, session object id, actor, the IDs the input names).
        self._cache: SessionLRU[tuple[str, int, str, tuple[str, ...]], _Rendered] = SessionLRU(maxsize)

    def items(
        self, session: Session, proj: Projection, base: object, named: tuple[str, ...] = ()
    ) -> list[HistoryItem]:
        """All of the actor's transcript as chat turns (the budget picks the window).
        `named`: the IDs the input names, which the projection makes perceivable: a line
        renders by them ("player_1 says" or "someone says"), so they are part of the key
        (issue 31: keyed without them, a render for an input that named the player served
        the next input, and an imported session built another prompt)."""
        entries = session.transcripts.get(proj.actor_id)
        if not entries:
            return []
        key = (session.id, id(session), proj.actor_id, named)
        with self._cache.lock:
            hit = self._cache.get(key)
            if hit is None or hit.base is not base or hit.entries is not entries or len(hit.items) > len(entries):
                hit = _Rendered(base, entries)
                self._cache.put(key, hit)
            else:
                self._cache.touch(key)
            # Compaction replaces the list (a new render), so its first entry's number holds.
            summary = session.summaries.get(proj.actor_id)
            first = summary.removed if summary is not None else 0
            for i in range(len(hit.items), len(entries)):
                hit.items.append(render_entry(proj, entries[i], first + i))
            return hit.items[:]

    def forget(self, session_id: str) -> None:
        self._cache.forget(session_id)

    def __len__(self) -> int:
        return len(self._cache)
