"""Crash test: the real sidecar process with --state-dir, deltas streaming,
kill -9 at a random point, restart with the same dir; several trials.

Batch k (the one that makes revision k) is a fixed function of k, so the state
at any revision R is known exactly: every acknowledged revision must be back,
and the state must be exactly batches 1..R (nothing half-applied)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
from pathlib import Path

import grpc
import pytest

from sidecar.client import SidecarProcess
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

WINDOW = 8  # batches in flight on the stream


def batch(k: int) -> list[pb.DeltaOp]:
    ops = [
        pb.DeltaOp(
            upsert_entity=pb.UpsertEntityOp(
                entity=pb.Entity(id=f"e{k}", fields={"k": tpb.FieldValue(value=tpb.Value(int_value=k))})
            )
        ),
        pb.DeltaOp(record_event=pb.RecordEventOp(event=pb.GameEvent(text=f"tick {k}", entity_ids=[f"e{k}"]))),
    ]
    if k == 1:
        ops.insert(0, pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=pb.Entity(id="counter"))))
    else:
        counter = {"n": tpb.FieldValue(value=tpb.Value(int_value=k))}
        ops.append(pb.DeltaOp(patch_entity=pb.PatchEntityOp(id="counter", set_fields=counter)))
    return ops


def check_state(state: spb.GetStateResponse) -> None:
    r = state.revision
    entities = {e.id: e for e in state.snapshot.entities}
    assert set(entities) == ({"counter"} if r else set()) | {f"e{k}" for k in range(1, r + 1)}
    assert all(entities[f"e{k}"].fields["k"].value.int_value == k for k in range(1, r + 1))
    if r >= 2:
        assert entities["counter"].fields["n"].value.int_value == r
    events = [e.text for e in state.snapshot.events]
    assert events == [f"tick {k}" for k in range(max(1, r - len(events) + 1), r + 1)]
    assert all(e.revision == int(e.text.split()[1]) for e in state.snapshot.events)


async def stream_until_killed(proc: SidecarProcess, start: int, kill_after: float) -> tuple[int, int]:
    """Stream batches start+1.. until the process is killed: (last acked, last sent)."""
    client = proc.client
    slots = asyncio.Semaphore(WINDOW)
    sent = start
    acked = start

    async def requests():  # type: ignore[no-untyped-def]
        nonlocal sent
        while True:
            await slots.acquire()
            k = sent + 1
            sent = k
            yield spb.StreamDeltasRequest(session_id="g", base_revision=k - 1, delta_id=f"d{k}", ops=batch(k))

    async def read() -> None:
        nonlocal acked
        async for response in client.sessions.StreamDeltas(requests()):
            assert not response.HasField("error"), response.error
            assert response.revision == acked + 1
            acked = response.revision
            slots.release()

    reader = asyncio.create_task(read())
    await asyncio.sleep(kill_after)
    os.kill(proc.pid, signal.SIGKILL)
    try:
        await asyncio.wait_for(reader, 10)
    except grpc.aio.AioRpcError as exc:  # the stream dies with the process, as it should
        assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
    await proc.close(timeout=2.0)
    return acked, sent


@pytest.mark.slow
async def test_kill_9_loses_nothing_acknowledged(tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    rng = random.Random(9)
    revision = 0
    for trial in range(4):
        proc = await SidecarProcess.launch(["--state-dir", state_dir])
        opened = await proc.client.sessions.OpenSession(spb.OpenSessionRequest(session_id="g"))
        assert opened.revision == revision and opened.created == (trial == 0)
        check_state(await proc.client.sessions.GetState(spb.GetStateRequest(session_id="g")))
        acked, sent = await stream_until_killed(proc, revision, rng.uniform(0.2, 0.8))
        assert acked > revision, "no batch was acknowledged before the kill; nothing was tested"

        proc = await SidecarProcess.launch(["--state-dir", state_dir])
        try:
            reopened = await proc.client.sessions.OpenSession(spb.OpenSessionRequest(session_id="g"))
            assert not reopened.created
            assert acked <= reopened.revision <= sent, (acked, reopened.revision, sent)
            state = await proc.client.sessions.GetState(spb.GetStateRequest(session_id="g"))
            assert state.revision == reopened.revision
            check_state(state)
            # An acknowledged batch retried after the crash is a replay, not a second apply.
            again = await proc.client.sessions.ApplyDeltas(
                spb.ApplyDeltasRequest(session_id="g", base_revision=acked - 1, delta_id=f"d{acked}", ops=batch(acked))
            )
            assert (again.revision, again.replayed) == (acked, True)
            revision = reopened.revision
        finally:
            await proc.close()
