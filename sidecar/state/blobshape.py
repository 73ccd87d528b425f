"""The shape of a save blob's payload, checked whole before it is decoded
(docs/protocol.md §5, "Saves").

Decoding alone takes any map that looks enough like a session: a missing field
gets its default and an unknown one is dropped, so a checksum-valid blob whose
world was `{}`, absent or misspelt imported as an empty world. Here every struct
of `model.Session` must be a map holding exactly its fields (tagged values their
tag), every field of the type the model declares (a float field holds a float, as
every export writes one), every map keyed by strings, and every field value one
of `model.Value`'s kinds (a struct the codec writes as a list, `array_like`, a list
of its fields in order); the first failure is InvalidBlob naming its path, such
as `world.entities['bob'].kind`. The rules are read from the model itself
(`msgspec.inspect`), so a field added there is checked without a change here.
`blobcheck` then holds the decoded session to the rules a live one keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from msgspec import inspect as mi

from sidecar.errors import InvalidBlob
from sidecar.state.model import ActorUsage, Session, TranscriptEntry, TranscriptSummary, Value, World

__all__ = ["check_payload_shape", "ADDED_IN"]

#: Session fields a save does not carry (the replay window): optional in a blob,
#: and cleared on import.
_NOT_SAVED = frozenset({"recent_deltas", "delta_digests"})

#: (struct, field name) -> the blob format version that added the field. A blob of
#: an older version lacks it and gets its default; every other field is required.
#: A field added to the model is listed here with the version that bumps
#: `codec.BLOB_VERSION`.
ADDED_IN: dict[tuple[type, str], int] = {
    (Session, "prompt_state"): 2,
    # Came with version 2 too (version-1 saves lack them; tests/state/blobs/v1.blob):
    (Session, "summaries"): 2,
    (World, "events_dropped"): 2,
    (TranscriptEntry, "shown"): 2,
    (TranscriptEntry, "mentions"): 2,
    **{(ActorUsage, name): 3 for name in ("summaries", "summary_prompt_tokens", "summary_completion_tokens",
                                          "summary_cost_usd")},  # fmt: skip
    (TranscriptSummary, "events_through"): 4,
    (TranscriptSummary, "events_summarised"): 4,
}

#: Deeper than any valid payload (value lists nest up to `max_value_depth`): a
#: hostile blob must not exhaust the stack.
_MAX_DEPTH = 64

_SESSION = mi.type_info(Session)
#: The model types list values as `list[Any]` (no recursive aliases on 3.11); its
#: only `Any` is that list's item, which is a Value again.
_VALUE = mi.type_info(Value)

_KIND = {dict: "a map", list: "a list", str: "a string", int: "an integer", float: "a float", bool: "a bool",
         bytes: "bytes", type(None): "nil"}


class _Bad(Exception):
    """A shape failure on its way up; each container on the path adds its step."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
        self.steps: list[str] = []


def check_payload_shape(raw: object, version: int) -> None:
    """Raise InvalidBlob naming the first part of `raw` (the msgpack-decoded
    payload of a blob of format `version`) that is not a session's shape."""
    try:
        _checker(version)(raw, 0)
    except _Bad as bad:
        path = "".join(reversed(bad.steps)).lstrip(".") or "the payload"
        raise InvalidBlob(
            f"blob payload has the wrong shape at {path}: {bad.what}", metadata={"field": path}
        ) from None


def _kind(raw: object) -> str:
    return _KIND.get(type(raw), type(raw).__name__)


def _expected(t: mi.Type) -> str:
    if isinstance(t, mi.StructType):
        tagged = f" tagged {t.tag_field} = {t.tag!r}" if t.tag_field is not None else ""
        return f"a map{tagged} ({t.cls.__name__})"
    if isinstance(t, mi.UnionType):
        return " or ".join(_expected(m) for m in t.types)
    if isinstance(t, mi.LiteralType):
        return "one of " + ", ".join(repr(v) for v in t.values)
    if isinstance(t, mi.AnyType):
        return "a value"
    return {mi.DictType: "a map", mi.ListType: "a list", mi.VarTupleType: "a list", mi.StrType: "a string",
            mi.IntType: "an integer", mi.FloatType: "a float", mi.BoolType: "a bool", mi.BytesType: "bytes",
            mi.NoneType: "nil"}.get(type(t), type(t).__name__)


