"""Property tests of the state engine (pure, no grpc): random batches through
validate + apply equal the plain model, and a rejected batch changes nothing,
byte for byte."""

from __future__ import annotations

import asyncio
import tempfile

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from world import World
from worldgen import PlainModel, batch_strategy, world_as_model

from sidecar.config import StateLimits
from sidecar.errors import SidecarError
from sidecar.state.apply import apply_ops
from sidecar.state.model import Session, SessionOptions
from sidecar.state.store import SessionStore
from sidecar.state.validate import validate_batch

LIMITS = StateLimits(max_events=5, max_memories=4)


def _try(session: Session, batch) -> bool:
    before = msgspec.msgpack.encode(session)
    try:
        validate_batch(session.world, batch, LIMITS)
    except SidecarError:
        assert msgspec.msgpack.encode(session) == before, "validation touched the state"
        return False
    apply_ops(session, batch, session.revision + 1, LIMITS)
    return True


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_batches_match_the_plain_model(data) -> None:
    session = Session(id="s")
    model = PlainModel(max_events=LIMITS.max_events, max_memories=LIMITS.max_memories)
    world = World()
    for i, kind in enumerate(["location", "character", "item", "player"]):
        world.entity(f"e{i}", kind)
    seed = world.ops
    assert model.apply(seed) and _try(session, seed)
    most = 0
    for _ in range(data.draw(st.integers(1, 25), label="batches")):
        batch = data.draw(batch_strategy(sorted(session.world.entities)))
        expected = model.apply(batch)
        applied = _try(session, batch)
        assert applied == expected, f"engine {'applied' if applied else 'rejected'} what the model did not: {batch}"
        assert session.revision == model.revision
        assert world_as_model(session.world) == model.d
        most = max(most, len(model.d["entities"]))
    event(f"applied {min(model.revision, 10) // 5 * 5}+ batches, up to {min(most, 4)}+ entities")


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_aliases_are_unique_and_never_change(data) -> None:
    session = Session(id="s")
    seen: dict[str, str] = {}
    for _ in range(data.draw(st.integers(1, 15))):
        batch = data.draw(batch_strategy(sorted(session.world.entities)))
        _try(session, batch)
        for entity_id in session.world.entities:
            alias = session.aliases.by_id[entity_id]
            assert seen.setdefault(entity_id, alias) == alias
            assert session.aliases.by_alias[alias] == entity_id
    assert len(set(session.aliases.by_id.values())) == len(session.aliases.by_id)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_journal_brings_back_exactly_what_was_acknowledged(data) -> None:
    """Random batches (some rejected), option changes and compactions through a
    journaled store; a second store on the same dir holds the same bytes."""

    async def scenario(state_dir: str) -> None:
        limits = StateLimits(journal_compact_records=data.draw(st.integers(1, 6), label="compact every"))
        store = SessionStore(limits, state_dir)
        await store.start()
        session, _ = await store.open("s")
        for _ in range(data.draw(st.integers(1, 12), label="batches")):
            batch = data.draw(batch_strategy(sorted(session.world.entities)))
            try:
                await store.apply("s", session.revision, f"d{session.revision}", batch)
            except SidecarError:
                pass
            if data.draw(st.booleans(), label="touch options"):
                await store.open("s", SessionOptions(profile=str(session.revision)), update_options=True)
        expected = msgspec.msgpack.encode(session)
        again = SessionStore(limits, state_dir)
        await again.start()
        assert msgspec.msgpack.encode(again.get("s")) == expected
        await again.aclose()
        await store.aclose()

    with tempfile.TemporaryDirectory(prefix="journal-prop-") as d:
        asyncio.run(scenario(d))
