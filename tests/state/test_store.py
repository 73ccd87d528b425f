"""SessionStore: sessions, revisions, idempotent replays, waits, resync, saves,
and the SQLite journal (recovery, compaction, a failing commit)."""

from __future__ import annotations

import asyncio
import sqlite3
import zlib
from pathlib import Path

import msgspec
import pytest
from waits import eventually

from sidecar.config import StateLimits
from sidecar.errors import (
    CapacityExceeded,
    DeltaIdReused,
    InvalidBlob,
    InvalidRequest,
    LimitExceeded,
    RevisionNotReached,
    SessionExists,
    SessionNotFound,
    ShuttingDown,
    SidecarError,
    StaleRevision,
    UnknownEntity,
)
from sidecar.state import codec
from sidecar.state import ops as o
from sidecar.state.journal import JournalError
from sidecar.state.model import (
    ActorUsage,
    Entity,
    EntityRef,
    Event,
    Field,
    SessionOptions,
    TranscriptEntry,
    Vec3,
    World,
)
from sidecar.state.store import SessionStore


def enc(x: object) -> bytes:
    return msgspec.msgpack.encode(x)


def upsert(entity_id: str, kind: str = "character", **kw: object) -> o.UpsertEntity:
    return o.UpsertEntity(Entity(id=entity_id, kind=kind, **kw))  # type: ignore[arg-type]


@pytest.fixture
async def store() -> SessionStore:
    s = SessionStore(StateLimits(delta_id_window=3, max_sessions=3))
    await s.start()
    return s


async def test_open_creates_resumes_and_updates_options(store: SessionStore) -> None:
    s, created = await store.open("g", SessionOptions(profile="a"))
    assert created and s.revision == 0 and s.options.profile == "a"
    again, created = await store.open("g", SessionOptions(profile="b"))
    assert again is s and not created and s.options.profile == "a"
    await store.open("g", SessionOptions(profile="b"), update_options=True)
    assert s.options.profile == "b"
    generated, created = await store.open("")
    assert created and generated.id and generated.id in store.session_ids()
    with pytest.raises(LimitExceeded):
        await store.open("x" * 300)
    await store.open("third")
    with pytest.raises(CapacityExceeded):
        await store.open("fourth")


async def test_revisions_stale_base_and_replays(store: SessionStore) -> None:
    s, _ = await store.open("g")
    assert await store.apply("g", 0, "d1", [upsert("bob")]) == (1, False)
    assert await store.apply("g", 0, "d1", [upsert("bob")]) == (1, True)  # retry: applied once
    before = enc(s)
    with pytest.raises(StaleRevision) as info:
        await store.apply("g", 0, "d2", [upsert("ann")])
    assert info.value.metadata == {"current_revision": "1"} and enc(s) == before
    assert await store.apply("g", 1, "", []) == (2, False)  # empty batch: still a revision
    for i, rev in enumerate(range(3, 6)):
        await store.apply("g", rev - 1, f"w{i}", [])
    # The window holds 3 IDs: d1 is forgotten, so its retry is judged as new (and is stale).
    with pytest.raises(StaleRevision):
        await store.apply("g", 0, "d1", [upsert("bob")])
    assert list(s.recent_deltas) == ["w0", "w1", "w2"]
    with pytest.raises(SessionNotFound):
        await store.apply("nope", 0, "", [])


async def test_a_rejected_batch_leaves_the_session_unchanged(store: SessionStore) -> None:
    s, _ = await store.open("g")
    await store.apply("g", 0, "d1", [upsert("bob")])
    before = enc(s)
    with pytest.raises(UnknownEntity):
        await store.apply("g", 1, "d2", [o.PatchEntity("bob", name="B"), o.PatchEntity("ghost", name="G")])
    assert enc(s) == before
    # The rejected delta_id was not remembered: a fixed retry applies.
    assert await store.apply("g", 1, "d2", [o.PatchEntity("bob", name="B")]) == (2, False)


