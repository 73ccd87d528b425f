"""The history share's timeline: the actor's transcript and the world events it
perceives, in the order they happened (docs/context.md, World events in the history).

Order: an event recorded at revision r comes before a transcript entry whose
prompt was built at revision >= r (`TranscriptEntry.revision`). New entries and
new events both carry the newest revision, so the timeline only grows at its
end and each turn's prompt still extends the previous one's prefix.

The newest perceivable event, when nothing of the actor's happened after it,
is the timeline's last item, right before the volatile block: the next turn's
line and reply follow it, so that turn's prompt extends this one. A world event
repeated by the actor's own transcript (a narration of that very event) appears
once, as the transcript's.

Relevance: an event that involves the actor or a player, or happened where the
actor is, is relevant; any other perceivable event is background and is the
first left out when the timeline outgrows the history share (sidecar/context/budget.py).
It does not depend on the input, so the selection does not reshuffle per turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import NamedTuple

from sidecar.context.context_index import ContextIndex
from sidecar.context.select import event_line
from sidecar.context.session_lru import SessionLRU
from sidecar.context.window import HistoryItem
from sidecar.projection import Projection
from sidecar.state.model import Event, Session, TranscriptEntry

__all__ = ["Timeline", "TimelineCache", "build_timeline"]

#: Recent events scanned for lore triggers (as before the timeline: the last three).
RECENT_EVENTS = 3


@dataclass(frozen=True)
class Timeline:
    items: list[HistoryItem]
    #: The newest perceivable event in any case (the persona's {lastEvent} slot).
    newest_event: str = ""
    #: The last few perceivable events, oldest first (lore triggers).
    recent_events: tuple[str, ...] = ()
    #: Index in `items` of each transcript entry's turn (`parts.Entered` finds its line by it).
    entry_at: tuple[int, ...] = ()


class _Seen(NamedTuple):
    event: Event
    line: str
    #: The history turn, built once per revision (a turn only merges).
    item: HistoryItem
    #: What the line was rendered with: the ID matcher, the moment options, and each
    #: (engine ID, how it read). The next revision keeps the line while all still hold.
    matcher: object
    moment_parts: tuple[bool, bool, bool]
    refs: tuple[tuple[str, str], ...]


def _events(session: Session, proj: Projection, cidx: ContextIndex, before: Sequence[_Seen] = ()) -> list[_Seen]:
    """Perceivable events, oldest first. `before`: the previous revision's; a line that
    still reads the same is kept (a delta re-renders only what it changed, not the whole
    event log per actor)."""
    ents = session.world.entities
    actor = ents.get(proj.actor_id) if proj.actor_id else None
    here = actor.location_id if actor is not None else ""
    players = set(cidx.player_ids)
    exp = session.options.expose_moment
    matcher, parts = proj.id_matcher, (exp.calendar, exp.timeline, exp.tick)
    previous = {id(seen.event): seen for seen in before}
    out = []
    # Events are numbered from the first ever: those past the cap count (a window holds by number).
    first = session.world.events_dropped
    for number, ev in enumerate(session.world.events, first):
        if not proj.can_see_event(ev):
            continue
        old = previous.get(id(ev))
        if (
            old is not None
            and old.event is ev
            and old.matcher is matcher
            and old.moment_parts == parts
            and all(proj.ref_text(eid) == text for eid, text in old.refs)
        ):
            line, refs = old.line, old.refs
        else:
            # The same matcher finds the same IDs in the same text; each must still read the same.
            line, refs = proj.noting(partial(event_line, proj, ev))
        # An event involves its actor, its entities and the engine IDs its text names
        # (docs/context.md): "BP_Guard_7 shoves PLAYER_1" is about both, fields or not.
        about = frozenset((ev.actor_id, *ev.entity_ids, *(eid for eid, _ in refs))) - {""}
        relevant = (
            actor is None or proj.actor_id in about or bool(players & about) or bool(here and ev.location_id == here)
        )
        item = HistoryItem("user", f"Event: {line}", "event", relevant, about, ev.text, number)
        out.append(_Seen(ev, line, item, matcher, parts, refs))
    return out


class _Merge:
    """A timeline being merged: the transcript entries merged so far and the events
    placed between them. Transcripts only grow at their end (sidecar/context/history.py),
    so a new turn extends the merge instead of walking the whole transcript again:
    a prompt's build cost does not grow with the length of the session."""

    __slots__ = ("base", "log", "events", "newest", "recent", "texts", "items", "entry_at", "merged", "entries")

    def __init__(self, base: object, events: list[_Seen], log: object = None) -> None:
        self.base = base
        #: The transcript list merged (compaction replaces it: the merge starts afresh).
        self.log = log
        self.newest = events[-1].line if events else ""
        self.recent = tuple(e.line for e in events[-RECENT_EVENTS:])
        #: The perceived events not told by the actor's own transcript, in order.
        self.events = events
        #: The texts of `events` (a new entry telling one of them means merging afresh).
        self.texts = frozenset(e.event.text for e in events)
        self.items: list[HistoryItem] = []
        self.entry_at: list[int] = []
        #: How many of `events` are placed in `items`; the rest follow the last entry.
        self.merged = 0
        #: How many transcript entries are merged.
        self.entries = 0

    def extends_to(self, entries: list[TranscriptEntry]) -> bool:
        """Whether merging `entries[self.entries:]` gives what a merge from scratch would:
        not when one of them tells an event the merge placed or is about to place."""
        if len(entries) < self.entries:
            return False
        return not any(e.role == "event" and e.text in self.texts for e in entries[self.entries :])

    def tell(self, entries: list[TranscriptEntry]) -> None:
        """Leave out the events the actor's own transcript tells (before any merge)."""
        # The newest revision at which the actor's transcript told each event text.
        told: dict[str, int] = {}
        for entry in entries:
            if entry.role == "event":
                told[entry.text] = max(told.get(entry.text, -1), entry.revision)
        if told:
            self.events = [e for e in self.events if told.get(e.event.text, -1) < e.event.revision]
            self.texts = frozenset(e.event.text for e in self.events)

    def extend(self, entries: list[TranscriptEntry], rendered: list[HistoryItem]) -> None:
        events, items, entry_at, i = self.events, self.items, self.entry_at, self.merged
        for entry, item in zip(entries[self.entries :], rendered[self.entries :], strict=False):
            while i < len(events) and events[i].event.revision <= entry.revision:
                items.append(events[i].item)
                i += 1
            entry_at.append(len(items))
            items.append(item)
        self.merged = i
        self.entries = min(len(entries), len(rendered))

    def timeline(self, entries: list[TranscriptEntry]) -> Timeline:
        events, i = self.events, self.merged
        items = self.items + [e.item for e in events[i:]]
        newest_entry = entries[-1].revision if entries else -1
        if i < len(events) and events[-1].event.revision > newest_entry and not items[-1].relevant:
            # What the actor is about to react to is never set aside as background.
            items[-1] = replace(items[-1], relevant=True)
        return Timeline(items, self.newest, self.recent, tuple(self.entry_at))


