"""Through the real SessionStore: export then import keeps aliases (and so the
prompt bytes), and a projection never serves a stale view after a resync or an
import that swaps the world at the same revision."""

from __future__ import annotations

from minirender import render
from world import leak_tavern

from sidecar.config import StateLimits
from sidecar.projection import Projection
from sidecar.state import ops as o
from sidecar.state.model import Entity, SessionOptions, World

GOBLIN = "BP_Goblin_C_2147483647"


async def _store_with_tavern(mode: str = "kind"):
    from sidecar.state.store import SessionStore

    store = SessionStore(StateLimits())
    await store.start()
    await store.open("save-slot-1", SessionOptions(alias_mode=mode))
    world = leak_tavern().world
    await store.apply("save-slot-1", 0, "d1", o.world_to_ops(world))
    return store


async def test_export_import_keeps_aliases_and_prompt_bytes():
    for mode in ("kind", "display_name"):
        store = await _store_with_tavern(mode)
        s = store.get("save-slot-1")
        before = render(Projection(s, GOBLIN), f"{GOBLIN} looks around")
        target, _ = await store.import_("save-slot-2", store.export("save-slot-1"))
        back = store.get(target)
        assert back.aliases == s.aliases
        assert render(Projection(back, GOBLIN), f"{GOBLIN} looks around") == before
        # A new entity after the import gets a fresh alias, not a reused one.
        await store.apply(target, back.revision, "d2", [o.UpsertEntity(Entity(id="BP_New_C_0000000001"))])
        assert back.aliases.by_id["BP_New_C_0000000001"] not in s.aliases.by_alias
        await store.aclose()


async def test_no_stale_view_after_import_overwrite_at_the_same_revision():
    store = await _store_with_tavern()
    s = store.get("save-slot-1")
    assert "Grub" in render(Projection(s, GOBLIN))[0]["content"]
    other = leak_tavern()
    other.world.entities[GOBLIN].name = "Snaga"
    other.world.entities["BP_Wolf_C_0000000042"].location_id = "LOC_Tavern_0001"  # the wolf came in
    other.revision = s.revision  # same revision, same entity count: only the content differs
    from sidecar.state.codec import export_blob

    await store.import_("save-slot-1", export_blob(other), overwrite=True)
    assert store.get("save-slot-1") is s  # the same Session object, updated in place
    p = Projection(s, GOBLIN)
    text = render(p)[0]["content"]
    assert "Snaga" in text and "Grub" not in text
    assert "BP_Wolf_C_0000000042" in {e.id for e in p.visible_entities()}
    await store.aclose()


async def test_no_stale_view_after_replace_state():
    store = await _store_with_tavern()
    s = store.get("save-slot-1")
    assert Projection(s, GOBLIN).visible_entities()
    world = World(entities={"BP_Other_C_0000000001": Entity(id="BP_Other_C_0000000001", kind="character")})
    await store.replace("save-slot-1", world)
    p = Projection(s, "BP_Other_C_0000000001")
    assert [e.id for e in p.visible_entities()] == ["BP_Other_C_0000000001"]
    await store.aclose()


async def test_journal_replay_reproduces_aliases(tmp_path):
    from sidecar.state.store import SessionStore

    for mode in ("kind", "display_name"):
        state_dir = str(tmp_path / mode)
        store = SessionStore(StateLimits(), state_dir)
        await store.start()
        await store.open("slot", SessionOptions(alias_mode=mode))
        world = leak_tavern().world
        ops = o.world_to_ops(world)
        await store.apply("slot", 0, "d1", ops[:5])
        await store.apply("slot", 1, "d2", ops[5:])
        await store.apply("slot", 2, "d3", [o.RemoveEntity(GOBLIN), o.UpsertEntity(Entity(id="BP_Late_C_0001"))])
        before = store.get("slot").aliases
        prompt = render(Projection(store.get("slot"), "9b2d5c1e-hero-0000-0000-000000000001"), "hi")
        await store.aclose()

        again = SessionStore(StateLimits(), state_dir)
        await again.start()
        s = again.get("slot")
        assert s.aliases == before
        assert render(Projection(s, "9b2d5c1e-hero-0000-0000-000000000001"), "hi") == prompt
        await again.aclose()
