"""Perspective: each thing appears in exactly the prompts that may hold it."""

from __future__ import annotations

import pytest
from minirender import render
from world import HIDDEN, PRIVATE, apply, known_to, leak_tavern

from sidecar.errors import InvalidRequest, UnknownEntity
from sidecar.projection import AliasRejected, Projection
from sidecar.state import ops as o
from sidecar.state.model import (
    Entity,
    EntityRef,
    Event,
    Field,
    LoreCard,
    Moment,
    MomentExposure,
    Relation,
    SessionOptions,
    Vec3,
)

GOBLIN = "BP_Goblin_C_2147483647"
HERO = "9b2d5c1e-hero-0000-0000-000000000001"
WOLF = "BP_Wolf_C_0000000042"
SPY = "BP_Spy_C_0000000099"
CHEST = "BP_Chest_C_0000000777"
RING = "ITEM_Ring_ÿ_0001"
TAVERN = "LOC_Tavern_0001"
FOREST = "LOC_Forest_0002"
WORLD = "/Game/Maps/World.World"
THIEVES = "FAC_Thieves_0001"
CULT = "FAC_Cult_0001"


def visible(p: Projection) -> set[str]:
    return {e.id for e in p.visible_entities()}


def prompt(p: Projection) -> str:
    return "\n".join(m["content"] for m in render(p, "What now?"))


def test_what_each_actor_perceives():
    s = leak_tavern()
    assert visible(Projection(s, GOBLIN)) == {GOBLIN, TAVERN, WORLD, HERO, CHEST, THIEVES, CULT}
    # The hero also perceives what it carries; the cult is known only to the goblin.
    assert visible(Projection(s, HERO)) == {HERO, TAVERN, WORLD, GOBLIN, CHEST, RING, THIEVES}
    assert visible(Projection(s, WOLF)) == {WOLF, FOREST, WORLD, THIEVES}
    # Hidden reaches no prompt at all, not even a prompt of its own.
    with pytest.raises(InvalidRequest, match="hidden"):
        Projection(s, SPY)
    # The narrator with nothing named: only location-less public things.
    assert visible(Projection(s, "")) == {WORLD, THIEVES}
    # The narrator's scene is what the input names and where that is.
    assert visible(Projection(s, "", named_ids=[GOBLIN])) == {GOBLIN, TAVERN, WORLD, HERO, CHEST, THIEVES}


def test_visible_entities_and_can_see_agree():
    s = leak_tavern()
    for actor in (GOBLIN, HERO, WOLF, ""):
        p = Projection(s, actor)
        assert {e.id for e in s.world.entities.values() if p.can_see(e)} == visible(p)


def test_npc_in_another_location_appears_only_where_it_should():
    s = leak_tavern()
    wolf = s.aliases.by_id[WOLF]
    assert wolf in prompt(Projection(s, WOLF))
    assert wolf not in prompt(Projection(s, GOBLIN))
    assert wolf not in prompt(Projection(s, HERO))
    assert wolf not in prompt(Projection(s, ""))
    # The goblin's description mentions the wolf by engine ID: the goblin reads "someone".
    assert "owes someone money" in prompt(Projection(s, GOBLIN))
    # Named by the input, the wolf enters the goblin's view (and the description says so).
    p = Projection(s, GOBLIN, named_ids=[WOLF])
    assert wolf in prompt(p)
    assert f"owes {wolf} money" in prompt(p)


def test_hidden_field_appears_nowhere():
    s = leak_tavern()
    for actor in (GOBLIN, HERO, WOLF, ""):
        named = [GOBLIN] if actor in ("", WOLF) else []
        assert "secretly the king" not in prompt(Projection(s, actor, named_ids=named))
        assert "gm_note" not in prompt(Projection(s, actor, named_ids=named))


