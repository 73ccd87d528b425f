"""Applies a validated batch of ops to a session, in place. Pure domain code.

`apply_ops` is only ever called with a batch `validate.validate_batch`
accepted against the same world, so it cannot fail halfway; the journal
replays batches through the same function, which makes recovery exact
(aliases included, since they are assigned here in op order).

Removal cascades run once at the end of the batch, for the entities the batch
removed that do not exist at its end (docs/protocol.md §5, "Removing an entity").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sidecar.config import StateLimits
from sidecar.state import ops as o
from sidecar.state.aliases import assign_alias
from sidecar.state.model import Entity, EntityRef, Session, Value, World

__all__ = ["apply_ops", "drop_references", "remember_delta"]

_T = TypeVar("_T")


def apply_ops(session: Session, ops: Sequence[o.Op], revision: int, limits: StateLimits) -> None:
    """Apply `ops` (already validated) and set the session's revision."""
    batch = _Batch(session, revision, limits)
    for op in ops:
        apply_one = _APPLY.get(type(op))
        if apply_one is None:  # validate_batch rejects these; reaching here is a bug
            raise TypeError(f"unknown op {type(op).__name__}")
        apply_one(batch, op)
    world = session.world
    gone = {i for i in batch.removed if i not in world.entities}
    if gone:
        drop_references(world, gone)
    session.revision = revision


@dataclass
class _Batch:
    """What every op of one batch applies against."""

    session: Session
    revision: int
    limits: StateLimits
    #: Entities removed by the batch (a later op of the same batch may re-add one).
    removed: set[str] = field(default_factory=set)

    @property
    def world(self) -> World:
        return self.session.world


def _upsert_entity(b: _Batch, op: o.UpsertEntity) -> None:
    b.world.entities[op.entity.id] = op.entity
    assign_alias(b.session.aliases, op.entity, b.session.options.alias_mode)


def _remove_entity(b: _Batch, op: o.RemoveEntity) -> None:
    del b.world.entities[op.id]
    b.removed.add(op.id)


def _record_event(b: _Batch, op: o.RecordEvent) -> None:
    op.event.revision = b.revision
    b.world.events_dropped += _append_capped(b.world.events, op.event, b.limits.max_events)


def _record_memory(b: _Batch, op: o.RecordMemory) -> None:
    op.memory.revision = b.revision
    _append_capped(b.world.memories, op.memory, b.limits.max_memories)


def _append_capped(items: list[_T], item: _T, cap: int) -> int:
    """Append, then forget the oldest past `cap` (history is a window, not an archive);
    returns how many were forgotten."""
    items.append(item)
    over = len(items) - cap
    if over > 0:
        del items[:over]
        return over
    return 0


def _set_scene_fact(b: _Batch, op: o.SetSceneFact) -> None:
    if op.remove:
        b.world.scene.pop(op.key, None)
    elif op.value is not None:
        b.world.scene[op.key] = op.value


def _set_story(b: _Batch, op: o.SetStory) -> None:
    story = b.world.story
    for part in ("plot_essentials", "author_note", "story_summary", "instructions"):
        v = getattr(op, part)
        if v is not None:
            setattr(story, part, v)


def _patch(b: _Batch, op: o.PatchEntity) -> None:
    e = b.world.entities[op.id]
    if op.set_fields:
        e.fields.update(op.set_fields)
    for name in op.unset_fields:
        e.fields.pop(name, None)
    if op.name is not None:
        e.name = op.name
    if op.description is not None:
        e.description = op.description
    if op.tags is not None:
        e.tags = op.tags
    if op.location_id is not None:
        e.location_id = op.location_id
    if op.visibility is not None:
        e.visibility = op.visibility


def _relation(b: _Batch, op: o.SetRelation) -> None:
    world = b.world
    r = op.relation
    for i, old in enumerate(world.relations):
        if old.source_id == r.source_id and old.target_id == r.target_id and old.kind == r.kind:
            if op.remove:
                del world.relations[i]
            else:
                world.relations[i] = r
            return
    if not op.remove:
        world.relations.append(r)


def _set_mood(b: _Batch, op: o.SetMood) -> None:
    b.world.moods[op.actor_id] = op.pad


def _upsert_lore_card(b: _Batch, op: o.UpsertLoreCard) -> None:
    b.world.lore[op.card.id] = op.card


def _remove_lore_card(b: _Batch, op: o.RemoveLoreCard) -> None:
    b.world.lore.pop(op.id, None)


def _set_persona(b: _Batch, op: o.SetPersona) -> None:
    b.world.personas[op.persona.actor_id] = op.persona


#: One handler per op type; `validate.validate_batch` accepts no other type.
_APPLY: dict[type, Callable[[_Batch, Any], None]] = {
    o.PatchEntity: _patch,
    o.UpsertEntity: _upsert_entity,
    o.RemoveEntity: _remove_entity,
    o.RecordEvent: _record_event,
    o.SetRelation: _relation,
    o.SetMood: _set_mood,
    o.SetSceneFact: _set_scene_fact,
    o.UpsertLoreCard: _upsert_lore_card,
    o.RemoveLoreCard: _remove_lore_card,
    o.RecordMemory: _record_memory,
    o.SetStory: _set_story,
    o.SetPersona: _set_persona,
}


def drop_references(world: World, gone: set[str]) -> None:
    """Forget what describes the present of entities that no longer exist.

    Fields and scene facts whose value is a reference to one are unset; list
    items that reference one are dropped from their list; entities located in
    one are moved nowhere; its relations, mood and persona go. History
    (events, memories) keeps naming it.
    """
    for e in world.entities.values():
        _drop_entity_references(e, gone)
    for key in [k for k, v in world.scene.items() if type(v) is EntityRef and v.id in gone]:
        del world.scene[key]
    for key, v in world.scene.items():
        if type(v) is list:
            world.scene[key] = _strip(v, gone)
    world.relations[:] = [r for r in world.relations if r.source_id not in gone and r.target_id not in gone]
    for i in gone:
        world.moods.pop(i, None)
        world.personas.pop(i, None)


def _drop_entity_references(e: Entity, gone: set[str]) -> None:
    if e.location_id in gone:
        e.location_id = ""
    doomed = []
    for name, f in e.fields.items():
        v = f.value
        if type(v) is EntityRef:
            if v.id in gone:
                doomed.append(name)
        elif type(v) is list:
            f.value = _strip(v, gone)
    for name in doomed:
        del e.fields[name]


def _strip(values: list[Value], gone: set[str]) -> list[Value]:
    out: list[Value] = []
    for v in values:
        if type(v) is EntityRef:
            if v.id in gone:
                continue
        elif type(v) is list:
            v = _strip(v, gone)
        out.append(v)
    return out


def remember_delta(session: Session, delta_id: str, revision: int, window: int, digest: bytes) -> None:
    """Record a delta ID (and its batch's digest, b"" = none) for idempotent
    replays, forgetting the oldest past `window`."""
    recent = session.recent_deltas
    digests = session.delta_digests
    recent[delta_id] = revision
    if digest:
        digests[delta_id] = digest
    while len(recent) > window:
        oldest = next(iter(recent))
        del recent[oldest]
        digests.pop(oldest, None)
