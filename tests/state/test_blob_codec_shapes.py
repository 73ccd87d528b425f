"""The save blob's shape check and its codec agree on every type (issue 31, item 1).

A save with a transcript mention did not import: the check expected a map where the
codec writes an `array_like` struct as a list. Here a session with every field of
every struct filled (each member of each union, each kind of value) is encoded by the
codec and must pass the check whole, so a struct added to the model, of any kind, is
covered without a change here. And a hostile blob nested far too deep is INVALID_BLOB,
never INTERNAL."""

from __future__ import annotations

import zlib
from typing import Any

import msgspec
import pytest
from msgspec import inspect as mi

from sidecar.errors import InvalidBlob
from sidecar.state import codec
from sidecar.state.blobshape import check_payload_shape
from sidecar.state.model import EntryMention, Session, TranscriptEntry, Value

_enc = msgspec.msgpack.Encoder()


def sample(t: mi.Type, depth: int = 0) -> Any:  # noqa: C901 - one branch per kind of type
    """A value of type `t` with every optional part present."""
    if isinstance(t, mi.StrType):
        return "x"
    if isinstance(t, mi.BoolType):
        return True
    if isinstance(t, mi.IntType):
        return 1
    if isinstance(t, mi.FloatType):
        return 0.5
    if isinstance(t, mi.BytesType):
        return b"x"
    if isinstance(t, mi.NoneType):
        return None
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.AnyType):  # the model's only Any: a Value inside a value list
        return [sample(m, depth + 1) for m in mi.type_info(Value).types] if depth < 4 else "x"
    if isinstance(t, mi.UnionType):
        members = [m for m in t.types if not isinstance(m, mi.NoneType)]
        return sample(members[depth % len(members)], depth + 1)
    if isinstance(t, (mi.ListType, mi.VarTupleType)):
        item = t.item_type
        if isinstance(item, mi.UnionType):  # one of each member
            return [sample(m, depth + 1) for m in item.types]
        return [sample(item, depth + 1)]
    if isinstance(t, mi.DictType):
        value = t.value_type
        if isinstance(value, mi.UnionType):
            return {f"k{i}": sample(m, depth + 1) for i, m in enumerate(value.types)}
        return {"k": sample(value, depth + 1)}
    if isinstance(t, mi.StructType):
        return t.cls(**{f.name: sample(f.type, depth + 1) for f in t.fields})
    raise TypeError(f"no sample for {type(t).__name__}")


def test_every_struct_the_codec_writes_passes_the_shape_check() -> None:
    session = sample(mi.type_info(Session))
    session.recent_deltas, session.delta_digests = {}, {}
    raw = msgspec.msgpack.decode(_enc.encode(session))
    check_payload_shape(raw, codec.BLOB_VERSION)  # raises InvalidBlob on any disagreement


def test_a_transcript_mention_is_checked_as_the_list_the_codec_writes() -> None:
    session = Session(id="s")
    entry = TranscriptEntry(role="narrator", text="npc_1 waves.", shown="Bram waves.",
                            mentions=[EntryMention("NPC_Bram", 0, 4)])  # fmt: skip
    session.transcripts[""] = [entry]
    assert codec.import_blob(codec.export_blob(session)).transcripts[""][0].mentions == [EntryMention("NPC_Bram", 0, 4)]
    raw = msgspec.msgpack.decode(_enc.encode(session))
    cases = [
        ([["NPC_Bram", 0]], "expected 3 to 3 items (EntryMention), got 2"),
        ([{"entity_id": "NPC_Bram", "start": 0, "length": 4}], "expected a list (EntryMention), got a map"),
        ([["NPC_Bram", "0", 4]], "at transcripts[''][0].mentions[0].start: expected an integer"),
    ]
    for bad, said in cases:
        raw["transcripts"][""][0]["mentions"] = bad
        with pytest.raises(InvalidBlob) as refused:
            check_payload_shape(raw, codec.BLOB_VERSION)
        assert said in refused.value.message


def _blob(payload: bytes) -> bytes:
    env = {"format": codec.BLOB_FORMAT, "version": codec.BLOB_VERSION, "session_id": "s", "revision": 0,
           "crc32": zlib.crc32(payload), "payload": payload}  # fmt: skip
    return _enc.encode(env)


@pytest.mark.parametrize("level", [b"\x91", b"\x81\xa1a"])  # a list in a list..., a map in a map...
def test_a_checksum_valid_blob_nested_100000_deep_is_an_invalid_blob(level: bytes) -> None:
    with pytest.raises(InvalidBlob, match="nested deeper than a decoder follows"):
        codec.import_blob(_blob(level * 100_000 + b"\xc0"))
