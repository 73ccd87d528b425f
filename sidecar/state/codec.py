"""Byte encodings of state: sessions and op batches for the journal (msgpack
via msgspec), and the versioned, self-describing save blob of ExportSession.

Save blob (format_version 2; 1 lacks `prompt_state`): a msgpack map
``{"format": "game-sidecar/session", "version": 2, "session_id", "revision",
"crc32", "payload"}`` where `payload` is the msgpack of `model.Session`
(delta window and its digests cleared) and `crc32` its checksum. Later
versions add Session fields with defaults, so an old blob still decodes
(`blobshape.ADDED_IN` says
which fields an older version may lack; every other field must be there, of its
type, with no unknown ones); a blob whose version is newer than this code's is
refused rather than half-read.
"""

from __future__ import annotations

import asyncio
import hashlib
import zlib
from collections.abc import Sequence
from typing import Any, cast

import msgspec

from sidecar.errors import InvalidBlob
from sidecar.state import ops as o
from sidecar.state.blobshape import check_payload_shape
from sidecar.state.model import (
    ActorUsage,
    AliasTable,
    Entity,
    EntityRef,
    Session,
    SessionOptions,
    TranscriptEntry,
    TranscriptSummary,
    Value,
    Vec3,
    World,
)

__all__ = [
    "BLOB_FORMAT",
    "BLOB_VERSION",
    "encode_session",
    "decode_session",
    "encode_snapshot",
    "decode_snapshot",
    "encode_ops",
    "decode_ops",
    "ops_digest",
    "export_blob",
    "import_blob",
    "revive_world",
    "Extras",
    "encode_extras",
    "decode_extras",
    "encode_options",
    "decode_options",
    "TranscriptTail",
    "RunChanges",
    "Compaction",
    "encode_run",
    "decode_run",
    "encode_compaction",
    "decode_compaction",
]

BLOB_FORMAT = "game-sidecar/session"
#: 2: Session.prompt_state (an imported session builds the same prompts); 3: ActorUsage.summary_*;
#: 4: TranscriptSummary.events_through / events_summarised (events past the cap, summarised).
BLOB_VERSION = 4

_enc = msgspec.msgpack.Encoder()
#: Map keys sorted: one batch has one encoding, whatever order its maps arrived in.
_canonical = msgspec.msgpack.Encoder(order="deterministic")
_session_dec = msgspec.msgpack.Decoder(Session)
_ops_dec = msgspec.msgpack.Decoder(list[o.Op])


class _Envelope(msgspec.Struct):
    format: str
    version: int
    session_id: str
    revision: int
    crc32: int
    payload: bytes


_envelope_dec = msgspec.msgpack.Decoder(_Envelope)


class Extras(msgspec.Struct):
    """The non-world parts of a session that runs change (journal "extras" record)."""

    aliases: AliasTable
    transcripts: dict[str, list[TranscriptEntry]]
    notes: dict[str, str]
    usage: dict[str, ActorUsage]
    errors_by_reason: dict[str, int]


class TranscriptTail(msgspec.Struct):
    """An actor's transcript from index `start` (of the entries it holds) on."""

    start: int
    entries: list[TranscriptEntry]


class RunChanges(msgspec.Struct):
    """What runs changed since the last record (journal "run" record): the new
    transcript entries, and the notes and usage of the actors whose changed. Its
    size follows the run, not the session's history (issue 23)."""

    transcripts: dict[str, TranscriptTail] = msgspec.field(default_factory=dict)
    notes: dict[str, str] = msgspec.field(default_factory=dict)
    usage: dict[str, ActorUsage] = msgspec.field(default_factory=dict)
    #: The whole table when it changed (a few reasons), else None.
    errors_by_reason: dict[str, int] | None = None


class Compaction(msgspec.Struct):
    """An actor's transcript lost its oldest `removed` entries; `summary` is what
    it no longer holds (journal "compact" record)."""

    actor_id: str
    removed: int
    summary: TranscriptSummary


_extras_dec = msgspec.msgpack.Decoder(Extras)
_run_dec = msgspec.msgpack.Decoder(RunChanges)
_compaction_dec = msgspec.msgpack.Decoder(Compaction)


def encode_run(changes: RunChanges) -> bytes:
    return _enc.encode(changes)


def decode_run(data: bytes) -> RunChanges:
    return _run_dec.decode(data)


def encode_compaction(c: Compaction) -> bytes:
    return _enc.encode(c)


def decode_compaction(data: bytes) -> Compaction:
    return _compaction_dec.decode(data)
_options_dec = msgspec.msgpack.Decoder(SessionOptions)


def encode_extras(extras: Extras) -> bytes:
    return _enc.encode(extras)


def decode_extras(data: bytes) -> Extras:
    return _extras_dec.decode(data)


def encode_options(options: SessionOptions) -> bytes:
    return _enc.encode(options)


def decode_options(data: bytes) -> SessionOptions:
    return _options_dec.decode(data)


def _revive(value: Any) -> Value:
    """Lists are typed `list[Any]` in the model (no recursive aliases on 3.11),
    so tagged structs inside them decode as dicts: turn them back."""
    t = type(value)
    if t is list:
        return [_revive(v) for v in value]
    if t is dict:
        tag = value.get("type")
        if tag == "vec3":
            return Vec3(float(value["x"]), float(value["y"]), float(value["z"]))
        if tag == "ref":
            return EntityRef(str(value["id"]))
        raise msgspec.ValidationError(f"unknown tagged value {tag!r} in a list")
    return cast(Value, value)  # a scalar: msgspec decoded it as str, int, float or bool


