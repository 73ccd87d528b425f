"""Domain -> proto for session state: model.World -> Snapshot (GetState, and
the blob tests' reference). Never produces an UNSPECIFIED enum value."""

from __future__ import annotations

from collections.abc import Iterable

from sidecar.servicers.convert_enums import KIND_FROM, KIND_TO, LEVEL_TO
from sidecar.state import model as m
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

__all__ = ["world_to_pb"]


def _vis_pb(v: m.Visibility) -> tpb.Visibility:
    return tpb.Visibility(level=LEVEL_TO[v.level], known_to=v.known_to)


def _value_pb(v: m.Value) -> tpb.Value:
    # Exact types (a bool is no int), each written `type(v) is X` so it narrows `v`.
    if type(v) is str:
        return tpb.Value(string_value=v)
    if type(v) is bool:
        return tpb.Value(bool_value=v)
    if type(v) is int:
        return tpb.Value(int_value=v)
    if type(v) is float:
        return tpb.Value(double_value=v)
    if type(v) is m.Vec3:
        return tpb.Value(vector_value=tpb.Vec3(x=v.x, y=v.y, z=v.z))
    if type(v) is m.EntityRef:
        return tpb.Value(entity_ref=v.id)
    assert type(v) is list  # the last kind of Value
    return tpb.Value(list_value=tpb.ValueList(values=[_value_pb(x) for x in v]))


def _entity_pb(e: m.Entity) -> pb.Entity:
    fields = {}
    for k, f in e.fields.items():
        fv = tpb.FieldValue(value=_value_pb(f.value))
        if f.visibility is not None:
            fv.visibility.CopyFrom(_vis_pb(f.visibility))
        fields[k] = fv
    return pb.Entity(
        id=e.id,
        kind=KIND_TO[e.kind],
        name=e.name,
        description=e.description,
        tags=e.tags,
        fields=fields,
        location_id=e.location_id,
        visibility=_vis_pb(e.visibility),
    )


def _event_pb(e: m.Event) -> pb.GameEvent:
    ev = pb.GameEvent(
        text=e.text,
        entity_ids=e.entity_ids,
        actor_id=e.actor_id,
        visibility=_vis_pb(e.visibility),
        location_id=e.location_id,
        revision=e.revision,
    )
    if e.moment is not None:
        ev.moment.CopyFrom(tpb.GameMoment(timeline=e.moment.timeline, tick=e.moment.tick, calendar=e.moment.calendar))
    return ev


def _template_pb(t: m.PersonaTemplate) -> pb.PersonaTemplate:
    return pb.PersonaTemplate(
        identity=t.identity,
        inviolable_rules=t.inviolable_rules,
        mood_modifiers=t.mood_modifiers,
        hp_descriptions=[pb.HpDescription(max_fraction=h.max_fraction, text=h.text) for h in t.hp_descriptions],
        situational_modifiers=[
            pb.SituationalModifier(condition=s.condition, text=s.text) for s in t.situational_modifiers
        ],
        reminder=t.reminder,
    )


def _persona_pb(p: m.PersonaBinding) -> pb.PersonaBinding:
    out = pb.PersonaBinding(actor_id=p.actor_id, slots=p.slots)
    if p.template_name is not None:
        out.template_name = p.template_name
    elif p.inline is not None:
        out.inline_template.CopyFrom(_template_pb(p.inline))
    return out


def world_to_pb(w: m.World, kinds: Iterable[int] = (), ids: Iterable[str] = ()) -> pb.Snapshot:
    """The engine's view. `kinds` / `ids` filter the entities only (empty = all)."""
    kind_names = {KIND_FROM.get(k, "") for k in kinds} - {""}
    wanted = list(ids)
    entities = [w.entities[i] for i in dict.fromkeys(wanted) if i in w.entities] if wanted else w.entities.values()
    st = w.story
    return pb.Snapshot(
        entities=[_entity_pb(e) for e in entities if not kind_names or e.kind in kind_names],
        events=[_event_pb(e) for e in w.events],
        relations=[
            pb.Relation(
                source_id=r.source_id,
                target_id=r.target_id,
                kind=r.kind,
                strength=r.strength,
                visibility=_vis_pb(r.visibility),
            )
            for r in w.relations
        ],
        moods=[
            pb.ActorMood(actor_id=a, pad=tpb.Pad(pleasure=p.pleasure, arousal=p.arousal, dominance=p.dominance))
            for a, p in w.moods.items()
        ],
        scene_facts=[pb.SceneFact(key=k, value=_value_pb(v)) for k, v in w.scene.items()],
        lore_cards=[
            pb.LoreCard(id=c.id, title=c.title, text=c.text, triggers=c.triggers, visibility=_vis_pb(c.visibility))
            for c in w.lore.values()
        ],
        memories=[pb.MemoryEntry(actor_id=x.actor_id, text=x.text, revision=x.revision) for x in w.memories],
        story=pb.Story(
            plot_essentials=st.plot_essentials,
            author_note=st.author_note,
            story_summary=st.story_summary,
            instructions=st.instructions,
        ),
        personas=[_persona_pb(p) for p in w.personas.values()],
    )
