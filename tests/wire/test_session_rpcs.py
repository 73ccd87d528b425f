"""SessionService through a real grpc.aio server on a Unix socket: every RPC,
its error statuses (code, reason, ErrorInfo metadata) and what they leave
unchanged, and StreamDeltas with a bad batch in the middle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from sidecar.client import SidecarClient, error_reason
from sidecar.config import Config, StateLimits
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb


def upsert(entity_id: str, kind: int = tpb.ENTITY_KIND_CHARACTER, **kw: object) -> pb.DeltaOp:
    return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=pb.Entity(id=entity_id, kind=kind, **kw)))  # type: ignore[arg-type]


def patch(entity_id: str, **fields: tpb.Value) -> pb.DeltaOp:
    return pb.DeltaOp(
        patch_entity=pb.PatchEntityOp(id=entity_id, set_fields={k: tpb.FieldValue(value=v) for k, v in fields.items()})
    )


def error_info(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info


async def expect_error(call: object, code: grpc.StatusCode, reason: str) -> error_details_pb2.ErrorInfo:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    err = caught.value
    assert err.code() == code, err.details()
    assert error_reason(err) == reason
    info = error_info(err)
    assert info.reason == reason and info.domain == "game-sidecar"
    return info


async def state_bytes(client: SidecarClient, session_id: str) -> bytes:
    r = await client.sessions.GetState(spb.GetStateRequest(session_id=session_id))
    return r.SerializeToString(deterministic=True)


async def test_open_apply_get_close(client: SidecarClient) -> None:
    opened = await client.open_session("g1", alias_mode=spb.ALIAS_MODE_KIND, profile="")
    assert (opened.session_id, opened.revision, opened.created) == ("g1", 0, True)
    again = await client.open_session("g1")
    assert (again.revision, again.created) == (0, False)
    ops = [
        upsert("inn", tpb.ENTITY_KIND_LOCATION, name="The Inn"),
        upsert("bob", name="Bob", location_id="inn"),
        patch(
            "bob",
            hp=tpb.Value(int_value=10),
            pos=tpb.Value(vector_value=tpb.Vec3(x=1, y=2, z=3)),
            bag=tpb.Value(
                list_value=tpb.ValueList(values=[tpb.Value(entity_ref="inn"), tpb.Value(string_value="ale")])
            ),
        ),
        pb.DeltaOp(record_event=pb.RecordEventOp(event=pb.GameEvent(text="Bob enters", actor_id="bob"))),
        pb.DeltaOp(set_mood=pb.SetMoodOp(actor_id="bob", pad=tpb.Pad(pleasure=0.5))),
        pb.DeltaOp(set_scene_fact=pb.SetSceneFactOp(key="weather", value=tpb.Value(string_value="rain"))),
    ]
    r = await client.apply_deltas("g1", 0, ops, delta_id="d1")
    assert (r.revision, r.replayed) == (1, False)
    r = await client.apply_deltas("g1", 0, ops, delta_id="d1")
    assert (r.revision, r.replayed) == (1, True)
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g1"))
    assert state.revision == 1
    bob = {e.id: e for e in state.snapshot.entities}["bob"]
    assert bob.fields["hp"].value.int_value == 10 and bob.location_id == "inn"
    assert [v.WhichOneof("kind") for v in bob.fields["bag"].value.list_value.values] == ["entity_ref", "string_value"]
    assert state.snapshot.events[0].revision == 1
    only_places = await client.sessions.GetState(spb.GetStateRequest(session_id="g1", kinds=[tpb.ENTITY_KIND_LOCATION]))
    assert [e.id for e in only_places.snapshot.entities] == ["inn"]
    by_id = await client.sessions.GetState(spb.GetStateRequest(session_id="g1", entity_ids=["bob", "ghost"]))
    assert [e.id for e in by_id.snapshot.entities] == ["bob"]
    closed = await client.close_session("g1")
    assert closed.cancelled_runs == 0
    await expect_error(client.apply_deltas("g1", 1, []), grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND")


async def test_errors_are_precise_and_change_nothing(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob")])
    before = await state_bytes(client, "g")
    info = await expect_error(client.apply_deltas("g", 0, [upsert("ann")]), grpc.StatusCode.ABORTED, "STALE_REVISION")
    assert info.metadata["current_revision"] == "1"
    await expect_error(
        client.apply_deltas("g", 1, [patch("bob", x=tpb.Value(int_value=1)), patch("ghost", x=tpb.Value())]),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_DELTA",  # a Value with no kind set
    )
    info = await expect_error(
        client.apply_deltas("g", 1, [patch("bob", x=tpb.Value(int_value=1)), patch("ghost", x=tpb.Value(int_value=1))]),
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_ENTITY",
    )
    assert info.metadata["op_index"] == "1"
    await expect_error(client.apply_deltas("g", 1, [pb.DeltaOp()]), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_DELTA")
    info = await expect_error(
        client.apply_deltas("g", 1, [patch("bob", name=tpb.Value(string_value="x" * 20_000))]),
        grpc.StatusCode.INVALID_ARGUMENT,
        "LIMIT_EXCEEDED",
    )
    assert info.metadata["limit"] == "max_string_length"
    await expect_error(
        client.apply_deltas("g", 1, [upsert("bob", kind=99)]), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_DELTA"
    )
    assert await state_bytes(client, "g") == before
    await expect_error(
        client.sessions.GetState(spb.GetStateRequest(session_id="nope")), grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND"
    )
    await expect_error(
        client.sessions.GetState(spb.GetStateRequest(session_id="")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    )


async def test_capacity_is_resource_exhausted(make_server) -> None:  # type: ignore[no-untyped-def]
    running = await make_server(Config(state=StateLimits(max_entities=2)))
    client = running.client
    await client.open_session("g")
    info = await expect_error(
        client.apply_deltas("g", 0, [upsert("a"), upsert("b"), upsert("c")]),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "LIMIT_EXCEEDED",
    )
    assert info.metadata["limit"] == "max_entities"


async def _requests(
    items: list[spb.StreamDeltasRequest], gate: asyncio.Queue[None]
) -> AsyncIterator[spb.StreamDeltasRequest]:
    for item in items:
        yield item
        await gate.get()  # one in flight at a time, like a game that waits for each ack


async def test_stream_deltas_reports_a_bad_batch_and_goes_on(client: SidecarClient) -> None:
    await client.open_session("g")
    reqs = [
        spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="t1", ops=[upsert("bob")]),
        spb.StreamDeltasRequest(
            session_id="g", base_revision=1, delta_id="t2", ops=[patch("ghost", hp=tpb.Value(int_value=1))]
        ),
        spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="t3", ops=[]),
        spb.StreamDeltasRequest(
            session_id="g", base_revision=1, delta_id="t4", ops=[patch("bob", hp=tpb.Value(int_value=3))]
        ),
        spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="t1", ops=[upsert("bob")]),
        spb.StreamDeltasRequest(session_id="nope", base_revision=0, delta_id="t5", ops=[]),
    ]
    gate: asyncio.Queue[None] = asyncio.Queue()
    call = client.sessions.StreamDeltas(_requests(reqs, gate))
    got = []
    async for response in call:
        got.append(response)
        gate.put_nowait(None)
    assert [r.delta_id for r in got] == ["t1", "t2", "t3", "t4", "t1", "t5"]
    assert [r.revision for r in got] == [1, 1, 1, 2, 1, 0]
    assert [r.error.reason for r in got] == ["", "UNKNOWN_ENTITY", "STALE_REVISION", "", "", "SESSION_NOT_FOUND"]
    assert got[1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert got[2].error.metadata["current_revision"] == "1"
    assert got[4].replayed
    assert await call.code() == grpc.StatusCode.OK


async def test_stream_deltas_pipelined_acks_in_order(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob")])
    reqs = [
        spb.StreamDeltasRequest(
            session_id="g", base_revision=i, delta_id=f"p{i}", ops=[patch("bob", t=tpb.Value(int_value=i))]
        )
        for i in range(1, 101)
    ]
    got = [r async for r in client.sessions.StreamDeltas(iter(reqs))]
    assert [r.revision for r in got] == list(range(2, 102))
    assert not any(r.HasField("error") for r in got)


async def test_replace_state_and_resync(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob"), upsert("ann")])
    snapshot = pb.Snapshot(
        entities=[pb.Entity(id="inn", kind=tpb.ENTITY_KIND_LOCATION), pb.Entity(id="bob", location_id="inn")],
        scene_facts=[pb.SceneFact(key="time", value=tpb.Value(string_value="dusk"))],
    )
    r = await client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=snapshot, revision=50))
    assert r.revision == 50
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert state.revision == 50 and sorted(e.id for e in state.snapshot.entities) == ["bob", "inn"]
    before = await state_bytes(client, "g")
    await expect_error(
        client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=snapshot, revision=40)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    )
    dup = pb.Snapshot(entities=[pb.Entity(id="x"), pb.Entity(id="x")])
    await expect_error(
        client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=dup)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_REQUEST",
    )
    dangling = pb.Snapshot(entities=[pb.Entity(id="x", location_id="void")])
    await expect_error(
        client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=dangling)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_ENTITY",
    )
    assert await state_bytes(client, "g") == before
    # The engine's view replaces into an equal view.
    r = await client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=state.snapshot))
    again = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert r.revision == 51 and list(again.snapshot.entities) == list(state.snapshot.entities)


async def test_export_import(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob"), patch("bob", hp=tpb.Value(double_value=0.5))])
    exported = await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="g"))
    assert exported.format_version == 4 and exported.revision == 1
    imported = await client.sessions.ImportSession(spb.ImportSessionRequest(session_id="copy", blob=exported.blob))
    assert (imported.session_id, imported.revision) == ("copy", 1)
    assert await state_bytes(client, "copy") == await state_bytes(client, "g")
    await expect_error(
        client.sessions.ImportSession(spb.ImportSessionRequest(session_id="copy", blob=exported.blob)),
        grpc.StatusCode.ALREADY_EXISTS,
        "SESSION_EXISTS",
    )
    for bad in (exported.blob[:-3], b"garbage", b""):
        await expect_error(
            client.sessions.ImportSession(spb.ImportSessionRequest(session_id="copy", blob=bad, overwrite=True)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_BLOB",
        )


async def test_shutting_down_refuses_new_work(server) -> None:  # type: ignore[no-untyped-def]
    client = server.client
    await client.open_session("g")
    server.app.shutting_down = True
    await expect_error(client.apply_deltas("g", 0, []), grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN")
    await expect_error(client.open_session("h"), grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN")
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))  # reads still work (saves)
    assert state.revision == 0
    server.app.shutting_down = False


async def test_state_dir_survives_a_server_restart(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = Config(state_dir=str(tmp_path / "state"))
    first = await make_server(config)
    await first.client.open_session("g")
    await first.client.apply_deltas("g", 0, [upsert("bob")], delta_id="d1")
    await first.client.apply_deltas("g", 1, [patch("bob", hp=tpb.Value(int_value=7))], delta_id="d2")
    before = await state_bytes(first.client, "g")
    await first.server.stop("restart")
    second = await make_server(Config(state_dir=str(tmp_path / "state")))
    reopened = await second.client.open_session("g")
    assert (reopened.revision, reopened.created) == (2, False)
    assert await state_bytes(second.client, "g") == before
    replay = await second.client.apply_deltas("g", 1, [patch("bob", hp=tpb.Value(int_value=7))], delta_id="d2")
    assert (replay.revision, replay.replayed) == (2, True)
