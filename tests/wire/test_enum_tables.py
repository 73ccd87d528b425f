"""The enum tables of `sidecar.servicers.convert_enums` are read from the
proto descriptors, and every DeltaOp kind has a converter; these tests keep the other places that name the same values
in step with them (the domain's Literals, the alias prefixes, docs/privacy.md)
and check the tables on a real server: every wire value round-trips, a value
one past the last is refused precisely and changes nothing.

(The error reasons' drift test is `test_the_error_tree_the_proto_and_protocol_md_agree`
in tests/wire/test_error_mapping.py.)"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import grpc
import pytest

from sidecar.client import SidecarClient, error_reason
from sidecar.errors import InvalidDelta
from sidecar.servicers.convert_enums import ALIAS_FROM, ALIAS_TO, KIND_FROM, KIND_NUMBERS, KIND_TO, LEVEL_FROM, LEVEL_TO
from sidecar.servicers.convert_state_from_pb import OP_CONVERTERS, ops_from_pb
from sidecar.state import model as m
from sidecar.state.aliases import KIND_PREFIX
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

PRIVACY_MD = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text()


def _table_rows(heading_row: str) -> set[str]:
    """The backticked first cells of the markdown table whose header is `heading_row`."""
    table = PRIVACY_MD.split(heading_row, 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `(\w+)`", table, re.M))


def test_the_tables_cover_every_proto_value_and_default_unspecified_as_documented() -> None:
    for enum, table in ((tpb.EntityKind, KIND_FROM), (tpb.VisibilityLevel, LEVEL_FROM), (spb.AliasMode, ALIAS_FROM)):
        assert set(table) == set(enum.values()), enum.DESCRIPTOR.name
    assert (KIND_FROM[0], LEVEL_FROM[0], ALIAS_FROM[0]) == ("other", "public", "kind")
    assert KIND_NUMBERS == frozenset(tpb.EntityKind.values())
    assert KIND_FROM[tpb.ENTITY_KIND_CHARACTER] == "character" and LEVEL_TO["known_to"] == tpb.VISIBILITY_LEVEL_KNOWN_TO


def test_entity_kinds_agree_with_the_domain_the_alias_prefixes_and_privacy_md() -> None:
    assert set(KIND_TO) == set(typing.get_args(m.Kind)) == set(KIND_PREFIX)
    examples = PRIVACY_MD.split("| `kind` (default) |", 1)[1].split("\n", 1)[0]
    assert set(re.findall(r"`([a-z]+)_\d+`", examples)) == set(KIND_PREFIX.values())


def test_visibility_levels_agree_with_the_domain_and_privacy_md() -> None:
    assert set(LEVEL_TO) == set(typing.get_args(m.Level)) == _table_rows("| level | who perceives it |")


def test_alias_modes_agree_with_the_domain_and_privacy_md() -> None:
    mode = typing.get_type_hints(m.SessionOptions)["alias_mode"]
    assert set(ALIAS_TO) == set(typing.get_args(mode)) == _table_rows("| mode | alias | example |")


def test_every_delta_op_in_the_proto_has_a_converter() -> None:
    assert set(OP_CONVERTERS) == {f.name for f in pb.DeltaOp.DESCRIPTOR.oneofs_by_name["op"].fields}


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (pb.DeltaOp(), "no operation set in the DeltaOp oneof"),
        (pb.DeltaOp(upsert_entity=pb.UpsertEntityOp()), "upsert_entity has no entity"),
        (pb.DeltaOp(record_event=pb.RecordEventOp()), "record_event has no event"),
        (pb.DeltaOp(set_relation=pb.SetRelationOp()), "set_relation has no relation"),
        (pb.DeltaOp(set_mood=pb.SetMoodOp(actor_id="a")), "set_mood has no pad"),
        (
            pb.DeltaOp(set_scene_fact=pb.SetSceneFactOp(key="k")),
            "set_scene_fact has no value (set remove to delete the fact)",
        ),
        (pb.DeltaOp(upsert_lore_card=pb.UpsertLoreCardOp()), "upsert_lore_card has no card"),
        (pb.DeltaOp(record_memory=pb.RecordMemoryOp()), "record_memory has no memory"),
        (pb.DeltaOp(set_persona=pb.SetPersonaOp()), "set_persona has no persona"),
    ],
)
def test_an_op_missing_what_it_needs_is_refused_by_name(op: pb.DeltaOp, message: str) -> None:
    ok = pb.DeltaOp(remove_entity=pb.RemoveEntityOp(id="x"))
    with pytest.raises(InvalidDelta) as caught:
        ops_from_pb([ok, op])
    assert str(caught.value) == f"op 1: {message}"
    assert caught.value.metadata == {"op_index": "1"}


def _upsert(entity_id: str, kind: int, level: int = tpb.VISIBILITY_LEVEL_PUBLIC) -> pb.DeltaOp:
    entity = pb.Entity(id=entity_id, kind=kind, visibility=tpb.Visibility(level=level))  # type: ignore[arg-type]
    return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=entity))


async def test_every_kind_and_level_round_trips_and_one_past_the_last_is_refused(client: SidecarClient) -> None:
    await client.open_session("g")
    kinds = [k for k in tpb.EntityKind.values() if k]
    levels = [v for v in tpb.VisibilityLevel.values() if v]
    ops = [_upsert(f"e-{k}-{v}", k, v) for k in kinds for v in levels]
    await client.apply_deltas("g", 0, ops)
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    got = {e.id: (e.kind, e.visibility.level) for e in state.snapshot.entities}
    assert got == {f"e-{k}-{v}": (k, v) for k in kinds for v in levels}
    for k in kinds:
        only = await client.sessions.GetState(spb.GetStateRequest(session_id="g", kinds=[k]))
        assert {e.kind for e in only.snapshot.entities} == {k}

    past = max(tpb.EntityKind.values()) + 1
    with pytest.raises(grpc.aio.AioRpcError) as bad_filter:
        await client.sessions.GetState(spb.GetStateRequest(session_id="g", kinds=[past]))  # type: ignore[list-item]
    assert (bad_filter.value.code(), error_reason(bad_filter.value)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    )
    assert bad_filter.value.details() == f"kinds: {past} is not an EntityKind value"

    level_past = max(tpb.VisibilityLevel.values()) + 1
    for op, message in (
        (_upsert("x", past), f"op 0: entity kind {past} is not an EntityKind value"),
        (_upsert("x", 1, level_past), f"op 0: visibility level {level_past} is not a VisibilityLevel value"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as bad_op:
            await client.apply_deltas("g", 1, [op])
        assert (bad_op.value.code(), error_reason(bad_op.value)) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_DELTA")
        assert bad_op.value.details() == message
    after = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert after == state
