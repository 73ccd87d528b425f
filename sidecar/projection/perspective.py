"""What one actor may perceive of a session: the perspective rules, without the
text. `Projection` (sidecar/projection/projection.py) is this plus how what is
perceived reads for a model (aliases, generic words, coordinates left out) and
the way back from aliases; kept apart so the rules of who sees what sit in one
place, apart from rendering.

Perspective rules (docs/privacy.md has the full table):

- hidden: in no prompt, ever; a hidden entity cannot be a run's actor either
  (InvalidRequest), and its hidden fields stay out of its own prompt.
- private: only the entity itself (for events: their actor; for lore: nobody).
- known_to: the listed actors (and the entity itself).
- public: whoever can perceive it: the actor's own entity, its location and the
  locations containing that, what shares its location, what it carries (location
  is the actor), what has no location at all, and what the run's input names.
  The narrator (actor "") has no location: its scene is what the input names and
  the locations those are in.
- An input-named entity is perceivable unless hidden or private; naming does not
  open its hidden or private fields.
- Field-level visibility narrows the entity's; `None` inherits it.
"""

from __future__ import annotations

from collections.abc import Iterable

from sidecar.errors import InvalidRequest, UnknownEntity
from sidecar.projection.session_index import SessionIndex, index_for
from sidecar.state.model import Entity, Event, LoreCard, Relation, Session, Visibility

__all__ = ["Perspective"]

#: How far up the containment chain an actor knows where it is (room, building, town...).
_MAX_CHAIN = 8


class Perspective:
    """What `actor_id` ("" = the narrator) may perceive of `session`.

    `named_ids`: engine IDs the run's input names (focus entities, event
    participants, the describe target, option targets); they become perceivable
    (see the module docstring). Raises UnknownEntity for an actor or a named ID
    the session does not hold, InvalidRequest for a hidden actor.
    """

    def __init__(self, session: Session, actor_id: str, *, named_ids: Iterable[str] = ()) -> None:
        self.session = session
        self.actor_id = actor_id
        entities = session.world.entities
        self._entities = entities
        self._idx: SessionIndex = index_for(session)
        self._actor: Entity | None = None
        if actor_id:
            actor = entities.get(actor_id)
            if actor is None:
                raise UnknownEntity(f"actor {actor_id!r} is not in session {session.id!r}")
            if actor.visibility.level == "hidden":
                # Hidden reaches no prompt at all, so it cannot have a prompt of its own.
                raise InvalidRequest(f"actor {actor_id!r} is hidden: hidden entities reach no prompt")
            self._actor = actor
        self._named: frozenset[str] = frozenset(named_ids)
        for eid in self._named:
            if eid not in entities:
                raise UnknownEntity(f"entity {eid!r} is not in session {session.id!r}")
        # Containers whose direct contents are in reach, and the location chain(s) above.
        self._containers: set[str] = set()
        self._chain: list[str] = []
        if self._actor is not None:
            self._containers.add(self._actor.id)
            if self._actor.location_id:
                self._containers.add(self._actor.location_id)
                self._chain.extend(self._walk_up(self._actor.location_id))
        else:
            for eid in sorted(self._named):
                ent = entities[eid]
                if ent.location_id:
                    self._containers.add(ent.location_id)
                    self._chain.extend(self._walk_up(ent.location_id))
                if ent.kind == "location":
                    self._containers.add(eid)
        self._chain_set = set(self._chain)
        self._visible: list[Entity] | None = None

    # -- entities -------------------------------------------------------------

    def can_see(self, entity: Entity) -> bool:
        if self._entities.get(entity.id) is not entity:
            return False
        vis = entity.visibility
        if vis.level == "hidden":
            return False
        if entity.id == self.actor_id:
            return True
        if vis.level == "private":
            return False
        if entity.id in self._named:
            return True
        if vis.level == "known_to":
            return bool(self.actor_id) and self.actor_id in vis.known_to
        return not entity.location_id or entity.location_id in self._containers or entity.id in self._chain_set

    def visible_entities(self) -> list[Entity]:
        """What the actor perceives, in a stable order: itself, where it is, what is
        around it, what it carries, known things, named things, location-less things."""
        if self._visible is None:
            seen: set[str] = set()
            out: list[Entity] = []
            idx = self._idx
            groups: list[Iterable[str]] = [[self.actor_id] if self.actor_id else [], self._chain]
            groups.extend(idx.by_location.get(c, ()) for c in sorted(self._containers))
            groups.append(idx.known_to.get(self.actor_id, ()) if self.actor_id else ())
            groups.append(sorted(self._named))
            groups.append(idx.nowhere)
            for group in groups:
                for eid in group:
                    if eid in seen:
                        continue
                    seen.add(eid)
                    ent = self._entities.get(eid)
                    if ent is not None and self.can_see(ent):
                        out.append(ent)
            self._visible = out
        return list(self._visible)

    def _field_visible(self, entity: Entity, vis: Visibility) -> bool:
        if vis.level == "hidden":
            return False
        if entity.id == self.actor_id:
            return True
        if vis.level == "private":
            return False
        if vis.level == "known_to":
            return bool(self.actor_id) and self.actor_id in vis.known_to
        return True

    # -- events, relations, lore --------------------------------------------------

    def can_see_event(self, event: Event) -> bool:
        vis = event.visibility
        if vis.level == "hidden":
            return False
        me = self.actor_id
        involved = bool(me) and (me == event.actor_id or me in event.entity_ids)
        if vis.level == "private":
            return bool(me) and me == event.actor_id
        if vis.level == "known_to":
            return bool(me) and (me == event.actor_id or me in vis.known_to)
        if involved:
            return True
        if event.location_id:
            return event.location_id in self._containers or event.location_id in self._chain_set
        if any(e in self._named for e in event.entity_ids) or event.actor_id in self._named:
            return True
        # A public event with no place: visible when whoever it involves is visible.
        ids = [event.actor_id, *event.entity_ids] if event.actor_id else list(event.entity_ids)
        return all(self._visible_id(e) for e in ids)

    def can_see_relation(self, rel: Relation) -> bool:
        vis = rel.visibility
        if vis.level == "hidden":
            return False
        me = self.actor_id
        if vis.level == "private":
            return bool(me) and me == rel.source_id
        if vis.level == "known_to":
            return bool(me) and (me == rel.source_id or me in vis.known_to)
        return self._visible_id(rel.source_id) and self._visible_id(rel.target_id)

    def can_see_card(self, card: LoreCard) -> bool:
        vis = card.visibility
        if vis.level in ("hidden", "private"):
            return False
        if vis.level == "known_to":
            return bool(self.actor_id) and self.actor_id in vis.known_to
        return True

    def _visible_id(self, engine_id: str) -> bool:
        ent = self._entities.get(engine_id)
        return ent is not None and self.can_see(ent)

    def _walk_up(self, location_id: str) -> list[str]:
        chain: list[str] = []
        current = location_id
        while current and current not in chain and len(chain) < _MAX_CHAIN:
            chain.append(current)
            parent = self._entities.get(current)
            current = parent.location_id if parent is not None else ""
        return chain
