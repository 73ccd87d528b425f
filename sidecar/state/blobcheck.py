"""Checks a decoded save blob whole before ImportSession journals or replaces
anything (docs/protocol.md §5, "Saves").

A blob's checksum only says it was not damaged in transit; its content may still
come from a buggy or hand-edited save. Its shape (every field there, of its type)
was checked before it was decoded (`blobshape`); here, what it says. Everything in it is held to the rules a
live session is held to: the world as one snapshot batch (`validate_batch`),
every number in the range its wire type and the journal can carry (revisions
within `MAX_REVISION`), history no newer than the session, collections within
their limits, and an alias table that is one-to-one. One failure is InvalidBlob naming it.

`session_from_blob` is ImportSession's whole step before the store takes the
session: decode, check, rename to the target session, give every entity an alias.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import msgspec

from sidecar.config import StateLimits
from sidecar.errors import InvalidBlob, InvalidRequest, SidecarError
from sidecar.state import codec
from sidecar.state.aliases import assign_alias
from sidecar.state.model import MAX_REVISION, Session, World
from sidecar.state.ops import world_to_ops
from sidecar.state.validate import validate_batch
from sidecar.state.write_checks import check_id

__all__ = ["check_blob_session", "session_from_blob"]

_INT64_MAX = 2**63 - 1


def session_from_blob(blob: bytes, session_id: str, limits: StateLimits) -> Session:
    """The session a save blob holds, for ImportSession into `session_id` (or the
    blob's own ID): decoded, checked, renamed, with an alias for every entity."""
    imported = codec.import_blob(blob)
    target = session_id or imported.id
    if not target:
        raise InvalidRequest("the blob names no session and session_id is empty")
    check_id(target, limits)
    # Whole, before anything is journaled or replaced: a bad blob changes nothing.
    check_blob_session(imported, limits)
    imported.id = target
    for entity in imported.world.entities.values():
        assign_alias(imported.aliases, entity, imported.options.alias_mode)
    return imported


def check_blob_session(session: Session, limits: StateLimits) -> None:
    """Raise InvalidBlob saying what is wrong, or return (nothing is changed)."""
    _revision(session.revision, "revision")
    _world(session.world, session.revision, limits)
    _options(session, limits)
    _aliases(session, limits)
    _runs_output(session, limits)


def _fail(msg: str) -> InvalidBlob:
    return InvalidBlob(f"blob state is not valid: {msg}")


def _revision(value: object, what: str, upto: int = MAX_REVISION) -> None:
    if type(value) is not int or not 0 <= value <= upto:
        raise _fail(f"{what} {value!r} is outside 0..{upto}")


def _count(value: object, what: str) -> None:
    if type(value) is not int or not 0 <= value <= _INT64_MAX:
        raise _fail(f"{what} {value!r} is not a count between 0 and 2^63-1")


def _text(value: object, what: str, limit: int) -> None:
    if type(value) is not str or len(value) > limit:
        raise _fail(f"{what} is not a string of at most {limit} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(f"{what} is not valid UTF-8") from None


def _keyed(mapping: Mapping[str, object], attr: str, what: str) -> None:
    for key, item in mapping.items():
        if getattr(item, attr) != key:
            raise _fail(f"{what} {key!r} holds {attr} {getattr(item, attr)!r}")


def _world(world: World, revision: int, limits: StateLimits) -> None:
    _keyed(world.entities, "id", "entity")
    _keyed(world.lore, "id", "lore card")
    _keyed(world.personas, "actor_id", "persona of")
    if len(world.events) > limits.max_events:
        raise _fail(f"{len(world.events)} events, over max_events={limits.max_events}")
    if len(world.memories) > limits.max_memories:
        raise _fail(f"{len(world.memories)} memories, over max_memories={limits.max_memories}")
    for ev in world.events:
        _revision(ev.revision, "an event's revision", revision)
    for mem in world.memories:
        _revision(mem.revision, "a memory's revision", revision)
    ops = world_to_ops(world)
    snapshot_limits = msgspec.structs.replace(limits, max_ops_per_batch=max(limits.max_ops_per_batch, len(ops)))
    try:
        validate_batch(World(), ops, snapshot_limits, fresh_ids=world.entities, history_refs=False)
    except SidecarError as exc:
        # Whatever rule a batch would break (a value rule, a size or count limit, an
        # unknown reference), in a save it is a blob that breaks the rules: INVALID_BLOB
        # (docs/protocol.md, Saves), never the batch's own reason.
        raise _fail(exc.message) from None


def _options(session: Session, limits: StateLimits) -> None:
    o = session.options
    _count(o.budget_tokens, "options.budget_tokens")
    _text(o.profile, "options.profile", limits.max_id_length)
    for what, names in (("coordinate_fields", o.coordinate_fields),
                        ("exposed_coordinate_fields", o.exposed_coordinate_fields)):
        if len(names) > limits.max_list_length:
            raise _fail(f"options.{what} has {len(names)} items, over max_list_length={limits.max_list_length}")
        for name in names:
            _text(name, f"options.{what}", limits.max_id_length)


def _aliases(session: Session, limits: StateLimits) -> None:
    table = session.aliases
    if len(table.by_id) != len(table.by_alias) or any(table.by_alias.get(a) != i for i, a in table.by_id.items()):
        raise _fail("the alias table is not one-to-one (by_id and by_alias disagree)")
    # The table may name more IDs than the world holds (history keeps naming
    # removed entities), and may lack some (import assigns the missing ones).
    for entity_id, alias in table.by_id.items():
        if not entity_id or not alias:
            raise _fail("the alias table holds an empty entity ID or alias")
        _text(entity_id, "an aliased entity ID", limits.max_id_length)
        _text(alias, "an alias", limits.max_id_length)
    for prefix, n in table.counters.items():
        _text(prefix, "an alias counter's prefix", limits.max_id_length)
        _count(n, f"alias counter {prefix!r}")


def _runs_output(session: Session, limits: StateLimits) -> None:
    text_limit = max(limits.max_string_length, 1 << 20)  # transcripts hold whole replies
    for actor, entries in session.transcripts.items():
        _text(actor, "a transcript's actor", limits.max_id_length)
        for e in entries:
            _text(e.text, "transcript text", text_limit)
            _text(e.speaker_id, "transcript speaker_id", limits.max_id_length)
            _text(e.run_id, "transcript run_id", limits.max_id_length)
            if e.shown is not None:
                _text(e.shown, "transcript shown text", text_limit)
            for m in e.mentions:
                _text(m.entity_id, "a transcript mention's entity ID", limits.max_id_length)
                _count(m.start, "a transcript mention's start")
                _count(m.length, "a transcript mention's length")
            _count(e.unix_ms, "transcript unix_ms")
    for actor, summary in session.summaries.items():
        _text(actor, "a transcript summary's actor", limits.max_id_length)
        _text(summary.text, "transcript summary", text_limit)
        _count(summary.summarised, "transcript summary's summarised")
        _count(summary.dropped, "transcript summary's dropped")
        _count(summary.events_through, "transcript summary's events_through")
        _count(summary.events_summarised, "transcript summary's events_summarised")
    _count(session.world.events_dropped, "events_dropped")
    for actor, note in session.notes.items():
        _text(actor, "a notes actor", limits.max_id_length)
        _text(note, "notes", text_limit)
    for actor, u in session.usage.items():
        _text(actor, "a usage actor", limits.max_id_length)
        for name in ("prompt_tokens", "completion_tokens", "cached_tokens", "runs", "summaries",
                     "summary_prompt_tokens", "summary_completion_tokens"):  # fmt: skip
            _count(getattr(u, name), f"usage.{name}")
        for name in ("cost_usd", "summary_cost_usd"):
            cost = getattr(u, name)
            if type(cost) is not float or not math.isfinite(cost) or cost < 0:
                raise _fail(f"usage.{name} {cost!r} is not a finite, non-negative number")
    _names(session.errors_by_reason, "errors_by_reason", limits)


def _names(counts: Mapping[str, object], what: str, limits: StateLimits) -> None:
    keys: Iterable[str] = counts
    for key in keys:
        _text(key, f"{what} key", limits.max_id_length)
        _count(counts[key], f"{what}[{key!r}]")
