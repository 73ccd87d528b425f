"""A delta ID is remembered with a digest of its batch (issue 24, item 11): a
retry of the same batch is a replay, the same ID over other ops is
DeltaIdReused and applies nothing. The digests live as long as the IDs do:
through the journal's tail and snapshots (a restart), ReplaceState, and the
window's eviction; journals written before digests were kept still load."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from sidecar.config import StateLimits
from sidecar.errors import DeltaIdReused
from sidecar.state import codec
from sidecar.state import ops as o
from sidecar.state.model import Entity, Event, Field, Session, World
from sidecar.state.store import JOURNAL_FILE, SessionStore


def enc(x: object) -> bytes:
    return msgspec.msgpack.encode(x)


def upsert(entity_id: str, **fields: object) -> o.UpsertEntity:
    return o.UpsertEntity(Entity(id=entity_id, fields={k: Field(v) for k, v in fields.items()}))  # type: ignore[arg-type]


async def reopen(state_dir: Path | None, **limits: object) -> SessionStore:
    s = SessionStore(StateLimits(**limits), str(state_dir) if state_dir else None)  # type: ignore[arg-type]
    await s.start()
    return s


async def test_a_reused_delta_id_with_other_ops_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    store = await reopen(tmp_path)
    await store.open("g")
    assert await store.apply("g", 0, "d1", [upsert("bob", hp=1)]) == (1, False)
    assert await store.apply("g", 1, "d2", [upsert("ann")]) == (2, False)
    before = enc(store.get("g"))
    for other in ([upsert("bob", hp=2)], [upsert("cat")], [], [upsert("bob", hp=1), upsert("cat")]):
        for base in (2, 0):  # the current base or the original one: the reuse is found first
            with pytest.raises(DeltaIdReused) as info:
                await store.apply("g", base, "d1", other)
            assert info.value.revision == 1 and info.value.metadata == {"revision": "1"}
            assert "'d1'" in info.value.message and "revision 1" in info.value.message
    assert enc(store.get("g")) == before
    # The original batch is still a replay, also with its maps in another order.
    assert await store.apply("g", 0, "d1", [upsert("bob", hp=1)]) == (1, True)
    await store.apply("g", 2, "d3", [upsert("eve", a=1, b="x")])
    assert await store.apply("g", 2, "d3", [upsert("eve", b="x", a=1)]) == (3, True)
    with pytest.raises(DeltaIdReused):
        await store.apply("g", 3, "d3", [upsert("eve", a=1, b="y")])
    await store.aclose()
    # Nothing refused reached the journal: a restart has the same session.
    after = await reopen(tmp_path)
    assert after.get("g").revision == 3 and set(after.get("g").world.entities) == {"bob", "ann", "eve"}
    await after.aclose()


def test_the_digest_is_of_the_batch_not_of_its_map_order() -> None:
    a = [o.UpsertEntity(Entity(id="e", fields={"x": Field(1), "y": Field([1, "a"])})), o.SetSceneFact("k", 1.5)]
    b = [o.UpsertEntity(Entity(id="e", fields={"y": Field([1, "a"]), "x": Field(1)})), o.SetSceneFact("k", 1.5)]
    assert codec.ops_digest(a) == codec.ops_digest(b)
    assert codec.ops_digest(a) != codec.ops_digest(a[:1])
    assert codec.ops_digest(a) != codec.ops_digest(list(reversed(a)))  # op order is the batch's meaning
    assert codec.ops_digest(a) != codec.ops_digest([o.UpsertEntity(Entity(id="e", fields={"x": Field(1.0)}))])


async def test_digests_live_as_long_as_their_ids(tmp_path: Path) -> None:
    store = await reopen(tmp_path, delta_id_window=3, journal_compact_records=5)
    await store.open("g")
    for i in range(6):
        await store.apply("g", i, f"w{i}", [upsert(f"e{i}")])
    s = store.get("g")
    assert list(s.recent_deltas) == ["w3", "w4", "w5"] and sorted(s.delta_digests) == ["w3", "w4", "w5"]
    # Past the window an ID is forgotten with its digest: a new batch (and stale here).
    assert await store.apply("g", 6, "w0", [upsert("z")]) == (7, False)
    # ReplaceState keeps the window and its digests.
    await store.replace("g", World(entities={"k": Entity(id="k")}))
    with pytest.raises(DeltaIdReused):
        await store.apply("g", 8, "w5", [upsert("other")])
    assert await store.apply("g", 0, "w5", [upsert("e5")]) == (6, True)
    await store.aclose()
    # A restart brings them back, from the snapshot (compaction ran) and the tail alike.
    again = await reopen(tmp_path, delta_id_window=3, journal_compact_records=5)
    assert again.get("g").delta_digests == s.delta_digests
    with pytest.raises(DeltaIdReused):
        await again.apply("g", 8, "w0", [upsert("y")])
    assert await again.apply("g", 6, "w0", [upsert("z")]) == (7, True)
    await again.apply("g", 8, "w9", [upsert("e9")])
    await again.aclose()
    third = await reopen(tmp_path, delta_id_window=3, journal_compact_records=5)
    with pytest.raises(DeltaIdReused):
        await third.apply("g", 9, "w9", [upsert("e8")])
    # A save does not carry the window: an import starts it empty.
    await third.import_("copy", third.export("g"))
    assert await third.apply("copy", 9, "w9", [upsert("e8")]) == (10, False)
    await third.aclose()


#: The journal's tables as they were before delta digests (commit 484ed18).
_OLD_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, snapshot BLOB NOT NULL);
CREATE TABLE records (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, revision INTEGER NOT NULL,
    delta_id TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
"""


