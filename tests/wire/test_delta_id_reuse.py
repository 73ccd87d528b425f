"""A delta ID reused over other ops (issue 24, item 11), through a real grpc.aio
server: ApplyDeltas gets ALREADY_EXISTS / DELTA_ID_REUSED (metadata `revision`)
and StreamDeltas the same error in its response, and goes on; nothing is
applied. A game that restarted its delta counter after a relaunch on the same
--state-dir is the case that fell into the silent replay."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest
from test_session_rpcs import _requests, expect_error, patch, state_bytes, upsert

from sidecar.client import SidecarClient
from sidecar.config import Config
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import types_pb2 as tpb


async def test_apply_deltas_refuses_a_reused_delta_id_and_applies_nothing(client: SidecarClient) -> None:
    await client.open_session("g")
    await client.apply_deltas("g", 0, [upsert("bob")], delta_id="d1")
    await client.apply_deltas("g", 1, [patch("bob", hp=tpb.Value(int_value=3))], delta_id="d2")
    before = await state_bytes(client, "g")
    info = await expect_error(
        client.apply_deltas("g", 2, [upsert("ann")], delta_id="d1"), grpc.StatusCode.ALREADY_EXISTS, "DELTA_ID_REUSED"
    )
    assert info.metadata["revision"] == "1"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.apply_deltas("g", 2, [patch("bob", hp=tpb.Value(int_value=4))], delta_id="d2")
    assert "'d2'" in (caught.value.details() or "") and "other ops" in (caught.value.details() or "")
    assert await state_bytes(client, "g") == before
    replay = await client.apply_deltas("g", 1, [patch("bob", hp=tpb.Value(int_value=3))], delta_id="d2")
    assert (replay.revision, replay.replayed) == (2, True)


async def test_stream_deltas_reports_a_reused_delta_id_and_goes_on(client: SidecarClient) -> None:
    await client.open_session("g")
    reqs = [
        spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="s1", ops=[upsert("bob")]),
        spb.StreamDeltasRequest(session_id="g", base_revision=1, delta_id="s1", ops=[upsert("ann")]),
        spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="s1", ops=[upsert("bob")]),
        spb.StreamDeltasRequest(session_id="g", base_revision=1, delta_id="s2", ops=[upsert("ann")]),
    ]
    gate: asyncio.Queue[None] = asyncio.Queue()
    call = client.sessions.StreamDeltas(_requests(reqs, gate))
    got = []
    async for response in call:
        got.append(response)
        gate.put_nowait(None)
    assert [r.delta_id for r in got] == ["s1", "s1", "s1", "s2"]
    assert [r.revision for r in got] == [1, 1, 1, 2]
    assert [r.error.reason for r in got] == ["", "DELTA_ID_REUSED", "", ""]
    assert got[1].error.code == grpc.StatusCode.ALREADY_EXISTS.value[0]
    assert got[1].error.metadata["revision"] == "1" and "'s1'" in got[1].error.message
    assert [r.replayed for r in got] == [False, False, True, False]
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    assert sorted(e.id for e in state.snapshot.entities) == ["ann", "bob"]
    assert await call.code() == grpc.StatusCode.OK


async def test_a_game_that_restarts_its_delta_counter_is_told(make_server: Any, tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    first = await make_server(Config(state_dir=state_dir))
    await first.client.open_session("g")
    for k in range(1, 4):
        await first.client.apply_deltas("g", k - 1, [upsert(f"e{k}")], delta_id=f"d{k}")
    await first.server.stop("restart")
    second = await make_server(Config(state_dir=state_dir))
    opened = await second.client.open_session("g")
    before = await state_bytes(second.client, "g")
    # The relaunched game counts from d1 again, with its new batch.
    info = await expect_error(
        second.client.apply_deltas("g", opened.revision, [upsert("new")], delta_id="d1"),
        grpc.StatusCode.ALREADY_EXISTS,
        "DELTA_ID_REUSED",
    )
    assert info.metadata["revision"] == "1"
    assert await state_bytes(second.client, "g") == before
    replay = await second.client.apply_deltas("g", 2, [upsert("e3")], delta_id="d3")
    assert (replay.revision, replay.replayed) == (3, True)
