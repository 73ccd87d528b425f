"""Per-revision lookup tables over a session, so a prompt's projection never
scans all entities: who is where, what is known to whom, every engine ID.

Built once per (session object, revision) and cached; the state engine bumps
the revision on every applied batch, which is what invalidates it. Building is
O(entities); using it is O(what the actor can perceive).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from sidecar.projection.idmatch import IdMatcher, matcher_for
from sidecar.state.aliases import assign_alias
from sidecar.state.model import Session

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
        self.engine_ids: frozenset[str] = frozenset(_all_ids(session, self))
        self._matcher: IdMatcher | None = None
        self._guard_ids: frozenset[str] | None = None
        # The last revision's matcher: new IDs extend it instead of rebuilding it all.
        self._previous_matcher = previous._matcher if previous is not None else None

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
    def guard_ids(self) -> frozenset[str]:
        """The engine IDs a prompt must not contain: all of them, except an ID whose
        text is also an alias issued in this session (a game may add an entity with
        ID "npc_1" after that alias went to another entity; the alias text then
        appears legitimately, and reverse mapping goes through the alias table)."""
        if self._guard_ids is None:
            self._guard_ids = self.engine_ids.difference(self.session.aliases.by_alias)
        return self._guard_ids


def _all_ids(session: Session, idx: SessionIndex) -> set[str]:
    """Every engine ID the session holds anywhere (entities, references, cards).

    Entity-level references come from the tables just built (locations are
    containers, known_to lists are keys), so no second pass over the entities."""
    world = session.world
    ids: set[str] = set(world.entities)
    ids.update(session.aliases.by_id)  # removed entities keep their alias and stay secret
    ids.update(world.lore)
    ids.update(idx.by_location)
    ids.update(idx.known_to)
    for ev in world.events:
        ids.update(ev.entity_ids)
        ids.update(ev.visibility.known_to)
        if ev.actor_id:
            ids.add(ev.actor_id)
        if ev.location_id:
            ids.add(ev.location_id)
    for rel in world.relations:
        ids.add(rel.source_id)
        ids.add(rel.target_id)
        ids.update(rel.visibility.known_to)
    ids.update(world.moods)
    ids.update(world.personas)
    for card in world.lore.values():
        ids.update(card.visibility.known_to)
    ids.update(m.actor_id for m in world.memories if m.actor_id)
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
