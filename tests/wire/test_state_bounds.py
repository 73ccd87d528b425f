"""Numbers and sizes a hostile or buggy game can send, through a real server on
a Unix socket (issue 13, items 8, 9, 14): a save with an out-of-range revision,
revisions at the bound, and oversized requests. Each is refused with
INVALID_ARGUMENT and a precise reason, and changes nothing, including across a
restart with a state dir."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import grpc
import msgspec
import pytest
from test_session_rpcs import expect_error, state_bytes, upsert

from sidecar.client import SidecarClient
from sidecar.config import Config, StateLimits
from sidecar.state.model import MAX_REVISION
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb

_enc = msgspec.msgpack.Encoder()


def reforge(blob: bytes, edit: object) -> bytes:
    """The blob with its payload edited by `edit(payload_dict)` and a valid checksum."""
    env = msgspec.msgpack.decode(blob)
    payload = msgspec.msgpack.decode(env["payload"])
    edit(payload)  # type: ignore[operator]
    env["payload"] = _enc.encode(payload)
    env["crc32"] = zlib.crc32(env["payload"])
    env["revision"] = payload["revision"]
    return _enc.encode(env)


async def _saved_world(client: SidecarClient, session_id: str) -> bytes:
    await client.open_session(session_id)
    await client.apply_deltas(session_id, 0, [upsert("bob"), upsert("ann")])
    exported = await client.sessions.ExportSession(spb.ExportSessionRequest(session_id=session_id))
    return exported.blob


def _with_revision(rev: int) -> object:
    def edit(p: dict) -> None:
        p["revision"] = rev

    return edit


@pytest.mark.parametrize("rev", [2**63, 2**63 - 1, MAX_REVISION + 1, -1])
async def test_import_of_a_checksummed_blob_with_a_wild_revision_changes_nothing(
    make_server: Any, tmp_path: Path, rev: int
) -> None:
    config = Config(state_dir=str(tmp_path / "state"))
    running = await make_server(config)
    client = running.client
    blob = await _saved_world(client, "g")
    before = await state_bytes(client, "g")
    bad = reforge(blob, _with_revision(rev))
    await expect_error(
        client.sessions.ImportSession(spb.ImportSessionRequest(session_id="g", blob=bad, overwrite=True)),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_BLOB",
    )
    await expect_error(
        client.sessions.ImportSession(spb.ImportSessionRequest(session_id="new", blob=bad)),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_BLOB",
    )
    assert await state_bytes(client, "g") == before
    await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="g"))
    await running.server.stop("restart")
    again = await make_server(Config(state_dir=str(tmp_path / "state")))
    assert await state_bytes(again.client, "g") == before
    assert (await again.client.open_session("new")).created


async def test_import_refuses_history_newer_than_the_save(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob"), pb.DeltaOp(record_event=pb.RecordEventOp(
        event=pb.GameEvent(text="Bob waves.", actor_id="bob")))])
    blob = (await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="g"))).blob

    def future_event(p: dict) -> None:
        p["world"]["events"][0]["revision"] = 2**63 - 1

    await expect_error(
        client.sessions.ImportSession(spb.ImportSessionRequest(session_id="h", blob=reforge(blob, future_event))),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_BLOB",
    )


async def test_replace_state_refuses_revisions_past_the_bound(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob")])
    before = await state_bytes(client, "g")
    for rev in (2**63 - 1, MAX_REVISION + 1, -5):
        await expect_error(
            client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=pb.Snapshot(),
                                                                 revision=rev)),
            grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST",
        )
    assert await state_bytes(client, "g") == before


async def test_a_session_at_the_bound_refuses_to_pass_it_and_stays_usable(
    make_server: Any, tmp_path: Path
) -> None:
    running = await make_server(Config(state_dir=str(tmp_path / "state")))
    client = running.client
    await client.open_session("g")
    snapshot = pb.Snapshot(entities=[pb.Entity(id="bob", kind=1)])
    r = await client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=snapshot,
                                                                   revision=MAX_REVISION))
    assert r.revision == MAX_REVISION
    info = await expect_error(client.apply_deltas("g", MAX_REVISION, [upsert("ann")]),
                              grpc.StatusCode.INVALID_ARGUMENT, "LIMIT_EXCEEDED")
    assert info.metadata["limit"] == "max_revision"
    await expect_error(
        client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=snapshot)),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST",
    )
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert state.revision == MAX_REVISION and [e.id for e in state.snapshot.entities] == ["bob"]
    exported = await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="g"))
    # The way on: rewind.
    r = await client.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="g", snapshot=snapshot, revision=1,
                                                                   allow_rewind=True))
    assert r.revision == 1
    await client.sessions.ImportSession(spb.ImportSessionRequest(session_id="g", blob=exported.blob, overwrite=True))
    await running.server.stop("restart")
    again = await make_server(Config(state_dir=str(tmp_path / "state")))
    assert (await again.client.open_session("g")).revision == MAX_REVISION


async def test_an_oversized_batch_is_refused_before_it_is_parsed(make_server: Any) -> None:
    limits = StateLimits(max_ops_per_batch=100)  # request limit derived: 1 MiB
    running = await make_server(Config(state=limits))
    client = running.client
    await client.open_session("g")
    big = [upsert("bob", description="x" * 16_000) for _ in range(80)]  # 80 ops, ~1.3 MB
    # max_request_bytes is the server's gRPC receive limit: gRPC refuses the body from its
    # length prefix (RESOURCE_EXHAUSTED, no sidecar reason), before it is buffered or parsed.
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.apply_deltas("g", 0, big)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in caught.value.details()
    stream = client.sessions.StreamDeltas(iter([spb.StreamDeltasRequest(session_id="g", ops=big)]))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        _ = [a async for a in stream]
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (await client.sessions.GetState(spb.GetStateRequest(session_id="g"))).revision == 0
    # A full batch of ordinary ops fits; a world bigger than one request goes in pieces.
    ok = await client.apply_deltas("g", 0, [upsert(f"n{i}", description="y" * 200) for i in range(100)])
    assert ok.revision == 1
    world = pb.Snapshot(entities=[pb.Entity(id=f"e{i}", kind=1, description="z" * 16_000) for i in range(80)])
    replaced = await client.replace_state(spb.ReplaceStateRequest(session_id="g", snapshot=world))
    assert replaced.revision == 2
