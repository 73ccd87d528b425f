"""Test helpers for the state engine: hypothesis strategies for op batches
over a small ID pool (so ops often hit existing and missing entities), and a
plain-dict model of the documented semantics, written independently of the
engine, to compare against."""

from __future__ import annotations

import copy
import functools
from typing import Any

from hypothesis import strategies as st

from sidecar.state import ops as o
from sidecar.state.model import (
    Entity,
    EntityRef,
    Event,
    Field,
    LoreCard,
    Memory,
    Pad,
    PersonaBinding,
    Relation,
    Vec3,
    Visibility,
    World,
)

IDS = ["e0", "e1", "e2", "e3", "e4", "e5"]
FIELD_NAMES = ["hp", "mp", "pos", "owner", "bag", "mood"]
KINDS = ["character", "location", "item", "faction", "player", "other"]

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
small_text = st.text(max_size=6)


def id_strategy(existing: list[str]) -> st.SearchStrategy[str]:
    """Mostly IDs that exist now (so batches often apply), sometimes any of the pool."""
    pool = st.sampled_from(IDS)
    return st.one_of(st.sampled_from(existing), st.sampled_from(existing), pool) if existing else pool


def op_strategy(ids: st.SearchStrategy[str]) -> st.SearchStrategy[o.Op]:
    scalars = st.one_of(
        small_text,
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        finite,
        st.booleans(),
        st.builds(Vec3, finite, finite, finite),
        st.builds(EntityRef, ids),
    )
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=4)
    visibilities = st.one_of(
        st.just(Visibility()),
        st.builds(Visibility, st.sampled_from(["public", "private", "hidden"])),
        st.builds(lambda k: Visibility("known_to", tuple(k)), st.lists(ids, max_size=2)),
    )
    fields = st.builds(Field, values, st.one_of(st.none(), visibilities))
    field_maps = st.dictionaries(st.sampled_from(FIELD_NAMES), fields, max_size=3)
    locations = st.one_of(st.just(""), st.just(""), ids)
    entities = st.builds(
        Entity,
        id=st.one_of(ids, st.sampled_from(IDS)),
        kind=st.sampled_from(KINDS),
        name=small_text,
        tags=st.lists(small_text, max_size=2),
        fields=field_maps,
        location_id=locations,
        visibility=visibilities,
    )
    upserts = st.builds(o.UpsertEntity, entities)
    text = st.text(min_size=1, max_size=6).filter(str.strip)
    return st.one_of(
        upserts,
        upserts,
        upserts,
        upserts,
        st.builds(
            o.PatchEntity,
            id=ids,
            set_fields=field_maps,
            unset_fields=st.lists(st.sampled_from(FIELD_NAMES), max_size=2),
            name=st.one_of(st.none(), small_text),
            tags=st.one_of(st.none(), st.lists(small_text, max_size=2)),
            location_id=st.one_of(st.none(), locations),
            visibility=st.one_of(st.none(), visibilities),
        ),
        st.builds(o.RemoveEntity, ids),
        st.builds(
            o.RecordEvent,
            st.builds(
                Event, text=text, entity_ids=st.lists(ids, max_size=2), actor_id=locations, location_id=locations
            ),
        ),
        st.builds(
            o.SetRelation, st.builds(Relation, ids, ids, st.sampled_from(["likes", "owes"]), finite), st.booleans()
        ),
        st.builds(o.SetMood, ids, st.builds(Pad, *(st.floats(min_value=-1.5, max_value=1.5, allow_nan=False),) * 3)),
        st.builds(o.SetSceneFact, st.sampled_from(["weather", "time"]), values, st.booleans()),
        st.builds(o.UpsertLoreCard, st.builds(LoreCard, st.sampled_from(["l1", "l2"]), text=small_text)),
        st.builds(o.RemoveLoreCard, st.sampled_from(["l1", "l2"])),
        st.builds(o.RecordMemory, st.builds(Memory, ids, text)),
        st.builds(
            o.SetStory, plot_essentials=st.one_of(st.none(), small_text), author_note=st.one_of(st.none(), small_text)
        ),
        st.builds(o.SetPersona, st.builds(PersonaBinding, ids, template_name=st.sampled_from(["guard", "king"]))),
    )