def revive_world(world: World) -> World:
    for e in world.entities.values():
        for f in e.fields.values():
            if type(f.value) is list:
                f.value = _revive(f.value)
    for key, v in world.scene.items():
        if type(v) is list:
            world.scene[key] = _revive(v)
    return world


def encode_session(session: Session) -> bytes:
    return _enc.encode(session)


def decode_session(data: bytes) -> Session:
    session = _session_dec.decode(data)
    revive_world(session.world)
    return session


class _Snapshot(msgspec.Struct, tag="snapshot1"):
    """A journal snapshot: the session without its entities, and the entities in
    chunks, so a big world is encoded a chunk per event-loop turn."""

    shell: bytes
    entity_chunks: list[bytes]


_entities_dec = msgspec.msgpack.Decoder(list[Entity])
_snapshot_dec = msgspec.msgpack.Decoder(_Snapshot)
SNAPSHOT_CHUNK = 500


async def encode_snapshot(session: Session, session_id: str) -> bytes:
    """Encode for the journal, yielding to the event loop between chunks.

    The caller holds the session's lock, so the world cannot change meanwhile;
    only the entities are big enough to need chunks.
    """
    shell = msgspec.structs.replace(session, id=session_id, world=msgspec.structs.replace(session.world, entities={}))
    entities = list(session.world.entities.values())
    chunks = []
    for start in range(0, len(entities), SNAPSHOT_CHUNK):
        chunks.append(_enc.encode(entities[start : start + SNAPSHOT_CHUNK]))
        await asyncio.sleep(0)
    return _enc.encode(_Snapshot(_enc.encode(shell), chunks))


def decode_snapshot(data: bytes) -> Session:
    snap = _snapshot_dec.decode(data)
    session = _session_dec.decode(snap.shell)
    entities = session.world.entities
    for chunk in snap.entity_chunks:
        for entity in _entities_dec.decode(chunk):
            entities[entity.id] = entity
    revive_world(session.world)
    return session


def encode_ops(ops: Sequence[o.Op]) -> bytes:
    return _enc.encode(ops)


def ops_digest(ops: Sequence[o.Op]) -> bytes:
    """The digest a delta ID is remembered with: equal for the same batch however
    its maps were ordered on the wire, different for any other batch."""
    return hashlib.blake2b(_canonical.encode(ops), digest_size=16).digest()


def decode_ops(data: bytes) -> list[o.Op]:
    ops = _ops_dec.decode(data)
    for op in ops:
        if type(op) is o.UpsertEntity:
            fields = op.entity.fields.values()
        elif type(op) is o.PatchEntity:
            fields = op.set_fields.values()
        else:
            if type(op) is o.SetSceneFact and type(op.value) is list:
                op.value = _revive(op.value)
            continue
        for f in fields:
            if type(f.value) is list:
                f.value = _revive(f.value)
    return ops


def export_blob(session: Session) -> bytes:
    payload = _enc.encode(msgspec.structs.replace(session, recent_deltas={}, delta_digests={}))
    return _enc.encode(
        _Envelope(
            format=BLOB_FORMAT,
            version=BLOB_VERSION,
            session_id=session.id,
            revision=session.revision,
            crc32=zlib.crc32(payload),
            payload=payload,
        )
    )


def import_blob(blob: bytes) -> Session:
    """Decode a save blob, or raise InvalidBlob saying what is wrong with it."""
    if not blob:
        raise InvalidBlob("the blob is empty")
    try:
        env = _envelope_dec.decode(blob)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidBlob(f"not a session blob (truncated or garbage): {exc}") from None
    except RecursionError:  # msgspec's own depth guard, on a hostile blob
        raise InvalidBlob("not a session blob: nested deeper than a decoder follows") from None
    if env.format != BLOB_FORMAT:
        raise InvalidBlob(f"not a session blob: format {env.format!r}")
    if env.version > BLOB_VERSION:
        raise InvalidBlob(
            f"blob format version {env.version} is newer than this sidecar reads ({BLOB_VERSION})",
            metadata={"format_version": str(env.version)},
        )
    if env.version < 1:
        raise InvalidBlob(f"blob format version {env.version} is not valid")
    if zlib.crc32(env.payload) != env.crc32:
        raise InvalidBlob("blob checksum mismatch: the save data is corrupt")
    try:
        raw = msgspec.msgpack.decode(env.payload)
    except msgspec.DecodeError as exc:
        raise InvalidBlob(f"blob payload does not decode: {exc}") from None
    except RecursionError:  # msgspec's own depth guard: far past any session's depth
        raise InvalidBlob("blob payload has the wrong shape: nested deeper than a decoder follows") from None
    # Whole, before the typed decode: that one fills a missing field with its default
    # and drops an unknown one, so a payload that only looks like a session would pass.
    check_payload_shape(raw, env.version)
    try:
        session = decode_session(env.payload)
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError, ValueError) as exc:
        raise InvalidBlob(f"blob payload does not decode: {exc}") from None
    if env.revision != session.revision or (env.session_id and env.session_id != session.id):
        raise InvalidBlob("blob envelope and payload disagree (revision or session ID)")
    session.recent_deltas = {}
    session.delta_digests = {}
    return session
