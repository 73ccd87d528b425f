"""Checks a whole batch of ops against a world before anything is applied, so a
rejected batch changes nothing and `engine.apply_ops` never fails halfway.

The check simulates what the batch does to entity existence, field counts and
collection sizes (an overlay), so an op may refer to an entity an earlier op of
the same batch created, and not to one it removed. Every error names the op
index; limit errors carry metadata "limit" with the StateLimits field name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sidecar.config import StateLimits
from sidecar.errors import LimitExceeded
from sidecar.state import ops as o
from sidecar.state.checker import KINDS, Checker
from sidecar.state.model import World

__all__ = ["validate_batch"]


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
    check = Checker(world, limits, fresh_ids)
    check.history_refs = history_refs
    for index, op in enumerate(ops):
        check.index = index
        handler = _HANDLERS.get(type(op))
        if handler is None:
            check.fail(f"unknown op type {type(op).__name__}")
        handler(check, op)


# -- one handler per op type -------------------------------------------------


def _upsert(c: Checker, op: o.UpsertEntity) -> None:
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


def _patch(c: Checker, op: o.PatchEntity) -> None:
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


def _remove(c: Checker, op: o.RemoveEntity) -> None:
    c.ref(op.id, "remove.id")
    c.exists[op.id] = False
    c.entity_count -= 1
    c.fields.pop(op.id, None)
    c.upserted.discard(op.id)


def _event(c: Checker, op: o.RecordEvent) -> None:
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


def _relation(c: Checker, op: o.SetRelation) -> None:
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


def _mood(c: Checker, op: o.SetMood) -> None:
    c.ref(op.actor_id, "mood.actor_id")
    for axis in ("pleasure", "arousal", "dominance"):
        v = getattr(op.pad, axis)
        c.number(v, f"mood.pad.{axis}")
        if not -1.0 <= v <= 1.0:
            c.fail(f"mood.pad.{axis} = {v} is outside [-1, 1]")


def _scene(c: Checker, op: o.SetSceneFact) -> None:
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


def _lore(c: Checker, op: o.UpsertLoreCard) -> None:
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


def _unlore(c: Checker, op: o.RemoveLoreCard) -> None:
    c.ident(op.id, "remove_lore_card.id")
    if c.lore is None:
        c.lore = set(c.world.lore)
    c.lore.discard(op.id)


def _memory(c: Checker, op: o.RecordMemory) -> None:
    # "" is the narrator (docs/context.md, Memory bank).
    c.ref(op.memory.actor_id, "memory.actor_id", optional=True, history=True)
    if type(op.memory.text) is not str or not op.memory.text.strip():
        c.fail("memory.text is empty")
    c.text(op.memory.text, "memory.text")


def _story(c: Checker, op: o.SetStory) -> None:
    for part in ("plot_essentials", "author_note", "story_summary", "instructions"):
        v = getattr(op, part)
        if v is not None:
            c.text(v, f"story.{part}")


def _persona(c: Checker, op: o.SetPersona) -> None:
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


_HANDLERS: dict[type, Callable[[Checker, Any], None]] = {
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
