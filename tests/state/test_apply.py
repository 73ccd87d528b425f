"""Unit tests of validation and apply (pure, no grpc): each op's documented
semantics, every limit with its error and metadata, and rejections that
change nothing."""

from __future__ import annotations

import math

import msgspec
import pytest

from sidecar.config import StateLimits
from sidecar.errors import CapacityExceeded, InvalidDelta, LimitExceeded, SidecarError, UnknownEntity
from sidecar.state import ops as o
from sidecar.state.apply import apply_ops
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
    Session,
    Vec3,
    Visibility,
)
from sidecar.state.validate import validate_batch

LIMITS = StateLimits()


def run(session: Session, *ops: o.Op, limits: StateLimits = LIMITS) -> int:
    validate_batch(session.world, list(ops), limits)
    apply_ops(session, list(ops), session.revision + 1, limits)
    return session.revision


def rejected(session: Session, *ops: o.Op, limits: StateLimits = LIMITS) -> SidecarError:
    before = msgspec.msgpack.encode(session)
    with pytest.raises(SidecarError) as info:
        validate_batch(session.world, list(ops), limits)
    assert msgspec.msgpack.encode(session) == before
    return info.value


@pytest.fixture
def tavern() -> Session:
    s = Session(id="s")
    run(
        s,
        o.UpsertEntity(Entity(id="tavern", kind="location", name="The Drunken Duck")),
        o.UpsertEntity(Entity(id="bob", kind="character", name="Bob", location_id="tavern")),
        o.UpsertEntity(
            Entity(
                id="mug",
                kind="item",
                location_id="bob",
                fields={
                    "owner": Field(EntityRef("bob")),
                    "seen_by": Field([EntityRef("bob"), "x", [EntityRef("bob")]]),
                },
            )
        ),
    )
    return s


def test_upsert_creates_then_replaces_whole_and_keeps_the_alias(tavern: Session) -> None:
    alias = tavern.aliases.by_id["bob"]
    run(tavern, o.PatchEntity("bob", set_fields={"hp": Field(10)}))
    run(tavern, o.UpsertEntity(Entity(id="bob", kind="character", name="Robert")))
    bob = tavern.world.entities["bob"]
    assert (bob.name, bob.fields, bob.location_id) == ("Robert", {}, "")
    assert tavern.aliases.by_id["bob"] == alias
    assert tavern.revision == 3


def test_patch_sets_unsets_and_replaces_lists_whole(tavern: Session) -> None:
    run(tavern, o.PatchEntity("bob", set_fields={"bag": Field([1, 2, 3]), "hp": Field(10)}))
    run(
        tavern,
        o.PatchEntity(
            "bob",
            set_fields={"bag": Field([4])},
            unset_fields=["hp", "never_set"],
            name="Bobby",
            tags=["drunk"],
            location_id="",
            visibility=Visibility("private"),
        ),
    )
    bob = tavern.world.entities["bob"]
    assert bob.fields == {"bag": Field([4])}
    assert (bob.name, bob.tags, bob.location_id, bob.visibility.level) == ("Bobby", ["drunk"], "", "private")


def test_remove_cascades_to_present_but_keeps_history(tavern: Session) -> None:
    run(
        tavern,
        o.SetRelation(Relation("bob", "tavern", "owns", 0.5)),
        o.SetMood("bob", Pad(0.1, 0.2, 0.3)),
        o.SetPersona(PersonaBinding("bob", template_name="barkeep")),
        o.RecordEvent(Event("Bob drinks", entity_ids=["mug"], actor_id="bob")),
        o.RecordMemory(Memory("bob", "I like ale")),
        o.SetSceneFact("host", EntityRef("bob")),
        o.SetSceneFact("crowd", [EntityRef("bob"), "stranger"]),
    )
    alias = tavern.aliases.by_id["bob"]
    run(tavern, o.RemoveEntity("bob"))
    w = tavern.world
    assert "bob" not in w.entities
    mug = w.entities["mug"]
    assert mug.location_id == ""
    assert mug.fields == {"seen_by": Field(["x", []])}
    assert w.relations == [] and w.moods == {} and w.personas == {}
    assert w.scene == {"crowd": ["stranger"]}
    assert w.events[0].actor_id == "bob" and w.memories[0].actor_id == "bob"
    assert tavern.aliases.by_id["bob"] == alias  # never reused
    # Re-adding gives the same alias back.
    run(tavern, o.UpsertEntity(Entity(id="bob", kind="character")))
    assert tavern.aliases.by_id["bob"] == alias


