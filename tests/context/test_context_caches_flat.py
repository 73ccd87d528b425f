"""Issue 30, item 3: a long play session keeps the context engine's caches at the
current state's entries. Each cache held one prompt, scene, memory-line table or
timeline per turn, all of older states no run could hit again, until its size
bound (256 to 1,024 entries, the worlds they referenced with them): a 300-run soak
on the embedded model grew by about 8 MB in its last 200 runs, 2 MB with this.

Through the real App (store, context engine, run scheduler) with the scripted model:
narrations and two NPCs' dialogue, the world moving on every third turn."""

from __future__ import annotations

from fakes.runs_rig import build_rig, drain
from world import World

from sidecar.context.contract import DialogueInput, NarrateInput
from sidecar.context.session_lru import SessionLRU


async def test_the_caches_hold_the_current_state_not_every_turn() -> None:
    rig = build_rig()
    await rig.session()
    store, context = rig.app.store, rig.app.context
    await (
        World()
        .entity("cave", "location", "The Cave", description="A damp cave.")
        .entity("aria", "player", "Aria", at="cave")
        .entity("snag", "character", "Snag", at="cave", description="A goblin.")
        .entity("bo", "character", "Bo", at="cave", description="A bat keeper.")
        .apply_to(store, "s1")
    )
    held = []
    try:
        for i in range(60):
            if i % 3 == 0:
                turn = World().event(f"Turn {i}: the drum beats.").batches[0]
                await store.apply("s1", store.get("s1").revision, f"turn-{i}", turn)
            actor = ("", "snag", "bo")[i % 3]
            said = DialogueInput(text="Who goes there?", speaker_id="aria")
            out = await drain(rig.submit(actor_id=actor, run_input=said if actor else NarrateInput("A bat flies.", ())))
            assert out.error is None, out.error
            held.append(context.cached_entries())
    finally:
        await rig.runs.aclose()
    # Once every actor has spoken, the count stops growing (it grew by 3 a turn: 180).
    assert max(held[30:]) <= max(held[:15]), held


def test_an_entry_goes_when_its_scope_gets_a_newer_generation() -> None:
    cache: SessionLRU[tuple[str, str, int], str] = SessionLRU(100)
    cache.put(("s1", "snag", 1), "old prompt", scope=("s1", "snag"), generation=1)
    cache.put(("s1", "bo", 1), "bo's prompt", scope=("s1", "bo"), generation=1)
    cache.put(("s2", "snag", 1), "other session", scope=("s2", "snag"), generation=1)
    cache.put(("s1", "snag", 2), "another input, same state", scope=("s1", "snag"), generation=1)
    assert len(cache) == 4

    cache.put(("s1", "snag", 3), "new prompt", scope=("s1", "snag"), generation=2)
    assert cache.get(("s1", "snag", 1)) is None and cache.get(("s1", "snag", 2)) is None
    assert cache.get(("s1", "snag", 3)) == "new prompt"
    assert cache.get(("s1", "bo", 1)) == "bo's prompt" and cache.get(("s2", "snag", 1)) == "other session"

    # A run planned on the older state that stores late costs the newer entry a rebuild, nothing else.
    cache.put(("s1", "snag", 1), "late", scope=("s1", "snag"), generation=1)
    assert cache.get(("s1", "snag", 3)) is None and cache.get(("s1", "snag", 1)) == "late"


def test_forgetting_a_session_forgets_its_generations_and_eviction_its_scopes() -> None:
    cache: SessionLRU[tuple[str, int], int] = SessionLRU(2)
    cache.put(("s1", 1), 1, scope=("s1",), generation="a")
    cache.forget("s1")
    assert len(cache) == 0 and not cache._generation and not cache._scope_of
    for n in range(5):  # pushed out by the size bound: nothing kept for them
        cache.put(("s2", n), n, scope=("s2",), generation="b")
    assert len(cache) == 2 and set(cache._scope_of) == {("s2", 3), ("s2", 4)}
