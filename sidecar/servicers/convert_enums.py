"""The wire enums <-> the domain's names, read from the proto descriptors.

A proto value name minus its prefix, lower-cased, is the domain's name
(`ENTITY_KIND_CHARACTER` -> "character", `VISIBILITY_LEVEL_KNOWN_TO` ->
"known_to"), so a value added to the proto reaches these tables without an edit
here; `tests/wire/test_enum_tables.py` checks that the domain's Literals,
the alias prefixes and docs/privacy.md name the same values.

UNSPECIFIED (0) reads as the documented default: OTHER for a kind, PUBLIC for
a visibility level (types.proto), KIND for an alias mode (session_service.proto).
Writing never produces it.
"""

from __future__ import annotations

from typing import cast

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from sidecar.state.model import AliasMode, Kind, Level
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import types_pb2 as tpb

__all__ = [
    "KIND_FROM",
    "KIND_TO",
    "KIND_NUMBERS",
    "LEVEL_FROM",
    "LEVEL_TO",
    "ALIAS_FROM",
    "ALIAS_TO",
]


def _names(enum: EnumTypeWrapper, prefix: str) -> dict[int, str]:
    """Number -> domain name for every value but UNSPECIFIED."""
    odd = [v.name for v in enum.DESCRIPTOR.values if not v.name.startswith(prefix)]
    if odd:  # fails at import, in every test run, not on the first request that uses it
        raise RuntimeError(f"{enum.DESCRIPTOR.full_name}: {odd} lack the prefix {prefix}")
    return {v.number: v.name.removeprefix(prefix).lower() for v in enum.DESCRIPTOR.values if v.number != 0}


def _tables(enum: EnumTypeWrapper, prefix: str, unspecified: str) -> tuple[dict[int, str], dict[str, int]]:
    named = _names(enum, prefix)
    if unspecified not in named.values():
        raise RuntimeError(f"{enum.DESCRIPTOR.full_name}: UNSPECIFIED's default {unspecified!r} is not a value")
    return {0: unspecified, **named}, {name: number for number, name in named.items()}


# The casts say what the tables hold: the domain's Literals, as the descriptors name
# them (tests/wire/test_enum_tables.py holds the two together), and the proto's enums.

#: Wire number -> domain name (`sidecar.state.model.Kind`), and back.
KIND_FROM, KIND_TO = cast(
    "tuple[dict[int, Kind], dict[Kind, tpb.EntityKind]]", _tables(tpb.EntityKind, "ENTITY_KIND_", "other")
)
#: Every EntityKind number a request may carry (GetState's `kinds` filter).
KIND_NUMBERS = frozenset(KIND_FROM)
#: Wire number -> domain level (`sidecar.state.model.Level`), and back.
LEVEL_FROM, LEVEL_TO = cast(
    "tuple[dict[int, Level], dict[Level, tpb.VisibilityLevel]]",
    _tables(tpb.VisibilityLevel, "VISIBILITY_LEVEL_", "public"),
)
#: Wire number -> `SessionOptions.alias_mode`, and back.
ALIAS_FROM, ALIAS_TO = cast(
    "tuple[dict[int, AliasMode], dict[AliasMode, spb.AliasMode]]", _tables(spb.AliasMode, "ALIAS_MODE_", "kind")
)