def test_remove_and_readd_in_one_batch_keeps_references(tavern: Session) -> None:
    run(tavern, o.RemoveEntity("bob"), o.UpsertEntity(Entity(id="bob", kind="character")))
    assert tavern.world.entities["mug"].fields["owner"] == Field(EntityRef("bob"))
    assert tavern.world.entities["mug"].location_id == "bob"


def test_ops_may_use_entities_created_earlier_in_the_batch() -> None:
    s = Session(id="s")
    run(
        s,
        o.UpsertEntity(Entity(id="a", kind="location")),
        o.UpsertEntity(Entity(id="b", location_id="a", fields={"self": Field(EntityRef("b"))})),
        o.RecordEvent(Event("b appears", entity_ids=["b"], location_id="a")),
    )
    assert s.world.events[0].revision == 1


def test_events_and_memories_are_bounded_oldest_first() -> None:
    limits = StateLimits(max_events=3, max_memories=2)
    s = Session(id="s")
    run(s, o.UpsertEntity(Entity(id="a")), limits=limits)
    for i in range(5):
        run(s, o.RecordEvent(Event(f"e{i}")), o.RecordMemory(Memory("a", f"m{i}")), limits=limits)
    assert [e.text for e in s.world.events] == ["e2", "e3", "e4"]
    assert [(m.text, m.revision) for m in s.world.memories] == [("m3", 5), ("m4", 6)]


def test_relation_set_replaces_and_remove_is_quiet(tavern: Session) -> None:
    run(tavern, o.SetRelation(Relation("bob", "tavern", "likes", 0.1)))
    run(tavern, o.SetRelation(Relation("bob", "tavern", "likes", 0.9)))
    assert [r.strength for r in tavern.world.relations] == [0.9]
    run(tavern, o.SetRelation(Relation("bob", "tavern", "likes"), remove=True))
    run(tavern, o.SetRelation(Relation("bob", "tavern", "likes"), remove=True))
    assert tavern.world.relations == []


def test_story_scene_and_lore(tavern: Session) -> None:
    run(
        tavern,
        o.SetStory(plot_essentials="war is coming"),
        o.SetSceneFact("weather", "rain"),
        o.UpsertLoreCard(LoreCard("l1", text="dragons")),
    )
    run(tavern, o.SetStory(author_note="grim"), o.SetSceneFact("weather", remove=True), o.RemoveLoreCard("l1"))
    w = tavern.world
    assert (w.story.plot_essentials, w.story.author_note) == ("war is coming", "grim")
    assert w.scene == {} and w.lore == {}


@pytest.mark.parametrize(
    ("op", "error", "needle"),
    [
        (o.PatchEntity("ghost", set_fields={"x": Field(1)}), UnknownEntity, "ghost"),
        (o.RemoveEntity("ghost"), UnknownEntity, "ghost"),
        (o.UpsertEntity(Entity(id="x", location_id="nowhere")), UnknownEntity, "nowhere"),
        (o.UpsertEntity(Entity(id="x", fields={"f": Field([[EntityRef("nobody")]])})), UnknownEntity, "nobody"),
        (o.UpsertEntity(Entity(id="x", location_id="x")), InvalidDelta, "itself"),
        (o.UpsertEntity(Entity(id="")), InvalidDelta, "entity.id is empty"),
        (o.UpsertEntity(Entity(id="x", kind="dragon")), InvalidDelta, "kind"),  # type: ignore[arg-type]
        (o.PatchEntity("bob", set_fields={"a": Field(1)}, unset_fields=["a"]), InvalidDelta, "both set and unset"),
        (o.PatchEntity("bob", set_fields={"a": Field(math.nan)}), InvalidDelta, "finite"),
        (o.PatchEntity("bob", set_fields={"a": Field(Vec3(0.0, math.inf, 0.0))}), InvalidDelta, "finite"),
        (o.PatchEntity("bob", set_fields={"a": Field(2**64)}), InvalidDelta, "64 bits"),
        (o.SetMood("bob", Pad(1.5, 0, 0)), InvalidDelta, "outside [-1, 1]"),
        (o.RecordEvent(Event("  ")), InvalidDelta, "event.text is empty"),
        (o.RecordEvent(Event("x", actor_id="ghost")), UnknownEntity, "ghost"),
        (o.SetRelation(Relation("bob", "ghost", "likes")), UnknownEntity, "ghost"),
        (o.SetSceneFact("k", None), InvalidDelta, "no value"),
        (o.SetPersona(PersonaBinding("bob")), InvalidDelta, "exactly one"),
        (o.RecordMemory(Memory("ghost", "x")), UnknownEntity, "ghost"),
        (o.PatchEntity("bob", name="bad \ud800"), InvalidDelta, "UTF-8"),
        (o.PatchEntity("bob", set_fields={"f\udfff": Field(1)}), InvalidDelta, "UTF-8"),
        (o.SetSceneFact("k", ["ok", "\ud800"]), InvalidDelta, "UTF-8"),
    ],
)
def test_bad_ops_are_rejected_precisely(tavern: Session, op: o.Op, error: type, needle: str) -> None:
    err = rejected(tavern, o.PatchEntity("bob", set_fields={"fine": Field(1)}), op)
    assert type(err) is error
    assert needle in err.message and err.message.startswith("op 1:")
    assert tavern.revision == 1