async def test_wait_for_revision(store: SessionStore) -> None:
    await store.open("g")
    waiter = asyncio.create_task(store.wait_for_revision("g", 2, 5.0))
    waiting = store._slots["g"].waiters
    await eventually(lambda: len(waiting) == 1, what="the waiter is registered")
    await store.apply("g", 0, "", [])
    # Revision 1 is not enough: the waiter is still registered and its future untouched
    # (waking happens inside apply, so this holds or fails now, with no waiting).
    assert len(waiting) == 1 and not waiting[0][1].done() and not waiter.done()
    await store.apply("g", 1, "", [])
    await asyncio.wait_for(waiter, 1.0)
    await store.wait_for_revision("g", 1, 0.0)  # already there
    with pytest.raises(RevisionNotReached) as info:
        await store.wait_for_revision("g", 9, 0.01)
    assert info.value.metadata["current_revision"] == "2"
    closing = asyncio.create_task(store.wait_for_revision("g", 9, 5.0))
    await eventually(lambda: len(waiting) == 1, what="the second waiter is registered")
    await store.close("g")
    with pytest.raises(SessionNotFound):
        await closing


async def test_replace_resets_world_keeps_aliases_and_checks_revision(store: SessionStore) -> None:
    s, _ = await store.open("g")
    await store.apply("g", 0, "", [upsert("bob"), upsert("ann"), o.RecordEvent(Event("hi", actor_id="bob"))])
    bob_alias = s.aliases.by_id["bob"]
    world = World(
        entities={
            "carl": Entity(id="carl", kind="character", fields={"friend": Field(EntityRef("bob"))}),
            "bob": Entity(id="bob", kind="character", location_id="inn"),
            "inn": Entity(id="inn", kind="location"),
        },
        events=[Event("old news", actor_id="dave")],  # history may name entities that are gone
    )
    assert await store.replace("g", world) == 2
    assert set(s.world.entities) == {"carl", "bob", "inn"}
    assert s.aliases.by_id["bob"] == bob_alias and "ann" in s.aliases.by_id
    assert s.world.events[0].revision == 2
    assert await store.replace("g", World(), revision=10) == 10
    with pytest.raises(InvalidRequest):
        await store.replace("g", World(), revision=10)
    assert await store.replace("g", World(), revision=4, allow_rewind=True) == 4
    before = enc(s)
    bad = World(entities={"x": Entity(id="x", location_id="missing")})
    with pytest.raises(UnknownEntity):
        await store.replace("g", bad)
    assert enc(s) == before


