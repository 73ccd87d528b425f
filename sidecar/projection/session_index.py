"""Per-revision lookup tables over a session, so a prompt's projection never
scans all entities: who is where, what is known to whom, every engine ID.

Built once per (session object, revision) and cached; the state engine bumps
the revision on every applied batch, which is what invalidates it. Building is
O(entities); using it is O(what the actor can perceive).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from operator import is_
from typing import Any

from sidecar.idsearch import IdMatcher, Mask, matcher_for
from sidecar.state.aliases import assign_alias
from sidecar.state.model import Event, LoreCard, Memory, Relation, Session

__all__ = ["SessionIndex", "index_for"]

_CACHE_SIZE = 64


class SessionIndex:
    """Read-only tables for one revision of one session."""

    __slots__ = (
        "session",
        "world",
        "aliases",
        "revision",
        "entity_count",
        "by_location",
        "nowhere",
        "known_to",
        "engine_ids",
        "_matcher",
        "_guard_ids",
        "_previous_matcher",
        "_id_parts",
        "_alias_mask",
        "_alias_count",
        "_rule",
    )

    def __init__(self, session: Session, previous: SessionIndex | None = None) -> None:
        self.session = session
        # Identity of the parts a resync or an import swaps out whole (ReplaceState
        # installs a new World; ImportSession with overwrite replaces every field of
        # the same Session object, possibly at the same revision).
        self.world = session.world
        self.aliases = session.aliases
        self.revision = session.revision
        world = session.world
        self.entity_count = len(world.entities)
        #: Location engine ID -> IDs of the entities whose location_id it is, in world order.
        self.by_location: dict[str, list[str]] = {}
        #: Entities with no location (factions, the world itself, abstract things).
        self.nowhere: list[str] = []
        #: Actor engine ID -> IDs of entities whose entity-level visibility lists it.
        self.known_to: dict[str, list[str]] = {}
        table = session.aliases
        mode = session.options.alias_mode
        if len(table.by_id) < len(world.entities) or not table.by_id.keys() >= world.entities.keys():
            # Safety net for sessions built without the state engine (which assigns at
            # creation): deterministic, in world order, so the same world gives the same aliases.
            for ent in world.entities.values():
                if ent.id not in table.by_id:
                    assign_alias(table, ent, mode)
        by_location = self.by_location
        nowhere = self.nowhere
        for eid, ent in world.entities.items():
            loc = ent.location_id
            if loc:
                bucket = by_location.get(loc)
                if bucket is None:
                    by_location[loc] = [eid]
                else:
                    bucket.append(eid)
            else:
                nowhere.append(eid)
            vis = ent.visibility
            if vis.level == "known_to":
                for actor in vis.known_to:
                    self.known_to.setdefault(actor, []).append(eid)
        #: The engine IDs read from events, relations, cards and memories, per kind.
        self._id_parts: dict[str, _Part] = {}
        previous_parts = previous._id_parts if previous is not None and previous.world is world else None
        self.engine_ids: frozenset[str] = frozenset(_all_ids(session, self, previous_parts))
        self._matcher: IdMatcher | None = None
        self._guard_ids: frozenset[str] | None = None
        # The last revision's matcher: new IDs extend it instead of rebuilding it all.
        self._previous_matcher = previous._matcher if previous is not None else None
        # Aliases are only ever added: the same table at the same size holds the same ones.
        self._alias_count = len(table.by_alias)
        same_table = previous is not None and previous.aliases is table and previous._alias_count == self._alias_count
        self._alias_mask: Mask | None = previous._alias_mask if same_table and previous is not None else None
        self._rule: tuple[IdMatcher, Mask] | None = previous._rule if previous is not None else None

    def fresh_for(self, session: Session) -> bool:
        return (
            self.session is session
            and self.world is session.world
            and self.aliases is session.aliases
            and self.revision == session.revision
            and self.entity_count == len(session.world.entities)
        )

    @property
    def matcher(self) -> IdMatcher:
        """Whole-token matcher over the engine IDs (built on first use)."""
        if self._matcher is None:
            self._matcher = matcher_for(self.guard_ids, self._previous_matcher)
            self._previous_matcher = None
        return self._matcher

    @property
    def alias_mask(self) -> Mask:
        """Every alias issued in the session, as text inside which an engine ID's text is
        not an occurrence (`pc_1` inside `npc_1` is the alias)."""
        if self._alias_mask is None:
            self._alias_mask = Mask(frozenset(self.session.aliases.by_alias))
        return self._alias_mask

    @property
    def text_rule(self) -> tuple[IdMatcher, Mask]:
        """The matcher and the alias mask `Projection.text` replaces by: the same object
        while both are (a cache of projected text may be kept while it is)."""
        matcher, mask = self.matcher, self.alias_mask
        rule = self._rule
        if rule is None or rule[0] is not matcher or rule[1] is not mask:
            rule = self._rule = (matcher, mask)
        return rule

    @property
    def guard_ids(self) -> frozenset[str]:
        """The engine IDs a prompt must not contain: all of them, except an ID whose
        text is also an alias issued in this session (a game may add an entity with
        ID "npc_1" after that alias went to another entity; the alias text then
        appears legitimately, and reverse mapping goes through the alias table)."""
        if self._guard_ids is None:
            self._guard_ids = self.engine_ids.difference(self.session.aliases.by_alias)
        return self._guard_ids


#: A part of the engine-ID set: the records it was read from (held, so no identity is
#: reused while the part is) and the IDs.
_Part = tuple[tuple[object, ...], frozenset[str]]


def _event_ids(events: Sequence[Event]) -> set[str]:
    ids: set[str] = set()
    for ev in events:
        ids.update(ev.entity_ids)
        ids.update(ev.visibility.known_to)
        if ev.actor_id:
            ids.add(ev.actor_id)
        if ev.location_id:
            ids.add(ev.location_id)
    return ids


def _relation_ids(relations: Sequence[Relation]) -> set[str]:
    ids: set[str] = set()
    for rel in relations:
        ids.add(rel.source_id)
        ids.add(rel.target_id)
        ids.update(rel.visibility.known_to)
    return ids


def _card_ids(cards: Sequence[LoreCard]) -> set[str]:
    ids: set[str] = set()
    for card in cards:
        ids.update(card.visibility.known_to)
    return ids


def _memory_ids(memories: Sequence[Memory]) -> set[str]:
    return {m.actor_id for m in memories if m.actor_id}


def _part(previous: dict[str, _Part] | None, name: str, objects: Sequence[Any], read: Callable[..., set[str]]) -> _Part:
    """The IDs `read` finds in `objects`, reused from the previous revision while they are
    the same objects (the state engine replaces a record it changes, never edits it:
    sidecar/state/apply.py), so a delta does not re-read every event, relation, card
    and memory of the session."""
    old = previous.get(name) if previous is not None else None
    if old is not None and len(old[0]) == len(objects) and all(map(is_, old[0], objects)):
        return old
    return tuple(objects), frozenset(read(objects))


def _all_ids(session: Session, idx: SessionIndex, previous: dict[str, _Part] | None) -> set[str]:
    """Every engine ID the session holds anywhere (entities, references, cards).

    Entity-level references come from the tables just built (locations are
    containers, known_to lists are keys), so no second pass over the entities."""
    world = session.world
    ids: set[str] = set(world.entities)
    ids.update(session.aliases.by_id)  # removed entities keep their alias and stay secret
    ids.update(world.lore)
    ids.update(idx.by_location)
    ids.update(idx.known_to)
    parts = idx._id_parts
    parts["events"] = _part(previous, "events", world.events, _event_ids)
    parts["relations"] = _part(previous, "relations", world.relations, _relation_ids)
    parts["cards"] = _part(previous, "cards", list(world.lore.values()), _card_ids)
    parts["memories"] = _part(previous, "memories", world.memories, _memory_ids)
    for _, part_ids in parts.values():
        ids.update(part_ids)
    ids.update(world.moods)
    ids.update(world.personas)
    ids.update(session.transcripts)
    ids.update(session.notes)
    ids.discard("")
    return ids


_lock = threading.Lock()
_cache: OrderedDict[int, SessionIndex] = OrderedDict()


def index_for(session: Session) -> SessionIndex:
    """The index for the session's current revision, cached."""
    key = id(session)
    with _lock:
        idx = _cache.get(key)
        if idx is not None and idx.fresh_for(session):
            _cache.move_to_end(key)
            return idx
    idx = SessionIndex(session, previous=idx if idx is not None and idx.session is session else None)
    with _lock:
        _cache[key] = idx
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return idx
