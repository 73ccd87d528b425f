"""A save blob's payload is checked for a session's shape whole (issue 24,
item 8): a checksum-valid blob whose world is `{}`, absent, misspelt, or holds a
field of the wrong type is INVALID_BLOB naming the field's path, and changes
nothing; a real export still round-trips exactly.

The property's oracle does not know the schema: an import either is refused
and leaves the session as it was, or takes exactly what the blob says (its
re-export is the same payload), so nothing was defaulted, dropped or coerced."""

from __future__ import annotations

import asyncio
import tempfile
import zlib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_blob_fuzz import _VALUES, _base, _paths
from worldgen import batch_strategy

from sidecar.config import StateLimits
from sidecar.errors import InvalidBlob, SidecarError
from sidecar.state import codec
from sidecar.state import ops as o
from sidecar.state.model import ActorUsage, Entity, PersonaBinding, PersonaTemplate, SessionOptions, TranscriptEntry
from sidecar.state.store import SessionStore

_enc = msgspec.msgpack.Encoder()
_canonical = msgspec.msgpack.Encoder(order="deterministic")
#: The replay window: not part of a save (docs/protocol.md, Saves).
_WINDOW = ("recent_deltas", "delta_digests")


def _payload(blob: bytes) -> dict[str, Any]:
    payload: dict[str, Any] = msgspec.msgpack.decode(msgspec.msgpack.decode(blob)["payload"])
    return payload


def _forge(blob: bytes, payload: Any) -> bytes:
    env = msgspec.msgpack.decode(blob)
    env["payload"] = _enc.encode(payload)
    env["crc32"] = zlib.crc32(env["payload"])
    if isinstance(payload, dict) and type(payload.get("revision")) is int and 0 <= payload["revision"] < 2**63:
        env["revision"] = payload["revision"]  # so the shape, not the envelope, is what is judged
    return _enc.encode(env)


def _saved(payload: Any) -> bytes:
    if isinstance(payload, dict):
        payload = {k: v for k, v in payload.items() if k not in _WINDOW}
    return _canonical.encode(payload)


def _at(node: Any, path: tuple) -> Any:
    for step in path:
        node = node[step]
    return node


def _set(payload: dict, path: tuple, value: Any) -> None:
    _at(payload, path[:-1])[path[-1]] = value


def _delete(payload: dict, path: tuple) -> None:
    del _at(payload, path[:-1])[path[-1]]


CASES = [
    ("world is {}", lambda p: _set(p, ("world",), {}), "at world: field 'entities' of World is missing"),
    ("no world", lambda p: _delete(p, ("world",)), "at the payload: field 'world' of Session is missing"),
    ("world misspelt", lambda p: p.__setitem__("World", p.pop("world")), "unknown field 'World' in Session"),
    ("entities misspelt", lambda p: _set(p, ("world",), {**p["world"], "entity": p["world"].pop("entities")}),
     "at world: unknown field 'entity' in World"),
    ("entities a list", lambda p: _set(p, ("world", "entities"), []), "at world.entities: expected a map, got a list"),
    ("kind an integer", lambda p: _set(p, ("world", "entities", "bob", "kind"), 2),
     "at world.entities['bob'].kind: expected one of 'character'"),
    ("name missing", lambda p: _delete(p, ("world", "entities", "bob", "name")),
     "at world.entities['bob']: field 'name' of Entity is missing"),
    ("nil in a list value", lambda p: _set(p, ("world", "entities", "bob", "fields", "friends", "value", 1), None),
     "at world.entities['bob'].fields['friends'].value[1]: expected a string or"),
    ("untagged map value", lambda p: _set(p, ("world", "scene", "weather"), {"x": 1.0}),
     "at world.scene['weather']: expected a string or"),
    ("vec3 without z", lambda p: _delete(p, ("world", "entities", "bob", "fields", "pos", "value", "z")),
     "at world.entities['bob'].fields['pos'].value: field 'z' of Vec3 is missing"),
    ("integer mood", lambda p: _set(p, ("world", "moods", "bob", "pleasure"), 1),
     "at world.moods['bob'].pleasure: expected a float, got an integer"),
    ("bool count", lambda p: _set(p, ("usage", "bob", "runs"), True),
     "at usage['bob'].runs: expected an integer, got a bool"),
    ("integer map key", lambda p: _set(p, ("notes",), {7: "x"}), "at notes[7]: expected a string, got an integer"),
    ("unknown nested field", lambda p: _set(p, ("world", "story", "summary"), "x"),
     "at world.story: unknown field 'summary' in Story"),
    ("options missing a field", lambda p: _delete(p, ("options", "memory_bank")),
     "at options: field 'memory_bank' of SessionOptions is missing"),
    ("transcript entry a string", lambda p: _set(p, ("transcripts", "bob", 0), "Evening."),
     "at transcripts['bob'][0]: expected a map (TranscriptEntry), got a string"),
    ("payload a list", lambda p: [], "at the payload: expected a map (Session), got a list"),
    ("deep list", lambda p: _set(p, ("world", "scene", "weather"), _nest(100)), "nested deeper than"),
]


def _nest(n: int) -> list:
    v: list = []
    for _ in range(n):
        v = [v]
    return v


