"""The session index reads the engine IDs of events, relations, lore cards and
memories once and reuses them while a revision holds the same records
(sidecar/projection/session_index.py): after any sequence of applied batches the
reused set is exactly the set read afresh, so a delta never leaves an engine ID
out of the leak guard."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from world import World
from worldgen import batch_strategy

from sidecar.config import StateLimits
from sidecar.errors import SidecarError
from sidecar.projection.session_index import SessionIndex
from sidecar.state import ops as o
from sidecar.state.apply import apply_ops
from sidecar.state.model import Event, LoreCard, Memory, Relation, Session, Visibility
from sidecar.state.validate import validate_batch

LIMITS = StateLimits(max_events=5, max_memories=4)

# Records that name IDs only in their visibility lists, which the generic batches never set.
SECRET_HOLDERS = st.sampled_from(
    [
        o.RecordEvent(Event(text="A whisper.", visibility=Visibility("known_to", ("k-event",)))),
        o.UpsertLoreCard(LoreCard("l3", text="A secret.", visibility=Visibility("known_to", ("k-card",)))),
        o.SetRelation(Relation("e0", "e1", "owes", 1.0, visibility=Visibility("known_to", ("k-rel",))), False),
        o.RecordMemory(Memory("e1", "Remembered.")),
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_engine_ids_reused_across_revisions_equal_the_ids_read_afresh(data) -> None:
    session = Session(id="s")
    seed = World()
    for i, kind in enumerate(["location", "character", "item", "player"]):
        seed.entity(f"e{i}", kind)
    apply_ops(session, seed.ops, 1, LIMITS)
    index = SessionIndex(session)
    for _ in range(data.draw(st.integers(1, 20), label="batches")):
        batch = data.draw(batch_strategy(sorted(session.world.entities)))
        batch += data.draw(st.lists(SECRET_HOLDERS, max_size=1))
        try:
            validate_batch(session.world, batch, LIMITS)
        except SidecarError:
            continue
        apply_ops(session, batch, session.revision + 1, LIMITS)
        index = SessionIndex(session, previous=index)
        fresh = SessionIndex(session)
        assert index.engine_ids == fresh.engine_ids, batch
        assert index.guard_ids == fresh.guard_ids


def test_a_batch_that_only_moves_a_field_rereads_no_record() -> None:
    session = Session(id="s")
    w = World().entity("e0", "location").entity("e1", "character", at="e0")
    for i in range(50):
        w.event(f"Event {i}.", at="e0", about=["e1"]).memory("e1", f"Memory {i}.")
    apply_ops(session, w.ops, 1, StateLimits())
    first = SessionIndex(session)
    apply_ops(session, [o.PatchEntity("e1", name="Renamed")], 2, StateLimits())
    second = SessionIndex(session, previous=first)
    assert all(second._id_parts[k] is first._id_parts[k] for k in first._id_parts)
    apply_ops(session, World().event("A new one.", about=["e1"]).ops, 3, StateLimits())
    third = SessionIndex(session, previous=second)
    assert third._id_parts["events"] is not second._id_parts["events"]
    assert third._id_parts["memories"] is second._id_parts["memories"]


@pytest.mark.parametrize("replace", ["world", "session"])
def test_a_new_world_is_read_afresh(replace: str) -> None:
    session = Session(id="s")
    apply_ops(session, World().entity("e0", "location").event("Old.", about=["e0"]).ops, 1, StateLimits())
    first = SessionIndex(session)
    if replace == "world":
        from sidecar.state.model import World as StateWorld

        session.world = StateWorld()
    apply_ops(session, World().entity("e9", "location").event("New.", about=["e9"]).ops, 2, StateLimits())
    second = SessionIndex(session, previous=first)
    assert second.engine_ids == SessionIndex(session).engine_ids