def _merge(
    session: Session, proj: Projection, events: list[_Seen], rendered: list[HistoryItem], base: object
) -> _Merge:
    log = session.transcripts.get(proj.actor_id)
    entries = log or []
    merge = _Merge(base, events, log)
    merge.tell(entries)
    merge.extend(entries, rendered)
    return merge


def build_timeline(session: Session, proj: Projection, events: list[_Seen], rendered: list[HistoryItem]) -> Timeline:
    """Merge the actor's rendered transcript with the events it perceives (`_events`)."""
    if not events:
        return Timeline(rendered, entry_at=tuple(range(len(rendered))))
    return _merge(session, proj, events, rendered, None).timeline(session.transcripts.get(proj.actor_id, []))


class TimelineCache:
    """One timeline per revision, actor and perception (named IDs); the perceived
    events are rendered once per revision, so a dialogue turn only merges."""

    def __init__(self, maxsize: int = 1024) -> None:
        self._cache: SessionLRU[tuple[object, ...], tuple[object, object, int, Timeline]] = SessionLRU(maxsize)
        self._events: SessionLRU[tuple[object, ...], tuple[object, list[_Seen]]] = SessionLRU(maxsize)
        #: The merge each timeline came from, extended when only the transcript grew.
        self._merges: SessionLRU[tuple[object, ...], _Merge] = SessionLRU(maxsize)

    def get(
        self,
        session: Session,
        proj: Projection,
        cidx: ContextIndex,
        rendered: list[HistoryItem],
        named: tuple[str, ...],
    ) -> Timeline:
        # The session ID first in every key: forget() drops a closed session's entries. The
        # transcript list is checked, not keyed: each compaction replaces it, and a key by
        # it left a stale timeline (hundreds of items) behind per compaction (issue 31: RSS
        # grew all session).
        log = session.transcripts.get(proj.actor_id)
        entries = log or []
        key = (session.id, id(session), proj.actor_id, named)
        # Entries built from an older state of the actor's view go when a newer one is stored.
        scope, state = (session.id, proj.actor_id), (id(session), id(cidx.base), id(log))
        hit = self._cache.get(key)
        if hit is not None and hit[0] is cidx.base and hit[1] is log and hit[2] == len(rendered):
            return hit[3]
        seen = self._events.get(key)
        if seen is None or seen[0] is not cidx.base:
            seen = (cidx.base, _events(session, proj, cidx, seen[1] if seen is not None else ()))
            self._events.put(key, seen, scope, state[:2])
        if not seen[1]:
            built = Timeline(rendered, entry_at=tuple(range(len(rendered))))
        else:
            with self._merges.lock:  # a merge is extended in place
                merge = self._merges.get(key)
                if (
                    merge is None
                    or merge.base is not cidx.base
                    or merge.log is not log
                    or not merge.extends_to(entries)
                ):
                    merge = _merge(session, proj, seen[1], rendered, cidx.base)
                    self._merges.put(key, merge, scope, state)
                else:
                    merge.extend(entries, rendered)
                built = merge.timeline(entries)
        self._cache.put(key, (cidx.base, log, len(rendered), built), scope, state)
        return built

    def forget(self, session_id: str) -> None:
        self._cache.forget(session_id)
        self._events.forget(session_id)
        self._merges.forget(session_id)

    def __len__(self) -> int:
        return len(self._cache) + len(self._events) + len(self._merges)