def test_private_and_known_to_fields():
    s = leak_tavern()
    goblin = s.world.entities[GOBLIN]
    assert Projection(s, GOBLIN).fields(goblin) == {
        "hp": "12",
        "position": "[1.5, 2, 3]",
        "grudge": "hates the wolf",
        "password": "swordfish-77",
    }
    assert Projection(s, HERO).fields(goblin) == {"hp": "12", "position": "[1.5, 2, 3]", "password": "swordfish-77"}
    assert Projection(s, "", named_ids=[GOBLIN]).fields(goblin) == {"hp": "12", "position": "[1.5, 2, 3]"}
    assert Projection(s, WOLF).fields(goblin) == {}  # cannot see the goblin at all
    assert "swordfish-77" in prompt(Projection(s, HERO))
    assert "swordfish-77" not in prompt(Projection(s, WOLF, named_ids=[GOBLIN]))
    assert "hates the wolf" not in prompt(Projection(s, HERO))


def test_hidden_and_private_entities_stay_out_even_when_named():
    s = leak_tavern()
    spy = s.aliases.by_id[SPY]
    for actor in (GOBLIN, HERO, ""):
        p = Projection(s, actor, named_ids=[SPY])
        assert not p.can_see(s.world.entities[SPY])
        assert spy not in prompt(p)
        assert p.text(f"{SPY} watches") == "someone watches"  # not even its alias
    apply(s, o.PatchEntity(CHEST, visibility=PRIVATE))
    assert not Projection(s, HERO, named_ids=[CHEST]).can_see(s.world.entities[CHEST])


def test_coordinate_fields_and_moment_are_suppressed_unless_exposed():
    s = leak_tavern(SessionOptions(coordinate_fields=["position"]))
    goblin = s.world.entities[GOBLIN]
    p = Projection(s, GOBLIN)
    assert "position" not in p.fields(goblin)
    moment = Moment(timeline="tl-main-0001", tick=987654321, calendar="3rd of Frostmonth")
    assert p.moment_text(moment) == ""
    assert p.guard_moment(moment) == moment
    s.options.exposed_coordinate_fields = ["position"]
    s.options.expose_moment = MomentExposure(calendar=True)
    p = Projection(s, GOBLIN)
    assert p.fields(goblin)["position"] == "[1.5, 2, 3]"
    assert p.moment_text(moment) == "3rd of Frostmonth"
    assert p.guard_moment(moment) == Moment(timeline="tl-main-0001", tick=987654321, calendar="")
    s.options.expose_moment = MomentExposure(calendar=True, timeline=True, tick=True)
    assert Projection(s, GOBLIN).moment_text(moment) == "3rd of Frostmonth, timeline tl-main-0001, tick 987654321"
    assert Projection(s, GOBLIN).moment_text(None) == ""


def test_value_text_renders_references_as_aliases_or_generic_words():
    s = leak_tavern()
    p = Projection(s, GOBLIN)
    assert p.value_text(EntityRef(HERO)) == "player_1"
    assert p.value_text(EntityRef(WOLF)) == "someone"
    assert p.value_text(EntityRef(FOREST)) == "somewhere"
    assert p.value_text(EntityRef("never-existed-0001")) == "something"
    assert p.value_text([EntityRef(CHEST), True, 2, 0.5, Vec3(1, 2, 3)]) == "[item_1, true, 2, 0.5, (1, 2, 3)]"
    assert p.value_text(f"{CHEST} and {HERO}") == "item_1 and player_1"


def test_field_names_and_refs_are_projected():
    s = leak_tavern()
    apply(s, o.PatchEntity(GOBLIN, set_fields={f"debt_to_{WOLF}": Field(EntityRef(WOLF))}))
    fields = Projection(s, GOBLIN).fields(s.world.entities[GOBLIN])
    assert fields["debt_to_someone"] == "someone"


