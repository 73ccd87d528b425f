"""Proto -> domain for session state: DeltaOp -> ops.Op, Snapshot -> model.World.

Only structure is checked here (a oneof is set, an enum value is known, a
snapshot names nothing twice); limits and references are the state engine's
job (`sidecar.state.validate`), so the rules hold whatever the source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from sidecar.errors import InvalidDelta, InvalidRequest, LimitExceeded
from sidecar.servicers.convert_enums import KIND_FROM, LEVEL_FROM
from sidecar.state import model as m
from sidecar.state import ops as o
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

__all__ = ["ops_from_pb", "world_from_pb", "OP_CONVERTERS"]

#: Far above any configured max_value_depth: only guards the recursion itself.
_HARD_DEPTH = 64


class _Bad(Exception):
    """Structural problem; wrapped with the op index by the caller."""


def _kind(v: int) -> m.Kind:
    try:
        return KIND_FROM[v]
    except KeyError:
        raise _Bad(f"entity kind {v} is not an EntityKind value") from None


def _vis(v: tpb.Visibility) -> m.Visibility:
    try:
        level = LEVEL_FROM[v.level]
    except KeyError:
        raise _Bad(f"visibility level {v.level} is not a VisibilityLevel value") from None
    if level == "public" and not v.known_to:
        return m.PUBLIC
    return m.Visibility(level=level, known_to=tuple(v.known_to))


def _value(v: tpb.Value, depth: int = 0) -> m.Value:
    which = v.WhichOneof("kind")
    if which == "string_value":
        return v.string_value
    if which == "double_value":
        return v.double_value
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "vector_value":
        return m.Vec3(v.vector_value.x, v.vector_value.y, v.vector_value.z)
    if which == "entity_ref":
        return m.EntityRef(v.entity_ref)
    if which == "list_value":
        if depth >= _HARD_DEPTH:
            raise LimitExceeded("a list value nests too deep", metadata={"limit": "max_value_depth"})
        return [_value(item, depth + 1) for item in v.list_value.values]
    raise _Bad("a value has no kind set (set one of the Value kinds)")


def _field(f: tpb.FieldValue) -> m.Field:
    # An absent `value` reads as an empty Value, which _value refuses (no kind set).
    return m.Field(_value(f.value), _vis(f.visibility) if f.HasField("visibility") else None)


def _fields(fields: Mapping[str, tpb.FieldValue]) -> dict[str, m.Field]:
    # Key iteration plus lookup is about a third faster than .items() on upb maps.
    return {k: _field(fields[k]) for k in fields}


def _entity(e: pb.Entity) -> m.Entity:
    return m.Entity(
        id=e.id,
        kind=_kind(e.kind),
        name=e.name,
        description=e.description,
        tags=list(e.tags),
        fields=_fields(e.fields),
        location_id=e.location_id,
        visibility=_vis(e.visibility),
    )


def _event(e: pb.GameEvent) -> m.Event:
    moment = None
    if e.HasField("moment"):
        moment = m.Moment(e.moment.timeline, e.moment.tick, e.moment.calendar)
    return m.Event(
        text=e.text,
        entity_ids=list(e.entity_ids),
        actor_id=e.actor_id,
        moment=moment,
        visibility=_vis(e.visibility),
        location_id=e.location_id,
        revision=e.revision,
    )


def _relation(r: pb.Relation) -> m.Relation:
    return m.Relation(r.source_id, r.target_id, r.kind, r.strength, _vis(r.visibility))


def _pad(p: tpb.Pad) -> m.Pad:
    return m.Pad(p.pleasure, p.arousal, p.dominance)


def _lore(c: pb.LoreCard) -> m.LoreCard:
    return m.LoreCard(c.id, c.title, c.text, list(c.triggers), _vis(c.visibility))


def _template(t: pb.PersonaTemplate) -> m.PersonaTemplate:
    return m.PersonaTemplate(
        identity=t.identity,
        inviolable_rules=list(t.inviolable_rules),
        mood_modifiers=dict(t.mood_modifiers),
        hp_descriptions=[m.HpDescription(h.max_fraction, h.text) for h in t.hp_descriptions],
        situational_modifiers=[m.SituationalModifier(s.condition, s.text) for s in t.situational_modifiers],
        reminder=t.reminder,
    )


def _persona(p: pb.PersonaBinding) -> m.PersonaBinding:
    which = p.WhichOneof("source")
    if which is None:
        raise _Bad("persona needs template_name or inline_template")
    return m.PersonaBinding(
        actor_id=p.actor_id,
        template_name=p.template_name if which == "template_name" else None,
        inline=_template(p.inline_template) if which == "inline_template" else None,
        slots=dict(p.slots),
    )


class _Message(Protocol):
    def HasField(self, field_name: str, /) -> bool: ...


def _opt(msg: _Message, name: str) -> str | None:
    value: str | None = getattr(msg, name) if msg.HasField(name) else None
    return value


def _need(op: Any, op_name: str, field: str) -> Any:
    """`op.<field>`, which the op cannot do without (proto3 would hand over an empty one)."""
    if not op.HasField(field):
        raise _Bad(f"{op_name} has no {field}")
    return getattr(op, field)


def _patch_entity(p: pb.PatchEntityOp) -> o.PatchEntity:
    return o.PatchEntity(
        id=p.id,
        set_fields=_fields(p.set_fields),
        unset_fields=list(p.unset_fields),
        name=_opt(p, "name"),
        description=_opt(p, "description"),
        tags=list(p.tags) if p.has_tags else None,
        location_id=_opt(p, "location_id"),
        visibility=_vis(p.visibility) if p.HasField("visibility") else None,
    )


def _scene_fact(f: pb.SetSceneFactOp) -> o.SetSceneFact:
    if f.remove:
        return o.SetSceneFact(f.key, None, True)
    if not f.HasField("value"):
        raise _Bad("set_scene_fact has no value (set remove to delete the fact)")
    return o.SetSceneFact(f.key, _value(f.value))


def _memory(x: pb.RecordMemoryOp) -> o.RecordMemory:
    mem = _need(x, "record_memory", "memory")
    return o.RecordMemory(m.Memory(mem.actor_id, mem.text))


_STORY = ("plot_essentials", "author_note", "story_summary", "instructions")

#: DeltaOp's `op` oneof: field name -> its conversion (tests/wire/test_enum_tables.py
#: checks that every field of the oneof has one).
OP_CONVERTERS: dict[str, Callable[[Any], o.Op]] = {
    "patch_entity": _patch_entity,
    "upsert_entity": lambda x: o.UpsertEntity(_entity(_need(x, "upsert_entity", "entity"))),
    "remove_entity": lambda x: o.RemoveEntity(x.id),
    "record_event": lambda x: o.RecordEvent(_event(_need(x, "record_event", "event"))),
    "set_relation": lambda x: o.SetRelation(_relation(_need(x, "set_relation", "relation")), x.remove),
    "set_mood": lambda x: o.SetMood(x.actor_id, _pad(_need(x, "set_mood", "pad"))),
    "set_scene_fact": _scene_fact,
    "upsert_lore_card": lambda x: o.UpsertLoreCard(_lore(_need(x, "upsert_lore_card", "card"))),
    "remove_lore_card": lambda x: o.RemoveLoreCard(x.id),
    "record_memory": _memory,
    "set_story": lambda x: o.SetStory(*(_opt(x, n) for n in _STORY)),
    "set_persona": lambda x: o.SetPersona(_persona(_need(x, "set_persona", "persona"))),
}


def _op(d: pb.DeltaOp) -> o.Op:
    which = d.WhichOneof("op")
    if which is None:
        raise _Bad("no operation set in the DeltaOp oneof")
    return OP_CONVERTERS[which](getattr(d, which))


def ops_from_pb(ops: Iterable[pb.DeltaOp]) -> list[o.Op]:
    out: list[o.Op] = []
    for index, d in enumerate(ops):
        try:
            out.append(_op(d))
        except _Bad as exc:
            raise InvalidDelta(f"op {index}: {exc}", metadata={"op_index": str(index)}) from None
    return out


def world_from_pb(s: pb.Snapshot) -> m.World:
    """A snapshot as a World; anything named twice is refused (it would be a silent loss)."""
    try:
        w = m.World()
        for e in s.entities:
            _unique(w.entities, e.id, "entity")
            w.entities[e.id] = _entity(e)
        w.events = [_event(e) for e in s.events]
        w.relations = [_relation(r) for r in s.relations]
        if len({(r.source_id, r.target_id, r.kind) for r in w.relations}) != len(w.relations):
            raise _Bad("a relation (source, target, kind) appears twice")
        for mood in s.moods:
            _unique(w.moods, mood.actor_id, "mood actor")
            w.moods[mood.actor_id] = _pad(mood.pad)
        for fact in s.scene_facts:
            _unique(w.scene, fact.key, "scene fact")
            if not fact.HasField("value"):
                raise _Bad(f"scene fact {fact.key!r} has no value")
            w.scene[fact.key] = _value(fact.value)
        for card in s.lore_cards:
            _unique(w.lore, card.id, "lore card")
            w.lore[card.id] = _lore(card)
        w.memories = [m.Memory(x.actor_id, x.text, x.revision) for x in s.memories]
        st = s.story
        w.story = m.Story(st.plot_essentials, st.author_note, st.story_summary, st.instructions)
        for p in s.personas:
            _unique(w.personas, p.actor_id, "persona actor")
            w.personas[p.actor_id] = _persona(p)
    except _Bad as exc:
        raise InvalidRequest(f"snapshot: {exc}") from None
    return w


def _unique(d: Mapping[str, object], key: str, what: str) -> None:
    if key in d:
        raise _Bad(f"{what} {key!r} appears twice")
