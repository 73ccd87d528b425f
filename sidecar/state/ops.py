"""The delta ops of a batch, as tagged msgspec Structs: what the servicer
converts proto `DeltaOp`s into, what the engine validates and applies, and what
the journal encodes (the tag keeps a journal readable by later versions).

Semantics (docs/protocol.md §5 has the full contract):

- `UpsertEntity` creates the entity or replaces it whole.
- `PatchEntity` sets and unsets named fields; `None` attributes are left alone;
  a list value replaces the old list whole; `tags` replaces the tag list.
- `RemoveEntity` removes the entity and what describes its present (relations,
  mood, persona, field references to it, containment of other entities);
  history (events, memories, transcripts, its alias) stays.
"""

from __future__ import annotations

import msgspec

from sidecar.state.model import (
    Entity,
    Event,
    Field,
    LoreCard,
    Memory,
    Pad,
    PersonaBinding,
    Relation,
    Value,
    Visibility,
    World,
)

__all__ = [
    "UpsertEntity",
    "PatchEntity",
    "RemoveEntity",
    "RecordEvent",
    "SetRelation",
    "SetMood",
    "SetSceneFact",
    "UpsertLoreCard",
    "RemoveLoreCard",
    "RecordMemory",
    "SetStory",
    "SetPersona",
    "Op",
    "world_to_ops",
]


class UpsertEntity(msgspec.Struct, tag="upsert"):
    entity: Entity


class PatchEntity(msgspec.Struct, tag="patch"):
    id: str
    set_fields: dict[str, Field] = msgspec.field(default_factory=dict)
    unset_fields: list[str] = msgspec.field(default_factory=list)
    name: str | None = None
    description: str | None = None
    #: Replaces the tag list when not None.
    tags: list[str] | None = None
    #: "" moves the entity nowhere; None leaves it where it is.
    location_id: str | None = None
    visibility: Visibility | None = None


class RemoveEntity(msgspec.Struct, tag="remove"):
    id: str


class RecordEvent(msgspec.Struct, tag="event"):
    #: `event.revision` is ignored: the engine stamps the batch's revision.
    event: Event


class SetRelation(msgspec.Struct, tag="relation"):
    relation: Relation
    #: Remove (source, target, kind) instead of setting it; absent is no error.
    remove: bool = False


class SetMood(msgspec.Struct, tag="mood"):
    actor_id: str
    pad: Pad


class SetSceneFact(msgspec.Struct, tag="scene"):
    key: str
    #: None only together with remove.
    value: Value | None = None
    remove: bool = False


class UpsertLoreCard(msgspec.Struct, tag="lore"):
    card: LoreCard


class RemoveLoreCard(msgspec.Struct, tag="unlore"):
    id: str


class RecordMemory(msgspec.Struct, tag="memory"):
    #: `memory.revision` is ignored: the engine stamps the batch's revision.
    memory: Memory


class SetStory(msgspec.Struct, tag="story"):
    plot_essentials: str | None = None
    author_note: str | None = None
    story_summary: str | None = None
    instructions: str | None = None


class SetPersona(msgspec.Struct, tag="persona"):
    persona: PersonaBinding


Op = (
    UpsertEntity
    | PatchEntity
    | RemoveEntity
    | RecordEvent
    | SetRelation
    | SetMood
    | SetSceneFact
    | UpsertLoreCard
    | RemoveLoreCard
    | RecordMemory
    | SetStory
    | SetPersona
)


def world_to_ops(world: World) -> list[Op]:
    """The batch that builds `world` from nothing (ReplaceState, import checks).

    Entities come first, so with `fresh_ids` the rest may refer to any of them.
    """
    out: list[Op] = [UpsertEntity(e) for e in world.entities.values()]
    out += [RecordEvent(ev) for ev in world.events]
    out += [SetRelation(r) for r in world.relations]
    out += [SetMood(actor, pad) for actor, pad in world.moods.items()]
    out += [SetSceneFact(key, value) for key, value in world.scene.items()]
    out += [UpsertLoreCard(card) for card in world.lore.values()]
    out += [RecordMemory(m) for m in world.memories]
    s = world.story
    out.append(SetStory(s.plot_essentials, s.author_note, s.story_summary, s.instructions))
    out += [SetPersona(p) for p in world.personas.values()]
    return out