_SCALARS: dict[type, type] = {mi.StrType: str, mi.IntType: int, mi.FloatType: float, mi.BoolType: bool,
                              mi.BytesType: bytes, mi.NoneType: type(None)}

#: Checks one node at a depth; raises _Bad. Compiled once per type from the model.
_Check = Callable[[Any, int], None]


@functools.lru_cache(maxsize=4)
def _checker(version: int) -> _Check:
    return _Compiler(version).compile(_SESSION)


def _stepped(bad: _Bad, step: str) -> _Bad:
    bad.steps.append(step)
    return bad


class _Compiler:
    """Turns the model's type info into nested closures (a payload of 10,000
    entities is some 450,000 nodes: no per-node dispatch on the type info)."""

    def __init__(self, version: int) -> None:
        self._version = version
        self._structs: dict[type, _Check] = {}
        self._value: _Check | None = None

    def compile(self, t: mi.Type) -> _Check:  # noqa: C901 - one branch per kind of type
        scalar = _SCALARS.get(type(t))
        if scalar is not None:
            return _scalar(scalar, _expected(t))
        if isinstance(t, mi.StructType):
            return self._struct(t)
        if isinstance(t, mi.DictType):
            return _dict(self.compile(t.key_type), self.compile(t.value_type))
        if isinstance(t, (mi.ListType, mi.VarTupleType)):
            return _list(self.compile(t.item_type))
        if isinstance(t, mi.UnionType):
            return self._union(t)
        if isinstance(t, mi.LiteralType):
            return _literal(t)
        if isinstance(t, mi.AnyType):
            def value(raw: Any, depth: int) -> None:
                assert self._value is not None
                self._value(raw, depth)

            if self._value is None:
                self._value = _noop  # the Value union refers to itself through its list
                self._value = self.compile(_VALUE)
            return value
        raise TypeError(f"no shape rule for {type(t).__name__}: add one to blobshape")

    def _union(self, t: mi.UnionType) -> _Check:
        """The member a node can be is picked by its type, a map's by its tag."""
        by_type: dict[type, _Check] = {}
        tagged: dict[object, _Check] = {}
        tag_field: str | None = None
        plain_map: _Check | None = None
        for m in t.types:
            scalar = _SCALARS.get(type(m))
            if scalar is not None:
                by_type[scalar] = _noop
            elif isinstance(m, mi.StructType) and m.tag_field is not None:
                tag_field = m.tag_field
                tagged[m.tag] = self.compile(m)
            elif isinstance(m, (mi.StructType, mi.DictType)):
                plain_map = self.compile(m)
            elif isinstance(m, (mi.ListType, mi.VarTupleType)):
                by_type[list] = self.compile(m)
            else:
                raise TypeError(f"no shape rule for {type(m).__name__} in a union: add one to blobshape")
        expected = _expected(t)

        def check(raw: Any, depth: int) -> None:
            member = by_type.get(type(raw))
            if member is None and type(raw) is dict:
                tag = raw.get(tag_field) if tag_field is not None else None
                member = tagged.get(tag) if type(tag) in _LITERAL_TYPES else None
                member = member or plain_map
            if member is None:
                raise _Bad(f"expected {expected}, got {_kind(raw)}")
            member(raw, depth)

        return check

    def _struct(self, t: mi.StructType) -> _Check:
        done = self._structs.get(t.cls)
        if done is not None:
            return done
        if t.array_like:
            return self._array_struct(t)
        name = t.cls.__name__
        expected = _expected(t)
        tag_field, tag = t.tag_field, t.tag
        checks: dict[str, _Check] = {}
        # In the model's order, so the first field missing is the one named.
        required = tuple(
            f.encode_name
            for f in t.fields
            if not (t.cls is Session and f.name in _NOT_SAVED) and ADDED_IN.get((t.cls, f.name), 1) <= self._version
        )

        def check(raw: Any, depth: int) -> None:
            if type(raw) is not dict:
                raise _Bad(f"expected {expected}, got {_kind(raw)}")
            if tag_field is not None and raw.get(tag_field) != tag:
                raise _Bad(f"expected {tag_field!r} = {tag!r}")
            for key, item in raw.items():
                field = checks.get(key)
                if field is None:
                    if key == tag_field:
                        continue
                    raise _Bad(f"unknown field {key!r} in {name}")
                try:
                    field(item, depth + 1)
                except _Bad as bad:
                    raise _stepped(bad, f".{key}") from None
            for key in required:
                if key not in raw:
                    raise _Bad(f"field {key!r} of {name} is missing")

        self._structs[t.cls] = check
        for f in t.fields:
            checks[f.encode_name] = self.compile(f.type)
        return check


    def _array_struct(self, t: mi.StructType) -> _Check:
        """A struct the codec writes as a list (`array_like`): its tag first if tagged,
        then its fields in order; trailing fields with a default may be left out."""
        name = t.cls.__name__
        tag_field, tag = t.tag_field, t.tag
        lead = 0 if tag_field is None else 1
        fields = list(t.fields)
        least = lead + max((i + 1 for i, f in enumerate(fields) if f.required), default=0)
        checks: list[_Check] = []

        def check(raw: Any, depth: int) -> None:
            if type(raw) is not list:
                raise _Bad(f"expected a list ({name}), got {_kind(raw)}")
            if lead and (not raw or raw[0] != tag):
                raise _Bad(f"expected {name}'s tag {tag!r} first")
            if not least <= len(raw) <= lead + len(fields):
                raise _Bad(f"expected {least} to {lead + len(fields)} items ({name}), got {len(raw)}")
            for f, field, item in zip(fields, checks, raw[lead:], strict=False):
                try:
                    field(item, depth + 1)
                except _Bad as bad:
                    raise _stepped(bad, f".{f.encode_name}") from None

        self._structs[t.cls] = check
        checks.extend(self.compile(f.type) for f in fields)
        return check