def test_a_late_bad_op_rejects_the_batch_after_earlier_ops_checked(tavern: Session) -> None:
    rejected(tavern, o.RemoveEntity("bob"), o.PatchEntity("bob", name="zombie"))
    rejected(tavern, o.UpsertEntity(Entity(id="x")), o.UpsertEntity(Entity(id="x")))
    assert "x" not in tavern.world.entities and "bob" in tavern.world.entities


@pytest.mark.parametrize(
    ("limits", "ops", "limit", "error"),
    [
        (StateLimits(max_ops_per_batch=2), [o.RemoveLoreCard("a")] * 3, "max_ops_per_batch", LimitExceeded),
        (StateLimits(max_string_length=4), [o.PatchEntity("bob", name="Robert")], "max_string_length", LimitExceeded),
        (StateLimits(max_id_length=3), [o.UpsertEntity(Entity(id="abcd"))], "max_id_length", LimitExceeded),
        (StateLimits(max_value_depth=2), [o.SetSceneFact("k", [[[1]]])], "max_value_depth", LimitExceeded),
        (StateLimits(max_list_length=2), [o.SetSceneFact("k", [1, 2, 3])], "max_list_length", LimitExceeded),
        (
            StateLimits(max_fields_per_entity=2),
            [
                o.PatchEntity("bob", set_fields={"a": Field(1)}),
                o.PatchEntity("bob", set_fields={"b": Field(1), "c": Field(1)}),
            ],
            "max_fields_per_entity",
            LimitExceeded,
        ),
        (StateLimits(max_entities=3), [o.UpsertEntity(Entity(id="new"))], "max_entities", CapacityExceeded),
        (
            StateLimits(max_scene_facts=1),
            [o.SetSceneFact("a", 1), o.SetSceneFact("b", 1)],
            "max_scene_facts",
            CapacityExceeded,
        ),
    ],
)
def test_limits_name_themselves(tavern: Session, limits: StateLimits, ops: list[o.Op], limit: str, error: type) -> None:
    err = rejected(tavern, *ops, limits=limits)
    assert type(err) is error
    assert err.metadata["limit"] == limit and limit in err.message


def test_limits_count_the_batch_as_a_whole(tavern: Session) -> None:
    limits = StateLimits(max_entities=4)
    run(tavern, o.RemoveEntity("mug"), o.UpsertEntity(Entity(id="a")), o.UpsertEntity(Entity(id="b")), limits=limits)
    assert len(tavern.world.entities) == 4
    err = rejected(tavern, o.UpsertEntity(Entity(id="c")), limits=limits)
    assert isinstance(err, CapacityExceeded)
    run(
        tavern,
        o.PatchEntity("bob", set_fields={"a": Field(1)}, unset_fields=[]),
        limits=StateLimits(max_fields_per_entity=1),
    )
    run(
        tavern,
        o.PatchEntity("bob", set_fields={"b": Field(1)}, unset_fields=["a"]),
        limits=StateLimits(max_fields_per_entity=1),
    )