def test_events_relations_lore():
    s = leak_tavern()
    apply(
        s,
        o.RecordEvent(Event(text="a fight", location_id=TAVERN)),
        o.RecordEvent(Event(text="a howl", location_id=FOREST)),
        o.RecordEvent(Event(text="a whisper", actor_id=HERO, visibility=PRIVATE)),
        o.RecordEvent(Event(text="a pact", visibility=known_to(GOBLIN))),
        o.RecordEvent(Event(text="a god stirs", visibility=HIDDEN)),
        o.SetRelation(Relation(GOBLIN, WOLF, "fears")),
        o.SetRelation(Relation(GOBLIN, HERO, "likes")),
        o.SetRelation(Relation(HERO, GOBLIN, "suspects", visibility=PRIVATE)),
        o.UpsertLoreCard(LoreCard(id="LORE-0001", title="Guilds", text="Thieves rule")),
        o.UpsertLoreCard(LoreCard(id="LORE-0002", title="Cult", visibility=known_to(GOBLIN))),
        o.UpsertLoreCard(LoreCard(id="LORE-0003", title="Truth", visibility=HIDDEN)),
    )
    w = s.world

    def seen(actor: str) -> tuple[set[str], set[str], set[str]]:
        p = Projection(s, actor)
        return (
            {e.text for e in w.events if p.can_see_event(e)},
            {r.kind for r in w.relations if p.can_see_relation(r)},
            {c.title for c in w.lore.values() if p.can_see_card(c)},
        )

    assert seen(GOBLIN) == ({"a fight", "a pact"}, {"likes"}, {"Guilds", "Cult"})
    assert seen(HERO) == ({"a fight", "a whisper"}, {"likes", "suspects"}, {"Guilds"})
    assert seen(WOLF) == ({"a howl"}, set(), {"Guilds"})
    assert seen("") == (set(), set(), {"Guilds"})


def test_resolve_maps_back_and_rejects():
    s = leak_tavern()
    p = Projection(s, GOBLIN)
    assert p.resolve("player_1") == HERO
    assert p.resolve(" item_1 ") == CHEST
    assert p.resolve("npc_1") == GOBLIN
    cases = {
        "npc_99": "not a name you were given",  # never issued
        "Player_1": "not a name you were given",  # no guessing, not even case
        s.aliases.by_id[WOLF]: "not something you can perceive",  # elsewhere
        s.aliases.by_id[SPY]: "not something you can perceive",  # hidden
        s.aliases.by_id[RING]: "not something you can perceive",  # in the hero's pocket
        HERO: "not a name you were given",  # an engine ID is not an alias
    }
    for alias, reason in cases.items():
        with pytest.raises(AliasRejected) as err:
            p.resolve(alias)
        assert err.value.alias == alias
        assert reason in err.value.reason
        for eid in s.world.entities:
            assert eid not in err.value.reason
    apply(s, o.RemoveEntity(CHEST))
    with pytest.raises(AliasRejected, match="no longer here"):
        Projection(s, GOBLIN).resolve("item_1")


def test_unknown_actor_or_named_entity():
    s = leak_tavern()
    with pytest.raises(UnknownEntity):
        Projection(s, "nobody-0001")
    with pytest.raises(UnknownEntity):
        Projection(s, GOBLIN, named_ids=["nobody-0001"])
    with pytest.raises(UnknownEntity):
        Projection(s, GOBLIN).alias("nobody-0001")


def test_index_follows_revisions():
    s = leak_tavern()
    assert WOLF not in visible(Projection(s, GOBLIN))
    apply(s, o.PatchEntity(WOLF, location_id=TAVERN))
    assert WOLF in visible(Projection(s, GOBLIN))
    assert WOLF not in visible(Projection(s, "", named_ids=[FOREST]))


def test_a_prompt_touches_only_what_is_near_not_the_whole_world(monkeypatch):
    # Structural, not timed: with the location index, one actor's view looks at its
    # surroundings only, so its cost does not grow with the session.
    s = leak_tavern()
    apply(s, *(o.UpsertEntity(Entity(id=f"BP_Far_C_{i:07d}", location_id=FOREST)) for i in range(2000)))
    calls = 0
    original = Projection.can_see

    def counting(self, entity):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return original(self, entity)

    monkeypatch.setattr(Projection, "can_see", counting)
    p = Projection(s, GOBLIN)
    assert len(p.visible_entities()) == 7
    assert calls < 20