@pytest.mark.parametrize(("mutate", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_blob_of_the_wrong_shape_is_refused_naming_the_field(mutate: Any, needle: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        store, blob = await _base(str(tmp_path))
        payload = _payload(blob)
        changed = mutate(payload)
        forged = _forge(blob, payload if changed is None else changed)
        before = _enc.encode(store.get("s"))
        for target, overwrite in (("s", True), ("fresh", False)):
            with pytest.raises(InvalidBlob) as info:
                await store.import_(target, forged, overwrite=overwrite)
            assert info.value.reason == "INVALID_BLOB" and info.value.code == "INVALID_ARGUMENT"
            assert needle in info.value.message, info.value.message
            assert info.value.message.startswith("blob payload has the wrong shape at ")
            assert info.value.metadata["field"] in info.value.message
        assert _enc.encode(store.get("s")) == before and store.session_ids() == ["s"]
        await store.aclose()
        restarted = SessionStore(StateLimits(), str(tmp_path))
        await restarted.start()
        assert _enc.encode(restarted.get("s")) == before and restarted.session_ids() == ["s"]
        await restarted.aclose()

    asyncio.run(scenario())


def test_an_export_from_before_delta_digests_still_imports(tmp_path: Path) -> None:
    """The replay window is not part of a save: a blob without `delta_digests`
    (every blob written before it existed) imports exactly."""

    async def scenario() -> None:
        store, blob = await _base(str(tmp_path))
        payload = _payload(blob)
        del payload["delta_digests"]
        await store.import_("old", _forge(blob, payload))
        assert _saved(_payload(store.export("old"))) == _saved({**payload, "id": "old"})
        await store.aclose()

    asyncio.run(scenario())


def test_a_version_1_blob_without_prompt_state_imports_and_a_later_one_must_have_it(tmp_path: Path) -> None:
    """Format version 2 added `prompt_state`: a version-1 blob (the release before)
    lacks it and imports with it empty; a blob of a later version that lacks it is refused
    (real saves of every version: tests/state/test_blob_versions.py)."""

    async def scenario() -> None:
        store, blob = await _base(str(tmp_path))
        payload = _payload(blob)
        assert msgspec.msgpack.decode(blob)["version"] == codec.BLOB_VERSION >= 2
        del payload["prompt_state"]
        with pytest.raises(InvalidBlob, match="prompt_state"):
            await store.import_("v2", _forge(blob, payload))
        env = msgspec.msgpack.decode(_forge(blob, payload))
        env["version"] = 1
        await store.import_("v1", _enc.encode(env))
        assert _payload(store.export("v1"))["prompt_state"] == {}
        await store.aclose()

    asyncio.run(scenario())


def _shape_mutation(payload: dict, data: st.DataObject) -> None:
    """Delete a key, add a key, or put a value of another kind, anywhere."""
    paths = [p for p in _paths(payload) if p not in ((w,) for w in _WINDOW)]
    action = data.draw(st.sampled_from(["delete", "add", "retype"]), label="action")
    if action == "add":
        maps = [()] + [p for p in paths if isinstance(_at(payload, p), dict)]
        where = _at(payload, data.draw(st.sampled_from(maps), label="map"))
        where[data.draw(st.text(max_size=6), label="new key")] = data.draw(_VALUES, label="new value")
        return
    path = data.draw(st.sampled_from(paths), label="path")
    parent = _at(payload, path[:-1])
    if action == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
        return
    old = parent[path[-1]]
    parent[path[-1]] = data.draw(_VALUES.filter(lambda v: type(v) is not type(old)), label="other kind")


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_blobs_of_another_shape_are_refused_whole_or_imported_exactly(data: st.DataObject) -> None:
    async def scenario(state_dir: str) -> None:
        store, blob = await _base(state_dir)
        payload = _payload(blob)
        for _ in range(data.draw(st.integers(1, 2), label="mutations")):
            _shape_mutation(payload, data)
        try:
            forged = _forge(blob, payload)
        except (OverflowError, TypeError):
            await store.aclose()
            return  # not representable in msgpack at all: no blob to import
        before = _enc.encode(store.get("s"))
        try:
            await store.import_("s", forged, overwrite=True)
        except InvalidBlob as exc:
            event(f"refused: {exc.message.split(':')[0][:50]}")
            assert _enc.encode(store.get("s")) == before, "a refused blob changed the session"
        else:
            event("imported")
            assert _saved(_payload(store.export("s"))) == _saved(payload), "the import took something else"
        await store.aclose()

    with tempfile.TemporaryDirectory(prefix="blob-shape-") as d:
        asyncio.run(scenario(d))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_real_export_round_trips_exactly(data: st.DataObject) -> None:
    async def scenario() -> None:
        store = SessionStore(StateLimits())
        await store.start()
        options = SessionOptions(alias_mode="display_name", coordinate_fields=["pos"], budget_tokens=900, profile="p")
        s, _ = await store.open("s", options)
        inline = PersonaTemplate(identity="a", mood_modifiers={"angry": "loud"}, inviolable_rules=["no"])
        persona = [o.UpsertEntity(Entity(id="px")), o.SetPersona(PersonaBinding("px", inline=inline))]
        await store.apply("s", 0, "", persona)
        for _ in range(data.draw(st.integers(1, 6), label="batches")):
            batch = data.draw(batch_strategy(list(s.world.entities)), label="batch")
            try:
                await store.apply("s", s.revision, "", batch)
            except SidecarError:
                pass
        s.transcripts["e1"] = [TranscriptEntry(role="actor", text="hi", speaker_id="e1", interrupted=True, revision=1)]
        s.notes[""] = "narrator notes"
        s.usage["e1"] = ActorUsage(prompt_tokens=3, cost_usd=0.5, runs=1)
        blob = store.export("s")
        await store.import_("copy", blob)
        assert _saved(_payload(store.export("copy"))) == _saved({**_payload(blob), "id": "copy"})
        codec.import_blob(store.export("copy"))

    asyncio.run(scenario())
