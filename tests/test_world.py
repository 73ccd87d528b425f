"""tests/world.py is the one builder of test worlds, so its forms must agree: the
ops it sends over the wire are the ops it applies in memory, and a world built by
`session()`, through a real SessionStore and through a real server is one world."""

from __future__ import annotations

import msgspec
from world import HIDDEN, World, anchor_tavern, known_to, leak_tavern

from sidecar.config import StateLimits
from sidecar.servicers.convert_state_from_pb import ops_from_pb
from sidecar.servicers.convert_state_to_pb import world_to_pb
from sidecar.state import ops as o
from sidecar.state.model import EntityRef, Field, Moment, PersonaTemplate, Vec3
from sidecar.state.store import SessionStore
from sidecar.v1 import session_service_pb2 as spb


def every_kind_of_op() -> World:
    """At least one of each op the builder has a proto form for, in two batches."""
    return (
        World()
        .entity("room", "location", "Room", tags=["dim"])
        .entity("ann", "player", "Ann", at="room", hp=3, pos=Vec3(1.5, 2.0, -3.0), friend=EntityRef("room"),
                bag=Field(["rope", 2, True], known_to("ann")), secret=Field("x", HIDDEN))  # fmt: skip
        .entity("bob", "character", "Bob", at="room", description="A cook.", visibility=known_to("ann"))
        .event("Bob sneezes.", actor="bob", at="room", about=["ann"], moment=Moment("main", 42, "Day 3"))
        .relation("bob", "owes", "ann", 0.5)
        .mood("bob", 0.25, -0.5, 0.75)
        .scene("weather", "rain")
        .lore("lore-1", "Rooms", "Rooms are dim.", triggers=["room"], visibility=HIDDEN)
        .story(plot_essentials="A theft.", author_note="Keep it short.")
        .persona("bob", PersonaTemplate(identity="You are {npcName}.", reminder="Still {npcName}."), slots={"a": "b"})
        .then()
        .memory("bob", "Ann paid.")
        .persona("ann", template="hero")
        .add(o.RemoveLoreCard("lore-1"), o.RemoveEntity("room"))
    )


def test_the_wire_form_carries_exactly_the_ops() -> None:
    world = every_kind_of_op()
    assert ops_from_pb(world.to_pb()) == world.ops
    assert len(world.batches) == 2 and world.ops == [*world.batches[0], *world.batches[1]]


async def test_session_store_and_server_build_the_same_world(make_server) -> None:
    world = every_kind_of_op()
    built = world.session("w")
    assert built.revision == 2  # one revision per batch
    assert "room" not in built.world.entities and built.world.entities["ann"].location_id == ""  # the cascade ran

    store = SessionStore(StateLimits())
    await store.open("w")
    assert await world.apply_to(store, "w") == 2
    stored = store.get("w")
    assert msgspec.msgpack.encode(stored.world) == msgspec.msgpack.encode(built.world)
    assert stored.aliases == built.aliases

    running = await make_server()
    opened = await running.client.open_session("w")
    assert await world.send(running.client, "w", opened.revision) == 2
    state = await running.client.sessions.GetState(spb.GetStateRequest(session_id="w"))
    assert state.snapshot == world_to_pb(built.world)


def test_the_shared_scenes_are_what_their_docstrings_say() -> None:
    tavern = anchor_tavern()
    assert tavern.revision == 2
    assert [m.revision for m in tavern.world.memories] == [1, 2]
    assert tavern.world.personas["npc-maerwyn-7"].inline is not None
    leaky = leak_tavern()
    assert (leaky.id, leaky.revision, len(leaky.world.entities)) == ("save-slot-7f3a", 1, 11)
    assert leaky.aliases.by_id["BP_Goblin_C_2147483647"] == "npc_1"
