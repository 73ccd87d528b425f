"""ImportSession fuzzed with mutated valid save blobs (issue 13, item 8), through
a SessionStore journaling to real SQLite. Each example takes a real export,
replaces, deletes or adds one part of its payload (any depth, any type: huge
and negative ints, NaN, strings, lists, maps), fixes the checksum so the blob
passes the integrity check, and imports it over a live session.

The model: the import either fails with InvalidBlob and the session (memory and
journal) is byte-for-byte what it was, or it succeeds and the session is exactly
the blob's, still readable (GetState's conversion), exportable, writable, and
the same after a restart from the journal. Nothing else may happen."""

from __future__ import annotations

import asyncio
import tempfile
import zlib
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sidecar.config import StateLimits
from sidecar.errors import InvalidBlob
from sidecar.servicers.convert_state_to_pb import world_to_pb
from sidecar.state import codec
from sidecar.state import ops as o
from sidecar.state.model import (
    ActorUsage,
    Entity,
    EntityRef,
    Event,
    Field,
    LoreCard,
    Memory,
    Pad,
    PersonaBinding,
    Relation,
    TranscriptEntry,
    Vec3,
)
from sidecar.state.store import SessionStore
from sidecar.v1 import session_service_pb2 as spb

_enc = msgspec.msgpack.Encoder()

BASE_OPS: list[o.Op] = [
    o.UpsertEntity(Entity(id="inn", kind="location", name="Inn")),
    o.UpsertEntity(Entity(id="ann", kind="player", name="Ann")),
    o.UpsertEntity(Entity(id="bob", kind="character", name="Bob", location_id="inn", tags=["barkeep"],
                          fields={"hp": Field(7), "pos": Field(Vec3(1.0, 2.0, 3.0)),
                                  "friends": Field([EntityRef("ann"), "x", [1, 2.5]])})),
    o.RecordEvent(Event(text="Ann enters.", actor_id="ann", entity_ids=["inn"])),
    o.SetRelation(Relation("bob", "ann", "likes", 0.5)),
    o.SetMood("bob", Pad(0.2, -0.1, 0.0)),
    o.SetSceneFact("weather", "rain"),
    o.SetSceneFact("focus", EntityRef("bob")),
    o.UpsertLoreCard(LoreCard(id="l1", title="Inn", text="Old.", triggers=["inn"])),
    o.RecordMemory(Memory(actor_id="bob", text="Ann tipped well.")),
    o.SetPersona(PersonaBinding(actor_id="bob", template_name="barkeep", slots={"mood": "calm"})),
]