@functools.lru_cache(maxsize=128)
def _batch_strategy(existing: tuple[str, ...]) -> st.SearchStrategy[list[o.Op]]:
    return st.lists(op_strategy(id_strategy(list(existing))), max_size=3)


def batch_strategy(existing: list[str]) -> st.SearchStrategy[list[o.Op]]:
    """Batches of up to three ops, mostly about the entities that exist now."""
    return _batch_strategy(tuple(sorted(existing)))


# -- the model ----------------------------------------------------------------------


def norm(v: Any) -> Any:
    """A value with its type made explicit (1, 1.0 and True differ)."""
    if isinstance(v, list):
        return ("list", [norm(x) for x in v])
    if isinstance(v, Vec3):
        return ("vec3", v.x, v.y, v.z)
    if isinstance(v, EntityRef):
        return ("ref", v.id)
    return (type(v).__name__, v)


class Rejected(Exception):
    pass


class PlainModel:
    """The documented semantics over plain dicts and lists."""

    def __init__(self, max_events: int = 256, max_memories: int = 4096) -> None:
        self.max_events = max_events
        self.max_memories = max_memories
        self.d: dict[str, Any] = {
            "entities": {},
            "events": [],
            "relations": {},
            "moods": {},
            "scene": {},
            "lore": {},
            "memories": [],
            "story": {"plot_essentials": "", "author_note": "", "story_summary": "", "instructions": ""},
            "personas": {},
        }
        self.revision = 0

    def apply(self, batch: list[o.Op]) -> bool:
        """Apply whole or not at all; True when applied."""
        d = copy.deepcopy(self.d)
        try:
            removed = set()
            upserted: set[str] = set()
            for op in batch:
                self._op(d, op, removed, upserted)
        except Rejected:
            return False
        gone = {i for i in removed if i not in d["entities"]}
        self._cascade(d, gone)
        self.d = d
        self.revision += 1
        return True

    def _need(self, d: dict[str, Any], entity_id: str, optional: bool = False) -> None:
        if optional and entity_id == "":
            return
        if entity_id not in d["entities"]:
            raise Rejected

    def _need_value(self, d: dict[str, Any], v: Any) -> None:
        if isinstance(v, EntityRef):
            self._need(d, v.id)
        elif isinstance(v, list):
            for x in v:
                self._need_value(d, x)

    def _op(self, d: dict[str, Any], op: o.Op, removed: set[str], upserted: set[str]) -> None:
        rev = self.revision + 1
        if isinstance(op, o.UpsertEntity):
            e = op.entity
            if e.id in upserted or e.location_id == e.id:
                raise Rejected
            upserted.add(e.id)
            exists_before = e.id in d["entities"]
            d["entities"][e.id] = None  # a self-reference is allowed
            try:
                self._need(d, e.location_id, optional=True)
                for f in e.fields.values():
                    self._need_value(d, f.value)
            except Rejected:
                if not exists_before:
                    del d["entities"][e.id]
                raise
            d["entities"][e.id] = {
                "kind": e.kind,
                "name": e.name,
                "description": e.description,
                "tags": list(e.tags),
                "fields": {k: (norm(f.value), f.visibility) for k, f in e.fields.items()},
                "location_id": e.location_id,
                "visibility": e.visibility,
            }
        elif isinstance(op, o.PatchEntity):
            self._need(d, op.id)
            if set(op.set_fields) & set(op.unset_fields):
                raise Rejected
            for f in op.set_fields.values():
                self._need_value(d, f.value)
            if op.location_id is not None:
                if op.location_id == op.id:
                    raise Rejected
                self._need(d, op.location_id, optional=True)
            ent = d["entities"][op.id]
            for k, f in op.set_fields.items():
                ent["fields"][k] = (norm(f.value), f.visibility)
            for k in op.unset_fields:
                ent["fields"].pop(k, None)
            for attr in ("name", "description", "tags", "location_id", "visibility"):
                if getattr(op, attr) is not None:
                    ent[attr] = copy.copy(getattr(op, attr))
        elif isinstance(op, o.RemoveEntity):
            self._need(d, op.id)
            del d["entities"][op.id]
            removed.add(op.id)
            upserted.discard(op.id)
        elif isinstance(op, o.RecordEvent):
            ev = op.event
            for i in ev.entity_ids:
                self._need(d, i)
            self._need(d, ev.actor_id, optional=True)
            self._need(d, ev.location_id, optional=True)
            d["events"].append((ev.text, list(ev.entity_ids), ev.actor_id, ev.location_id, rev))
            d["events"] = d["events"][-self.max_events :]
        elif isinstance(op, o.SetRelation):
            r = op.relation
            key = (r.source_id, r.target_id, r.kind)
            if op.remove:
                d["relations"].pop(key, None)
            else:
                self._need(d, r.source_id)
                self._need(d, r.target_id)
                d["relations"][key] = r.strength
        elif isinstance(op, o.SetMood):
            self._need(d, op.actor_id)
            p = op.pad
            if not all(-1 <= x <= 1 for x in (p.pleasure, p.arousal, p.dominance)):
                raise Rejected
            d["moods"][op.actor_id] = (p.pleasure, p.arousal, p.dominance)
        elif isinstance(op, o.SetSceneFact):
            if op.remove:
                d["scene"].pop(op.key, None)
            else:
                self._need_value(d, op.value)
                d["scene"][op.key] = norm(op.value)
        elif isinstance(op, o.UpsertLoreCard):
            d["lore"][op.card.id] = op.card.text
        elif isinstance(op, o.RemoveLoreCard):
            d["lore"].pop(op.id, None)
        elif isinstance(op, o.RecordMemory):
            self._need(d, op.memory.actor_id)
            d["memories"].append((op.memory.actor_id, op.memory.text, rev))
            d["memories"] = d["memories"][-self.max_memories :]
        elif isinstance(op, o.SetStory):
            for part in d["story"]:
                if getattr(op, part) is not None:
                    d["story"][part] = getattr(op, part)
        elif isinstance(op, o.SetPersona):
            self._need(d, op.persona.actor_id)
            d["personas"][op.persona.actor_id] = op.persona.template_name
        else:
            raise AssertionError(op)

    @staticmethod
    def _strip(v: Any, gone: set[str]) -> Any:
        kind = v[0]
        if kind == "list":
            return ("list", [PlainModel._strip(x, gone) for x in v[1] if not (x[0] == "ref" and x[1] in gone)])
        return v

    def _cascade(self, d: dict[str, Any], gone: set[str]) -> None:
        if not gone:
            return
        for ent in d["entities"].values():
            if ent["location_id"] in gone:
                ent["location_id"] = ""
            ent["fields"] = {
                k: (self._strip(v, gone), vis)
                for k, (v, vis) in ent["fields"].items()
                if not (v[0] == "ref" and v[1] in gone)
            }
        d["scene"] = {k: self._strip(v, gone) for k, v in d["scene"].items() if not (v[0] == "ref" and v[1] in gone)}
        d["relations"] = {k: s for k, s in d["relations"].items() if k[0] not in gone and k[1] not in gone}
        for i in gone:
            d["moods"].pop(i, None)
            d["personas"].pop(i, None)


def world_as_model(w: World) -> dict[str, Any]:
    """The engine's world in the model's shape."""
    return {
        "entities": {
            e.id: {
                "kind": e.kind,
                "name": e.name,
                "description": e.description,
                "tags": list(e.tags),
                "fields": {k: (norm(f.value), f.visibility) for k, f in e.fields.items()},
                "location_id": e.location_id,
                "visibility": e.visibility,
            }
            for e in w.entities.values()
        },
        "events": [(e.text, list(e.entity_ids), e.actor_id, e.location_id, e.revision) for e in w.events],
        "relations": {(r.source_id, r.target_id, r.kind): r.strength for r in w.relations},
        "moods": {a: (p.pleasure, p.arousal, p.dominance) for a, p in w.moods.items()},
        "scene": {k: norm(v) for k, v in w.scene.items()},
        "lore": {k: c.text for k, c in w.lore.items()},
        "memories": [(m.actor_id, m.text, m.revision) for m in w.memories],
        "story": {
            "plot_essentials": w.story.plot_essentials,
            "author_note": w.story.author_note,
            "story_summary": w.story.story_summary,
            "instructions": w.story.instructions,
        },
        "personas": {a: p.template_name for a, p in w.personas.items()},
    }
