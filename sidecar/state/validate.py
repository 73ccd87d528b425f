"""Checks a whole batch of ops against a world before anything is applied, so a
rejected batch changes nothing and `engine.apply_ops` never fails halfway.

The check simulates what the batch does to entity existence, field counts and
collection sizes (an overlay), so an op may refer to an entity an earlier op of
the same batch created, and not to one it removed. Every error names the op
index; limit errors carry metadata "limit" with the StateLimits field name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn

from sidecar.config import StateLimits
from sidecar.errors import CapacityExceeded, InvalidDelta, LimitExceeded, UnknownEntity
from sidecar.state import ops as o
from sidecar.state.model import EntityRef, Field, Moment, PersonaTemplate, Vec3, Visibility, World

__all__ = ["validate_batch", "KINDS", "LEVELS"]

KINDS = frozenset({"character", "location", "item", "faction", "player", "other"})
LEVELS = frozenset({"public", "known_to", "private", "hidden"})
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def validate_batch(
    world: World,
    ops: Sequence[o.Op],
    limits: StateLimits,
    *,
    fresh_ids: Iterable[str] = (),
    history_refs: bool = True,
) -> None:
    """Raise InvalidDelta / UnknownEntity / LimitExceeded / CapacityExceeded, or return.

    `fresh_ids`: entity IDs treated as existing from the start (a snapshot's
    own entities, so they may refer to each other in any order).
    `history_refs=False`: events and memories may name entities that are gone
    (a snapshot or save keeps history about removed entities).
    """
    if len(ops) > limits.max_ops_per_batch:
        raise LimitExceeded(
            f"batch has {len(ops)} ops, over max_ops_per_batch={limits.max_ops_per_batch}",
            metadata={"limit": "max_ops_per_batch"},
        )
    check = _Check(world, limits, fresh_ids)
    check.history_refs = history_refs
    for index, op in enumerate(ops):
        check.index = index
        handler = _HANDLERS.get(type(op))
        if handler is None:
            check.fail(f"unknown op type {type(op).__name__}")
        handler(check, op)


class _Check:
    def __init__(self, world: World, limits: StateLimits, fresh_ids: Iterable[str]) -> None:
        self.world = world
        self.lim = limits
        self.index = 0
        self.history_refs = True
        #: Entity ID -> exists after the ops so far (only IDs the batch touched).
        self.exists: dict[str, bool] = dict.fromkeys(fresh_ids, True)
        self.entity_count = len(world.entities) + sum(1 for i in self.exists if i not in world.entities)
        #: Entity ID -> its field names after the ops so far (touched entities only).
        self.fields: dict[str, set[str]] = {}
        self.upserted: set[str] = set()
        self.relations: set[tuple[str, str, str]] | None = None
        self.lore: set[str] | None = None
        self.scene: set[str] | None = None
        self.personas: set[str] | None = None

    # -- errors --------------------------------------------------------------
    def fail(self, msg: str) -> NoReturn:
        raise InvalidDelta(f"op {self.index}: {msg}", metadata={"op_index": str(self.index)})

    def over(self, limit: str, msg: str, capacity: bool = False) -> NoReturn:
        cls = CapacityExceeded if capacity else LimitExceeded
        value = getattr(self.lim, limit)
        raise cls(
            f"op {self.index}: {msg}, over {limit}={value}", metadata={"limit": limit, "op_index": str(self.index)}
        )

    # -- scalars -------------------------------------------------------------
    def ident(self, value: object, what: str) -> None:
        if type(value) is not str or not value:
            self.fail(f"{what} is empty")
        elif len(value) > self.lim.max_id_length:
            self.over("max_id_length", f"{what} has {len(value)} characters")
        elif not value.isascii():
            self.utf8(value, what)

    def text(self, value: object, what: str) -> None:
        if type(value) is not str:
            self.fail(f"{what} is not a string")
        elif len(value) > self.lim.max_string_length:
            self.over("max_string_length", f"{what} has {len(value)} characters")
        elif not value.isascii():
            self.utf8(value, what)

    def utf8(self, value: str, what: str) -> None:
        # Protobuf refuses invalid UTF-8 on parse; this keeps lone surrogates that
        # reach the domain some other way out of the state (and the journal).
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(f"{what} is not valid UTF-8 (lone surrogate)")

    def texts(self, values: object, what: str) -> None:
        if not isinstance(values, (list, tuple)):
            self.fail(f"{what} is not a list")
            return
        if len(values) > self.lim.max_list_length:
            self.over("max_list_length", f"{what} has {len(values)} items")
        for v in values:
            self.text(v, what)

    def number(self, value: object, what: str) -> None:
        if type(value) not in (float, int) or not math.isfinite(value):  # type: ignore[arg-type]
            self.fail(f"{what} must be a finite number")

    def exists_id(self, entity_id: str) -> bool:
        known = self.exists.get(entity_id)
        return (entity_id in self.world.entities) if known is None else known

    def ref(self, entity_id: object, what: str, *, optional: bool = False, history: bool = False) -> None:
        if optional and entity_id == "":
            return
        self.ident(entity_id, what)
        if history and not self.history_refs:
            return
        if not self.exists_id(entity_id):  # type: ignore[arg-type]
            raise UnknownEntity(
                f"op {self.index}: {what} {entity_id!r} is not an entity of the session",
                metadata={"op_index": str(self.index), "entity_id": str(entity_id)},
            )

    def visibility(self, vis: object, what: str) -> None:
        if type(vis) is not Visibility:
            self.fail(f"{what} is not a Visibility")
            return
        if vis.level not in LEVELS:
            self.fail(f"{what}.level {vis.level!r} is not one of {sorted(LEVELS)}")
        known = vis.known_to
        if len(known) > self.lim.max_list_length:
            self.over("max_list_length", f"{what}.known_to has {len(known)} items")
        for actor in known:
            self.ident(actor, f"{what}.known_to")

    def value(self, v: object, what: str, depth: int = 0) -> None:
        t = type(v)
        if t is str:
            if len(v) > self.lim.max_string_length:  # type: ignore[arg-type]
                self.over("max_string_length", f"{what} has {len(v)} characters")  # type: ignore[arg-type]
            if not v.isascii():  # type: ignore[attr-defined]
                self.utf8(v, what)  # type: ignore[arg-type]
        elif t is float:
            if not math.isfinite(v):  # type: ignore[arg-type]
                self.fail(f"{what} is not a finite number")
        elif t is int:
            if not _INT64_MIN <= v <= _INT64_MAX:  # type: ignore[operator]
                self.fail(f"{what} does not fit in 64 bits")
        elif t is bool:
            pass
        elif t is Vec3:
            x, y, z = v.x, v.y, v.z  # type: ignore[attr-defined]
            # Floats only: the journal and saves would turn ints into floats on the way back.
            if not (type(x) is float and type(y) is float and type(z) is float) or not (
                math.isfinite(x) and math.isfinite(y) and math.isfinite(z)
            ):
                self.fail(f"{what} is not a vector of finite floats")
        elif t is EntityRef:
            self.ref(v.id, f"{what} reference")  # type: ignore[attr-defined]
        elif t is list:
            if depth + 1 > self.lim.max_value_depth:
                self.over("max_value_depth", f"{what} nests lists {depth + 1} deep")
            if len(v) > self.lim.max_list_length:  # type: ignore[arg-type]
                self.over("max_list_length", f"{what} has {len(v)} items")  # type: ignore[arg-type]
            for item in v:  # type: ignore[attr-defined]
                self.value(item, what, depth + 1)
        else:
            self.fail(f"{what} has no value (set one of the Value kinds)")

    def field_map(self, fields: dict[str, Field], what: str) -> None:
        max_id = self.lim.max_id_length
        for name, f in fields.items():
            if not name or len(name) > max_id or not name.isascii():
                self.ident(name, f"{what} name")
            if type(f) is not Field:
                self.fail(f"{what} {name!r} is not a Field")
            self.value(f.value, f"{what} {name!r}")
            if f.visibility is not None:
                self.visibility(f.visibility, f"{what} {name!r} visibility")

    def field_count(self, entity_id: str, names: set[str]) -> None:
        if len(names) > self.lim.max_fields_per_entity:
            self.over("max_fields_per_entity", f"entity {entity_id!r} would have {len(names)} fields")
        self.fields[entity_id] = names

    def moment(self, m: Moment | None) -> None:
        if m is None:
            return
        self.text(m.timeline, "moment.timeline")
        self.text(m.calendar, "moment.calendar")
        if type(m.tick) is not int or not _INT64_MIN <= m.tick <= _INT64_MAX:
            self.fail("moment.tick does not fit in 64 bits")

    def template(self, t: PersonaTemplate) -> None:
        self.text(t.identity, "template.identity")
        self.text(t.reminder, "template.reminder")
        self.texts(t.inviolable_rules, "template.inviolable_rules")
        self.texts(list(t.mood_modifiers) + list(t.mood_modifiers.values()), "template.mood_modifiers")
        for hp in t.hp_descriptions:
            self.number(hp.max_fraction, "template.hp_descriptions.max_fraction")
            self.text(hp.text, "template.hp_descriptions.text")
        for sm in t.situational_modifiers:
            self.text(sm.condition, "template.situational_modifiers.condition")
            self.text(sm.text, "template.situational_modifiers.text")


# -- one handler per op type -------------------------------------------------


def _upsert(c: _Check, op: o.UpsertEntity) -> None:
    e = op.entity
    c.ident(e.id, "entity.id")
    if e.id in c.upserted:
        c.fail(f"entity {e.id!r} is upserted twice in one batch")
    if e.kind not in KINDS:
        c.fail(f"entity.kind {e.kind!r} is not one of {sorted(KINDS)}")
    c.text(e.name, "entity.name")
    c.text(e.description, "entity.description")
    c.texts(e.tags, "entity.tags")
    c.visibility(e.visibility, "entity.visibility")
    if len(e.fields) > c.lim.max_fields_per_entity:
        c.over("max_fields_per_entity", f"entity {e.id!r} has {len(e.fields)} fields")
    if not c.exists_id(e.id):
        if c.entity_count + 1 > c.lim.max_entities:
            c.over("max_entities", "the session is full", capacity=True)
        c.entity_count += 1
    c.exists[e.id] = True  # before the references: an entity may refer to itself
    c.upserted.add(e.id)
    c.field_map(e.fields, "field")
    if e.location_id == e.id:
        c.fail(f"entity {e.id!r} cannot be located in itself")
    c.ref(e.location_id, "entity.location_id", optional=True)
    c.fields[e.id] = set(e.fields)


def _patch(c: _Check, op: o.PatchEntity) -> None:
    c.ref(op.id, "patch.id")
    both = set(op.set_fields).intersection(op.unset_fields)
    if both:
        c.fail(f"field {sorted(both)[0]!r} is both set and unset")
    c.field_map(op.set_fields, "field")
    for name in op.unset_fields:
        c.ident(name, "unset field name")
    names = c.fields.get(op.id)
    if names is None:
        names = set(c.world.entities[op.id].fields) if op.id in c.world.entities else set()
    else:
        names = set(names)
    names.update(op.set_fields)
    names.difference_update(op.unset_fields)
    c.field_count(op.id, names)
    if op.name is not None:
        c.text(op.name, "patch.name")
    if op.description is not None:
        c.text(op.description, "patch.description")
    if op.tags is not None:
        c.texts(op.tags, "patch.tags")
    if op.location_id is not None:
        if op.location_id == op.id:
            c.fail(f"entity {op.id!r} cannot be located in itself")
        c.ref(op.location_id, "patch.location_id", optional=True)
    if op.visibility is not None:
        c.visibility(op.visibility, "patch.visibility")


def _remove(c: _Check, op: o.RemoveEntity) -> None:
    c.ref(op.id, "remove.id")
    c.exists[op.id] = False
    c.entity_count -= 1
    c.fields.pop(op.id, None)
    c.upserted.discard(op.id)


def _event(c: _Check, op: o.RecordEvent) -> None:
    ev = op.event
    if type(ev.text) is not str or not ev.text.strip():
        c.fail("event.text is empty: say what happened")
    c.text(ev.text, "event.text")
    if len(ev.entity_ids) > c.lim.max_list_length:
        c.over("max_list_length", f"event.entity_ids has {len(ev.entity_ids)} items")
    for eid in ev.entity_ids:
        c.ref(eid, "event.entity_ids", history=True)
    c.ref(ev.actor_id, "event.actor_id", optional=True, history=True)
    c.ref(ev.location_id, "event.location_id", optional=True, history=True)
    c.visibility(ev.visibility, "event.visibility")
    c.moment(ev.moment)


def _relation(c: _Check, op: o.SetRelation) -> None:
    r = op.relation
    c.ident(r.kind, "relation.kind")
    if c.relations is None:
        c.relations = {(x.source_id, x.target_id, x.kind) for x in c.world.relations}
    key = (r.source_id, r.target_id, r.kind)
    if op.remove:
        c.ident(r.source_id, "relation.source_id")
        c.ident(r.target_id, "relation.target_id")
        c.relations.discard(key)
        return
    c.ref(r.source_id, "relation.source_id")
    c.ref(r.target_id, "relation.target_id")
    c.number(r.strength, "relation.strength")
    c.visibility(r.visibility, "relation.visibility")
    c.relations.add(key)
    if len(c.relations) > c.lim.max_relations:
        c.over("max_relations", "too many relations", capacity=True)


def _mood(c: _Check, op: o.SetMood) -> None:
    c.ref(op.actor_id, "mood.actor_id")
    for axis in ("pleasure", "arousal", "dominance"):
        v = getattr(op.pad, axis)
        c.number(v, f"mood.pad.{axis}")
        if not -1.0 <= v <= 1.0:
            c.fail(f"mood.pad.{axis} = {v} is outside [-1, 1]")


def _scene(c: _Check, op: o.SetSceneFact) -> None:
    c.ident(op.key, "scene_fact.key")
    if c.scene is None:
        c.scene = set(c.world.scene)
    if op.remove:
        c.scene.discard(op.key)
        return
    c.value(op.value, f"scene_fact {op.key!r}")
    c.scene.add(op.key)
    if len(c.scene) > c.lim.max_scene_facts:
        c.over("max_scene_facts", "too many scene facts", capacity=True)


def _lore(c: _Check, op: o.UpsertLoreCard) -> None:
    card = op.card
    c.ident(card.id, "lore_card.id")
    c.text(card.title, "lore_card.title")
    c.text(card.text, "lore_card.text")
    c.texts(card.triggers, "lore_card.triggers")
    c.visibility(card.visibility, "lore_card.visibility")
    if c.lore is None:
        c.lore = set(c.world.lore)
    c.lore.add(card.id)
    if len(c.lore) > c.lim.max_lore_cards:
        c.over("max_lore_cards", "too many lore cards", capacity=True)


def _unlore(c: _Check, op: o.RemoveLoreCard) -> None:
    c.ident(op.id, "remove_lore_card.id")
    if c.lore is None:
        c.lore = set(c.world.lore)
    c.lore.discard(op.id)


def _memory(c: _Check, op: o.RecordMemory) -> None:
    c.ref(op.memory.actor_id, "memory.actor_id", history=True)
    if type(op.memory.text) is not str or not op.memory.text.strip():
        c.fail("memory.text is empty")
    c.text(op.memory.text, "memory.text")


def _story(c: _Check, op: o.SetStory) -> None:
    for part in ("plot_essentials", "author_note", "story_summary", "instructions"):
        v = getattr(op, part)
        if v is not None:
            c.text(v, f"story.{part}")


def _persona(c: _Check, op: o.SetPersona) -> None:
    p = op.persona
    c.ref(p.actor_id, "persona.actor_id")
    if (p.template_name is None) == (p.inline is None):
        c.fail("persona needs exactly one of template_name and inline_template")
    if p.template_name is not None:
        c.ident(p.template_name, "persona.template_name")
    if p.inline is not None:
        c.template(p.inline)
    c.texts(list(p.slots) + list(p.slots.values()), "persona.slots")
    if c.personas is None:
        c.personas = set(c.world.personas)
    c.personas.add(p.actor_id)
    if len(c.personas) > c.lim.max_personas:
        c.over("max_personas", "too many personas", capacity=True)


_HANDLERS: dict[type, Callable[[_Check, Any], None]] = {
    o.UpsertEntity: _upsert,
    o.PatchEntity: _patch,
    o.RemoveEntity: _remove,
    o.RecordEvent: _event,
    o.SetRelation: _relation,
    o.SetMood: _mood,
    o.SetSceneFact: _scene,
    o.UpsertLoreCard: _lore,
    o.RemoveLoreCard: _unlore,
    o.RecordMemory: _memory,
    o.SetStory: _story,
    o.SetPersona: _persona,
}