_SCALARS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([2**63, 2**63 - 1, 2**53, -1, 0, 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["", "bob", "ann", "inn", "nobody", "npc_1", "character", "hidden", "vec3", "ref"]),
    st.booleans(),
    st.none(),
    st.binary(max_size=4),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=4,
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


_INTS = st.one_of(
    st.sampled_from([2**63, 2**63 - 1, 2**64 - 1, 2**53, 2**53 - 1, -(2**63), -1, 0, 1, 2, 3]),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
)
_FLOATS = st.floats(allow_nan=True, allow_infinity=True)
_STRS = st.one_of(st.sampled_from(["", "bob", "ann", "inn", "nobody", "npc_1", "player_1", "hidden", "x" * 300]),
                  st.text(max_size=8))


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Mostly a value of the same type (so the blob still decodes and the checks
    behind decoding are what is tested), sometimes anything."""
    if type(value) is int:
        same: st.SearchStrategy[Any] = _INTS
    elif type(value) is float:
        same = _FLOATS
    elif type(value) is str:
        same = _STRS
    elif type(value) is list:
        same = st.lists(st.sampled_from(value), max_size=4) if value else st.just([])
    else:
        same = _VALUES
    return st.one_of(same, same, same, _VALUES)


def _mutate(payload: dict, data: st.DataObject) -> None:
    paths = _paths(payload)
    numbers = [p for p in paths if type(_at(payload, p)) in (int, float)]
    # Half the time a number: out-of-range numbers are what broke sessions for good.
    pool = numbers if numbers and data.draw(st.booleans(), label="a number") else paths
    path = data.draw(st.sampled_from(pool), label="path")
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    action = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]), label="action")
    if action == "delete" and isinstance(parent, dict):
        del parent[key]
    elif action == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(max_size=6), label="new key")] = data.draw(_VALUES, label="new value")
    else:
        parent[key] = data.draw(_like(parent[key]), label="value")


def _at(node: Any, path: tuple) -> Any:
    for step in path:
        node = node[step]
    return node


def _reforge(blob: bytes, payload: dict, data: st.DataObject) -> bytes | None:
    env = msgspec.msgpack.decode(blob)
    try:
        env["payload"] = _enc.encode(payload)
    except (OverflowError, TypeError):
        return None  # not representable in msgpack at all: no blob to import
    env["crc32"] = zlib.crc32(env["payload"])
    if data.draw(st.booleans(), label="envelope follows payload revision"):
        rev = payload.get("revision") if isinstance(payload, dict) else None
        if type(rev) is int and -(2**63) <= rev < 2**64:
            env["revision"] = rev
    return _enc.encode(env)


async def _base(state_dir: str) -> tuple[SessionStore, bytes]:
    store = SessionStore(StateLimits(), state_dir)
    await store.start()
    await store.open("s")
    await store.apply("s", 0, "d1", BASE_OPS)
    await store.apply("s", 1, "d2", [o.RemoveEntity("ann")])
    s = store.get("s")
    s.transcripts["bob"] = [TranscriptEntry(role="actor", text="Evening.", speaker_id="bob", unix_ms=5)]
    s.notes["bob"] = "likes Ann"
    s.usage["bob"] = ActorUsage(prompt_tokens=10, completion_tokens=3, cost_usd=0.001, runs=1)
    s.errors_by_reason["QUEUE_FULL"] = 1
    await store.persist_extras("s")
    return store, store.export("s")


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_blobs_are_refused_whole_or_imported_exactly(data: st.DataObject) -> None:
    async def scenario(state_dir: str) -> None:
        store, blob = await _base(state_dir)
        payload = msgspec.msgpack.decode(msgspec.msgpack.decode(blob)["payload"])
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            _mutate(payload, data)
        forged = _reforge(blob, payload, data)
        if forged is None:
            await store.aclose()
            return
        before = _enc.encode(store.get("s"))
        try:
            await store.import_("s", forged, overwrite=True)
        except InvalidBlob as exc:
            event(f"refused: {exc.message.split(':')[0][:40]}")
            assert _enc.encode(store.get("s")) == before, "a refused blob changed the session"
            expected = before
        else:
            event("imported")
            s = store.get("s")
            wanted = codec.decode_session(_enc.encode(payload))
            assert s.revision == wanted.revision
            assert _enc.encode(s.world) == _enc.encode(wanted.world)
            # GetState and ExportSession can answer (their responses are built as the servicer does).
            spb.GetStateResponse(revision=s.revision, snapshot=world_to_pb(s.world, [], []))
            spb.ExportSessionResponse(blob=store.export("s"), format_version=codec.BLOB_VERSION, revision=s.revision)
            again = codec.import_blob(store.export("s"))  # ExportSession can answer, and round-trips
            assert _enc.encode(again.world) == _enc.encode(s.world)
            if s.revision < 2**53 - 1:
                await store.apply("s", s.revision, "after", [])  # still writable
            expected = _enc.encode(store.get("s"))
        await store.aclose()
        restarted = SessionStore(StateLimits(), state_dir)
        await restarted.start()
        assert _enc.encode(restarted.get("s")) == expected
        await restarted.aclose()

    with tempfile.TemporaryDirectory(prefix="blob-fuzz-") as d:
        asyncio.run(scenario(d))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("world", "memories", 0, "actor_id"), "x" * 300),  # over max_id_length (a limit: LimitExceeded in a batch)
        (("world", "entities", "bob", "tags"), ["t"] * 1_100),  # over max_list_length
        (("world", "scene", "weather"), "w" * 20_000),  # over max_string_length
    ],
    ids=["id_length", "list_length", "string_length"],
)
def test_a_save_over_a_size_limit_is_an_invalid_blob_and_changes_nothing(path: tuple, value: Any) -> None:
    """A batch over a limit gets LIMIT_EXCEEDED; the same state inside a save is a blob
    that breaks the rules: INVALID_BLOB (docs/protocol.md, Saves), found by the fuzz test."""

    async def scenario(state_dir: str) -> None:
        store, blob = await _base(state_dir)
        try:
            payload = msgspec.msgpack.decode(msgspec.msgpack.decode(blob)["payload"])
            parent = _at(payload, path[:-1])
            parent[path[-1]] = value
            env = msgspec.msgpack.decode(blob)
            env["payload"] = _enc.encode(payload)
            env["crc32"] = zlib.crc32(env["payload"])
            before = _enc.encode(store.get("s"))
            with pytest.raises(InvalidBlob, match="over max_"):
                await store.import_("s", _enc.encode(env), overwrite=True)
            assert _enc.encode(store.get("s")) == before
        finally:
            await store.aclose()

    with tempfile.TemporaryDirectory() as d:
        asyncio.run(scenario(d))