async def test_a_journal_from_before_digests_loads_and_its_ids_replay_as_before(tmp_path: Path) -> None:
    old = Session(id="g", revision=1, recent_deltas={"d1": 1})
    old.world.entities["bob"] = Entity(id="bob")
    snapshot = msgspec.msgpack.decode(await codec.encode_snapshot(old, "g"))
    shell = msgspec.msgpack.decode(snapshot["shell"])
    del shell["delta_digests"]  # the old Session had no such field
    snapshot["shell"] = enc(shell)
    db = sqlite3.connect(tmp_path / JOURNAL_FILE)
    db.executescript(_OLD_SCHEMA)
    db.execute("INSERT INTO sessions VALUES ('g', 0, ?)", (enc(snapshot),))
    db.execute(
        "INSERT INTO records VALUES ('g', 1, 'delta', 2, 'd2', ?)",
        (codec.encode_ops([o.RecordEvent(Event("old"))]),),
    )
    db.commit()
    db.close()

    store = await reopen(tmp_path)
    s = store.get("g")
    assert (s.revision, list(s.recent_deltas), s.delta_digests) == (2, ["d1", "d2"], {})
    # Remembered without a digest: a replay whatever the ops, as before digests.
    assert await store.apply("g", 0, "d1", [upsert("anything")]) == (1, True)
    assert await store.apply("g", 1, "d2", []) == (2, True)
    assert await store.apply("g", 2, "d3", [upsert("cat")]) == (3, False)
    await store.aclose()
    again = await reopen(tmp_path)
    with pytest.raises(DeltaIdReused):
        await again.apply("g", 3, "d3", [upsert("dog")])
    assert await again.apply("g", 2, "d3", [upsert("cat")]) == (3, True)
    await again.aclose()


async def test_without_a_state_dir_the_same_rules_hold() -> None:
    store = await reopen(None)
    await store.open("g")
    await store.apply("g", 0, "d1", [upsert("bob")])
    with pytest.raises(DeltaIdReused):
        await store.apply("g", 1, "d1", [upsert("ann")])
    assert await store.apply("g", 0, "d1", [upsert("bob")]) == (1, True)
    assert store.get("g").revision == 1
