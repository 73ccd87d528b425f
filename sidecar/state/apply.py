"""Applies a validated batch of ops to a session, in place. Pure domain code.

`apply_ops` is only ever called with a batch `validate.validate_batch`
accepted against the same world, so it cannot fail halfway; the journal
replays batches through the same function, which makes recovery exact
(aliases included, since they are assigned here in op order).

Removal cascades run once at the end of the batch, for the entities the batch
removed that do not exist at its end (docs/protocol.md §5, "Removing an entity").
"""

from __future__ import annotations

from collections.abc import Sequence

from sidecar.config import StateLimits
from sidecar.state import ops as o
from sidecar.state.aliases import assign_alias
from sidecar.state.model import Entity, EntityRef, Session, Value, World

__all__ = ["apply_ops", "drop_references", "remember_delta"]


def apply_ops(session: Session, ops: Sequence[o.Op], revision: int, limits: StateLimits) -> None:
    """Apply `ops` (already validated) and set the session's revision."""
    world = session.world
    removed: set[str] = set()
    for op in ops:
        # Class patterns narrow `op` for the type checker. validate_batch dispatches on the
        # exact type, so only the op classes themselves (no subclasses) get here.
        match op:
            case o.PatchEntity():
                _patch(world.entities[op.id], op)
            case o.UpsertEntity(entity=entity):
                world.entities[entity.id] = entity
                assign_alias(session.aliases, entity, session.options.alias_mode)
            case o.RemoveEntity():
                del world.entities[op.id]
                removed.add(op.id)
            case o.RecordEvent(event=ev):
                ev.revision = revision
                world.events.append(ev)
                if len(world.events) > limits.max_events:
                    del world.events[: len(world.events) - limits.max_events]
            case o.SetRelation():
                _relation(world, op)
            case o.SetMood():
                world.moods[op.actor_id] = op.pad
            case o.SetSceneFact():
                if op.remove:
                    world.scene.pop(op.key, None)
                else:
                    assert op.value is not None  # validate_batch: a fact that is not removed has a value
                    world.scene[op.key] = op.value
            case o.UpsertLoreCard():
                world.lore[op.card.id] = op.card
            case o.RemoveLoreCard():
                world.lore.pop(op.id, None)
            case o.RecordMemory(memory=mem):
                mem.revision = revision
                world.memories.append(mem)
                if len(world.memories) > limits.max_memories:
                    del world.memories[: len(world.memories) - limits.max_memories]
            case o.SetStory():
                for part in ("plot_essentials", "author_note", "story_summary", "instructions"):
                    v = getattr(op, part)
                    if v is not None:
                        setattr(world.story, part, v)
            case o.SetPersona():
                world.personas[op.persona.actor_id] = op.persona
            case _:  # validate_batch rejects these; reaching here is a bug
                raise TypeError(f"unknown op {type(op).__name__}")
    gone = {i for i in removed if i not in world.entities}
    if gone:
        drop_references(world, gone)
    session.revision = revision


def _patch(e: Entity, op: o.PatchEntity) -> None:
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


def _relation(world: World, op: o.SetRelation) -> None:
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


def drop_references(world: World, gone: set[str]) -> None:
    """Forget what describes the present of entities that no longer exist.

    Fields and scene facts whose value is a reference to one are unset; list
    items that reference one are dropped from their list; entities located in
    one are moved nowhere; its relations, mood and persona go. History
    (events, memories) keeps naming it.
    """
    for e in world.entities.values():
        if e.location_id in gone:
            e.location_id = ""
        doomed = None
        for name, f in e.fields.items():
            v = f.value
            if type(v) is EntityRef:
                if v.id in gone:
                    doomed = (doomed or []) + [name]
            elif type(v) is list:
                f.value = _strip(v, gone)
        for name in doomed or ():
            del e.fields[name]
    for key in [k for k, v in world.scene.items() if type(v) is EntityRef and v.id in gone]:
        del world.scene[key]
    for key, v in world.scene.items():
        if type(v) is list:
            world.scene[key] = _strip(v, gone)
    world.relations[:] = [r for r in world.relations if r.source_id not in gone and r.target_id not in gone]
    for i in gone:
        world.moods.pop(i, None)
        world.personas.pop(i, None)


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


def remember_delta(session: Session, delta_id: str, revision: int, window: int) -> None:
    """Record a delta ID for idempotent replays, forgetting the oldest past `window`."""
    recent = session.recent_deltas
    recent[delta_id] = revision
    while len(recent) > window:
        del recent[next(iter(recent))]