async def test_export_import_round_trip_and_bad_blobs(store: SessionStore) -> None:
    s, _ = await store.open("g", SessionOptions(alias_mode="kind", profile="p"))
    await store.apply(
        "g",
        0,
        "d1",
        [
            upsert(
                "bob",
                fields={"pos": Field(Vec3(1.0, 2.0, 3.0)), "bag": Field([EntityRef("bob"), [Vec3(0.0, 0.0, 1.0)]])},
            )
        ],
    )
    s.transcripts["bob"] = [TranscriptEntry(role="actor", text="hello")]
    s.notes["bob"] = "likes ale"
    s.usage["bob"] = ActorUsage(prompt_tokens=5, runs=1)
    blob = store.export("g")
    sid, rev = await store.import_("copy", blob)
    copy = store.get("copy")
    assert (sid, rev) == ("copy", 1)
    window = {"recent_deltas": s.recent_deltas, "delta_digests": s.delta_digests}
    assert enc(msgspec.structs.replace(copy, id="g", **window)) == enc(s)
    assert copy.recent_deltas == copy.delta_digests == {}  # the replay window is not part of a save
    with pytest.raises(SessionExists):
        await store.import_("copy", blob)
    # Overwrite keeps the Session object (runs hold it) and rewinds to the save.
    await store.apply("copy", 1, "", [upsert("ann")])
    assert await store.import_("copy", blob, overwrite=True) == ("copy", 1)
    assert store.get("copy") is copy and "ann" not in copy.world.entities

    env = msgspec.msgpack.decode(blob)
    newer = dict(env, version=codec.BLOB_VERSION + 1)
    corrupt = dict(env, payload=env["payload"][:-1] + b"\x00")
    bad_state = World(entities={"x": Entity(id="x", location_id="missing")})
    payload = enc(msgspec.structs.replace(s, world=bad_state))
    invalid = dict(env, payload=payload, crc32=zlib.crc32(payload))
    before = enc(copy)
    for bad, needle in [
        (enc(newer), "newer"),
        (blob[: len(blob) // 2], "truncated"),
        (b"\x00garbage", "not a session blob"),
        (b"", "empty"),
        (enc(corrupt), "checksum"),
        (enc(invalid), "not valid"),
        (enc({"format": "zip", "version": 1, "session_id": "", "revision": 0, "crc32": 0, "payload": b""}), "format"),
    ]:
        with pytest.raises(InvalidBlob) as info:
            await store.import_("copy", bad, overwrite=True)
        assert needle in info.value.message
    assert enc(copy) == before


# -- the journal -------------------------------------------------------------------


async def reopen(tmp_path: Path, **limits: object) -> SessionStore:
    s = SessionStore(StateLimits(**limits), str(tmp_path))  # type: ignore[arg-type]
    await s.start()
    return s


async def test_journal_recovers_every_acknowledged_change(tmp_path: Path) -> None:
    a = await reopen(tmp_path, journal_compact_records=4)
    s, _ = await a.open("g", SessionOptions(profile="x"))
    await a.apply("g", 0, "d1", [upsert("bob", fields={"bag": Field([Vec3(1.0, 2.0, 3.0), EntityRef("bob")])})])
    await a.apply("g", 1, "d2", [upsert("inn", "location"), o.PatchEntity("bob", location_id="inn")])
    await a.open("g", SessionOptions(profile="y"), update_options=True)
    s.transcripts["bob"] = [TranscriptEntry(role="actor", text="hi")]
    s.notes["bob"] = "n"
    await a.persist_extras("g")
    for i in range(3, 9):  # crosses the compaction threshold
        await a.apply("g", i - 1, f"d{i}", [o.RecordEvent(Event(f"tick {i}"))])
    await a.replace("g", World(entities={"inn": Entity(id="inn", kind="location")}), revision=20)
    await a.open("other")
    await a.apply("other", 0, "", [upsert("z")])
    await a.close("other")
    await a.import_("saved", a.export("g"))
    expected = enc(s)
    # No aclose(): a crash leaves the WAL as it is.
    b = await reopen(tmp_path)
    assert sorted(b.session_ids()) == ["g", "saved"]
    assert enc(b.get("g")) == expected
    assert b.get("g").options.profile == "y" and b.get("g").notes == {"bob": "n"}
    # The replay window survived too, with the digests of its batches.
    assert await b.apply("g", 0, "d8", [o.RecordEvent(Event("tick 8"))]) == (8, True)
    with pytest.raises(DeltaIdReused):
        await b.apply("g", 0, "d8", [])
    assert await b.apply("g", 20, "d21", [upsert("new")]) == (21, False)
    await b.aclose()
    c = await reopen(tmp_path)
    assert c.get("g").revision == 21 and "new" in c.get("g").world.entities
    await c.aclose()
    await a.aclose()


async def test_a_failed_commit_applies_and_acknowledges_nothing(tmp_path: Path) -> None:
    a = await reopen(tmp_path)
    s, _ = await a.open("g")
    await a.apply("g", 0, "d1", [upsert("bob")])
    before = enc(s)
    journal = a._journal
    assert journal is not None
    real_write = journal._write

    def failing(groups: object) -> None:
        raise OSError("disk full")

    journal._write = failing  # type: ignore[method-assign]
    with pytest.raises(JournalError) as info:
        await a.apply("g", 1, "d2", [upsert("ann")])
    assert isinstance(info.value, SidecarError) and "OSError" in info.value.message
    assert enc(s) == before
    journal._write = real_write  # type: ignore[method-assign]
    assert await a.apply("g", 1, "d2", [upsert("ann")]) == (2, False)
    b = await reopen(tmp_path)
    assert enc(b.get("g")) == enc(s)
    await b.aclose()
    await a.aclose()


async def test_concurrent_applies_across_sessions_group_commit(tmp_path: Path) -> None:
    a = await reopen(tmp_path)
    for i in range(20):
        await a.open(f"s{i}")
    results = await asyncio.gather(*(a.apply(f"s{i}", 0, "d", [upsert("x")]) for i in range(20)))
    assert results == [(1, False)] * 20
    assert a._journal is not None and a._journal.commits < 20 + 20  # opens + fewer commits than applies
    await a.aclose()
    b = await reopen(tmp_path)
    assert all(b.get(f"s{i}").revision == 1 for i in range(20))
    await b.aclose()


async def test_compaction_of_a_big_session_recovers_exactly(tmp_path: Path) -> None:
    a = await reopen(tmp_path, journal_compact_records=2)
    s, _ = await a.open("g")
    ops: list[o.Op] = [upsert(f"n{i}", fields={"i": Field(i), "v": Field([Vec3(1.0, 0.0, 0.0)])}) for i in range(1200)]
    await a.apply("g", 0, "d1", ops)
    await a.apply("g", 1, "d2", [o.PatchEntity("n5", set_fields={"i": Field(-5)})])
    await a.apply("g", 2, "d3", [o.RemoveEntity("n7")])
    assert a._slots["g"].tail_records == 1  # compacted after the second record
    b = await reopen(tmp_path)
    assert enc(b.get("g")) == enc(s)
    assert len(b.get("g").world.entities) == 1199
    await b.aclose()
    await a.aclose()


async def test_a_record_that_does_not_replay_stops_recovery_cleanly(tmp_path: Path) -> None:
    a = await reopen(tmp_path)
    await a.open("g")
    await a.apply("g", 0, "d1", [upsert("bob")])
    await a.apply("g", 1, "d2", [upsert("ann")])
    await a.apply("g", 2, "d3", [upsert("cat")])
    await a.aclose()
    with sqlite3.connect(tmp_path / "state.sqlite3") as db:
        db.execute("UPDATE records SET body = x'c1c1' WHERE delta_id = 'd2'")
    b = await reopen(tmp_path)
    s = b.get("g")
    assert s.revision == 1 and set(s.world.entities) == {"bob"}
    assert await b.apply("g", 1, "d2", [upsert("ann")]) == (2, False)  # the journal takes new records
    expected = enc(s)
    await b.aclose()
    c = await reopen(tmp_path)
    assert enc(c.get("g")) == expected
    await c.aclose()


async def test_a_failed_compaction_does_not_fail_the_committed_write(tmp_path: Path) -> None:
    a = await reopen(tmp_path, journal_compact_records=1)
    s, _ = await a.open("g")

    async def failing(session: object, session_id: str) -> bytes:
        raise JournalError("disk full during compaction")

    real = codec.encode_snapshot
    codec.encode_snapshot = failing  # type: ignore[assignment]
    try:
        assert await a.apply("g", 0, "d1", [upsert("bob")]) == (1, False)
    finally:
        codec.encode_snapshot = real  # type: ignore[assignment]
    assert a._slots["g"].tail_records == 1
    await a.apply("g", 1, "d2", [upsert("ann")])  # compacts now
    assert a._slots["g"].tail_records == 0
    await a.aclose()
    with pytest.raises(ShuttingDown):
        await a.apply("g", 2, "d3", [])
    b = await reopen(tmp_path)
    assert enc(b.get("g")) == enc(s)
    await b.aclose()