def _noop(raw: Any, depth: int) -> None:
    return None


def _scalar(cls: type, expected: str) -> _Check:
    def check(raw: Any, depth: int) -> None:
        if type(raw) is not cls:  # exact: a bool is no integer, an integer no float
            raise _Bad(f"expected {expected}, got {_kind(raw)}")

    return check


_LITERAL_TYPES = frozenset({str, int, bool})


def _literal(t: mi.LiteralType) -> _Check:
    values = {(type(v), v) for v in t.values}
    expected = _expected(t)

    def check(raw: Any, depth: int) -> None:
        if type(raw) not in _LITERAL_TYPES or (type(raw), raw) not in values:
            raise _Bad(f"expected {expected}, got {raw!r}")

    return check


def _dict(key: _Check, value: _Check) -> _Check:
    def check(raw: Any, depth: int) -> None:
        if type(raw) is not dict:
            raise _Bad(f"expected a map, got {_kind(raw)}")
        for k, item in raw.items():
            try:
                key(k, depth + 1)
                value(item, depth + 1)
            except _Bad as bad:
                raise _stepped(bad, f"[{k!r}]") from None

    return check


def _list(item_check: _Check) -> _Check:
    def check(raw: Any, depth: int) -> None:
        if type(raw) is not list:
            raise _Bad(f"expected a list, got {_kind(raw)}")
        if depth > _MAX_DEPTH:
            raise _Bad(f"nested deeper than {_MAX_DEPTH} levels")
        for i, item in enumerate(raw):
            try:
                item_check(item, depth + 1)
            except _Bad as bad:
                raise _stepped(bad, f"[{i}]") from None

    return check
