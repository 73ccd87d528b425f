"""The one builder of test worlds: state, projection, context, runs and wire tests
all describe their world here and take it in the form they need.

A world is what a game sends: delta batches of ops. `World` collects them
fluently (`World().entity(...).event(...).then().memory(...)`); `then()` starts the
next batch, i.e. the next revision. The same description becomes

- `.ops` / `.batches`: domain ops (`sidecar.state.ops`);
- `.session()`: a `Session` built by the real op application (`apply_ops`), so
  aliases, revisions and cascades are assigned the way a game's deltas assign them;
- `await .apply_to(store, session_id)`: the same batches through a real `SessionStore`;
- `.to_pb()` / `await .send(client, ...)`: proto `DeltaOp`s for a real gRPC server.

Shared scenes: `leak_tavern`, `anchor_tavern`, `crowd`. Strategies build through `World` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sidecar.config import StateLimits
from sidecar.servicers.convert_state_to_pb import _entity_pb, _event_pb, _persona_pb, _value_pb, _vis_pb
from sidecar.state import ops as o
from sidecar.state.apply import apply_ops
from sidecar.state.model import (
    Entity,
    Event,
    Field,
    LoreCard,
    Memory,
    Moment,
    Pad,
    PersonaBinding,
    PersonaTemplate,
    Relation,
    Session,
    SessionOptions,
    Visibility,
)
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

PUBLIC = Visibility()
HIDDEN = Visibility("hidden")
PRIVATE = Visibility("private")


def known_to(*ids: str) -> Visibility:
    return Visibility("known_to", tuple(ids))


class World:
    """Delta batches under construction; every method returns the builder."""

    def __init__(self) -> None:
        self.batches: list[list[o.Op]] = [[]]

    @property
    def ops(self) -> list[o.Op]:
        """Every op of every batch, in order."""
        return [op for batch in self.batches for op in batch]

    # -- what a world holds ------------------------------------------------------

    def add(self, *ops: o.Op) -> World:
        self.batches[-1].extend(ops)
        return self

    def then(self) -> World:
        """Start the next batch: what follows lands one revision later."""
        if self.batches[-1]:
            self.batches.append([])
        return self

    def entity(
        self, entity_id: str, kind: str = "character", name: str = "", *, at: str = "", description: str = "",
        tags: Sequence[str] = (), visibility: Visibility = PUBLIC, **fields: Any,
    ) -> World:  # fmt: skip
        """Upsert an entity; `at` is its location, `fields` its fields (a bare value
        is a public field; pass a `Field` to give it a visibility)."""
        made = {k: v if isinstance(v, Field) else Field(v) for k, v in fields.items()}
        entity = Entity(entity_id, kind, name, description, list(tags), made, at, visibility)  # type: ignore[arg-type]
        return self.add(o.UpsertEntity(entity))

    def entities(self, *entities: Entity) -> World:
        return self.add(*(o.UpsertEntity(e) for e in entities))

    def event(
        self, text: str, *, actor: str = "", at: str = "", about: Sequence[str] = (),
        visibility: Visibility = PUBLIC, moment: Moment | None = None,
    ) -> World:  # fmt: skip
        event = Event(text, list(about), actor, moment, visibility, at)
        return self.add(o.RecordEvent(event))

    def relation(
        self, source: str, kind: str, target: str, strength: float = 0.0, visibility: Visibility = PUBLIC
    ) -> World:
        return self.add(o.SetRelation(Relation(source, target, kind, strength, visibility)))

    def mood(self, actor: str, pleasure: float, arousal: float, dominance: float) -> World:
        return self.add(o.SetMood(actor, Pad(pleasure, arousal, dominance)))

    def scene(self, key: str, value: Any) -> World:
        return self.add(o.SetSceneFact(key=key, value=value))

    def lore(
        self, card_id: str, title: str, text: str, triggers: Sequence[str] = (), visibility: Visibility = PUBLIC
    ) -> World:
        return self.add(o.UpsertLoreCard(LoreCard(card_id, title, text, list(triggers), visibility)))

    def memory(self, actor: str, text: str) -> World:
        return self.add(o.RecordMemory(Memory(actor_id=actor, text=text)))

    def story(self, **parts: str) -> World:
        """plot_essentials, author_note, story_summary, instructions."""
        return self.add(o.SetStory(**parts))

    def persona(
        self,
        actor: str,
        inline: PersonaTemplate | None = None,
        *,
        template: str | None = None,
        slots: Mapping[str, str] | None = None,
    ) -> World:
        binding = PersonaBinding(actor_id=actor, template_name=template, inline=inline, slots=dict(slots or {}))
        return self.add(o.SetPersona(binding))

    # -- the forms a test takes it in ----------------------------------------------

    def session(self, session_id: str = "s1", options: SessionOptions | None = None) -> Session:
        """A fresh session with each batch applied by the real op application."""
        return self.onto(Session(id=session_id, options=options or SessionOptions()))

    def onto(self, session: Session, limits: StateLimits | None = None) -> Session:
        """Apply each batch to an existing session, one revision each. Not validated:
        a test that builds a world is not a test of validation (tests/state is)."""
        for batch in self.batches:
            if batch:
                apply_ops(session, batch, session.revision + 1, limits or StateLimits())
        return session

    async def apply_to(self, store: Any, session_id: str) -> int:
        """Each batch through a real `SessionStore` (validated, journaled); the revision."""
        for n, batch in enumerate(self.batches):
            if batch:
                revision = store.get(session_id).revision
                await store.apply(session_id, revision, f"world-{session_id}-{n}", batch)
        return int(store.get(session_id).revision)

    def to_pb(self) -> list[pb.DeltaOp]:
        """Every op as the game sends it over the wire (one ApplyDeltas batch)."""
        return ops_to_pb(self.ops)

    async def send(self, client: Any, session_id: str, revision: int) -> int:
        """Each batch through ApplyDeltas on a real server; the revision it reports."""
        for batch in self.batches:
            if batch:
                revision = (await client.apply_deltas(session_id, revision, ops_to_pb(batch))).revision
        return revision


def apply(session: Session, *ops: o.Op) -> Session:
    """Apply `ops` to an existing session as one batch (one revision)."""
    return World().add(*ops).onto(session)


def ops_to_pb(ops: Iterable[o.Op]) -> list[pb.DeltaOp]:
    """Domain ops -> proto (the reverse of the servicer's ops_from_pb, for the ops a
    world holds; tests/test_world.py checks the round trip)."""
    out = []
    for op in ops:
        if isinstance(op, o.UpsertEntity):
            out.append(pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=_entity_pb(op.entity))))
        elif isinstance(op, o.RecordEvent):
            out.append(pb.DeltaOp(record_event=pb.RecordEventOp(event=_event_pb(op.event))))
        elif isinstance(op, o.SetRelation):
            r = op.relation
            rel = pb.Relation(
                source_id=r.source_id, target_id=r.target_id, kind=r.kind, strength=r.strength,
                visibility=_vis_pb(r.visibility),
            )  # fmt: skip
            out.append(pb.DeltaOp(set_relation=pb.SetRelationOp(relation=rel, remove=op.remove)))
        elif isinstance(op, o.SetMood):
            pad = tpb.Pad(pleasure=op.pad.pleasure, arousal=op.pad.arousal, dominance=op.pad.dominance)
            out.append(pb.DeltaOp(set_mood=pb.SetMoodOp(actor_id=op.actor_id, pad=pad)))
        elif isinstance(op, o.SetSceneFact):
            fact = pb.SetSceneFactOp(key=op.key, remove=op.remove)
            if op.value is not None:
                fact.value.CopyFrom(_value_pb(op.value))
            out.append(pb.DeltaOp(set_scene_fact=fact))
        elif isinstance(op, o.UpsertLoreCard):
            c = op.card
            vis = _vis_pb(c.visibility)
            card = pb.LoreCard(id=c.id, title=c.title, text=c.text, triggers=c.triggers, visibility=vis)
            out.append(pb.DeltaOp(upsert_lore_card=pb.UpsertLoreCardOp(card=card)))
        elif isinstance(op, o.RecordMemory):
            memory = pb.MemoryEntry(actor_id=op.memory.actor_id, text=op.memory.text)
            out.append(pb.DeltaOp(record_memory=pb.RecordMemoryOp(memory=memory)))
        elif isinstance(op, o.SetStory):
            parts = {k: getattr(op, k) for k in o.SetStory.__struct_fields__ if getattr(op, k) is not None}
            out.append(pb.DeltaOp(set_story=pb.SetStoryOp(**parts)))
        elif isinstance(op, o.SetPersona):
            out.append(pb.DeltaOp(set_persona=pb.SetPersonaOp(persona=_persona_pb(op.persona))))
        elif isinstance(op, o.RemoveEntity):
            out.append(pb.DeltaOp(remove_entity=pb.RemoveEntityOp(id=op.id)))
        elif isinstance(op, o.RemoveLoreCard):
            out.append(pb.DeltaOp(remove_lore_card=pb.RemoveLoreCardOp(id=op.id)))
        elif isinstance(op, o.PatchEntity):
            out.append(pb.DeltaOp(patch_entity=_patch_pb(op)))
        else:
            raise NotImplementedError(f"no proto form for {type(op).__name__} in tests/world.py yet")
    return out


def _patch_pb(op: o.PatchEntity) -> pb.PatchEntityOp:
    fields = {k: tpb.FieldValue(value=_value_pb(f.value)) for k, f in op.set_fields.items()}
    patch = pb.PatchEntityOp(id=op.id, set_fields=fields, unset_fields=op.unset_fields)
    for name in ("name", "description", "location_id"):
        if getattr(op, name) is not None:
            setattr(patch, name, getattr(op, name))
    if op.tags is not None:
        patch.tags.extend(op.tags)
        patch.has_tags = True
    if op.visibility is not None:
        patch.visibility.CopyFrom(_vis_pb(op.visibility))
    return patch


# -- the shared scenes -----------------------------------------------------------


def crowd(actors: int) -> World:
    """`actors` characters "actor-000", "actor-001", ... named Actor0, Actor1, ... (run tests)."""
    world = World()
    for i in range(actors):
        world.entity(f"actor-{i:03d}", "character", f"Actor{i}")
    return world


def leak_tavern(options: SessionOptions | None = None) -> Session:
    """Two rooms. The tavern holds the goblin, the hero and a chest; the forest holds a wolf.

    Engine IDs are distinctive on purpose, so a substring search finds any leak
    (projection tests). Session "save-slot-7f3a" at revision 1.
    """
    world, tavern = "/Game/Maps/World.World", "LOC_Tavern_0001"
    hero = "9b2d5c1e-hero-0000-0000-000000000001"
    return (
        World()
        .entity(world, "location", "The World")
        .entity(tavern, "location", "Tavern", at=world)
        .entity("LOC_Forest_0002", "location", "Forest", at=world)
        .entity(
            "BP_Goblin_C_2147483647",
            "character",
            "Grub",
            at=tavern,
            description="A goblin who owes BP_Wolf_C_0000000042 money.",
            hp=12,
            position=[1.5, 2.0, 3.0],
            grudge=Field("hates the wolf", PRIVATE),
            gm_note=Field("secretly the king", HIDDEN),
            password=Field("swordfish-77", known_to(hero)),
        )
        .entity(hero, "player", "Hero", at=tavern)
        .entity("BP_Chest_C_0000000777", "item", "Chest", at=tavern)
        .entity("BP_Wolf_C_0000000042", "character", "Wolf", at="LOC_Forest_0002")
        .entity("BP_Spy_C_0000000099", "character", "Spy", at=tavern, visibility=HIDDEN)
        .entity("ITEM_Ring_ÿ_0001", "item", "Ring", at=hero)
        .entity("FAC_Thieves_0001", "faction", "Thieves Guild")
        .entity("FAC_Cult_0001", "faction", "Cult", visibility=known_to("BP_Goblin_C_2147483647"))
        .session("save-slot-7f3a", options)
    )


#: The NPC of `anchor_tavern`, its player and its room.
MAERWYN, ARIA, ANCHOR = "npc-maerwyn-7", "player-one-1", "loc-tavern-01"


def anchor_tavern(session_id: str = "s1") -> Session:
    """A small harbour tavern scene (context tests): an NPC (Maerwyn, "npc-maerwyn-7")
    with a persona, a mood and two memories (revisions 1 and 2), a player, a guard,
    a key, lore and a story. Revision 2."""
    persona = PersonaTemplate(
        identity="You are {npcName}, a {role} in {location}.",
        inviolable_rules=["Never reveal the king's secret."],
        mood_modifiers={
            "calm": "You are calm, speaking slowly, without ceasing to be {npcName}.",
            "angry": "You are furious: short sentences, without ceasing to be {npcName}.",
        },
        reminder="You are still {npcName}, even when furious.",
    )
    return (
        World()
        .entity(ANCHOR, "location", "The Rusty Anchor", description="A smoky harbour tavern.",
                ambiance="loud, smells of tar")  # fmt: skip
        .entity(MAERWYN, "character", "Maerwyn", at=ANCHOR, description="A nomad merchant of fifty.",
                hp=30, max_hp=30, role="merchant")  # fmt: skip
        .entity(ARIA, "player", "Aria", at=ANCHOR, description="A young sellsword.", hp=12, max_hp=20)
        .entity("item-key-0042", "item", "rusty key", at=ANCHOR)
        .entity("npc-guard-33", "character", "Bored guard", at=ANCHOR)
        .event("npc-guard-33 yawns loudly", actor="npc-guard-33", at=ANCHOR)
        .mood(MAERWYN, 0.5, -0.2, 0.3)
        .scene("time_of_day", "dusk")
        .scene("weather", "rain")
        .story(plot_essentials="The king's seal was stolen.", story_summary="Aria arrived by ship.")
        .lore("lore-dragon", "The Dragon", "A red dragon sleeps under the hill.", triggers=["dragon", "red wyrm"])
        .lore("lore-seal", "The Seal", "The royal seal opens the vault.", triggers=["seal"])
        .memory(MAERWYN, "Aria paid twice for the silk.")
        .persona(MAERWYN, persona)
        .then()
        .memory(MAERWYN, "The dragon burned my caravan.")
        .session(session_id)
    )
