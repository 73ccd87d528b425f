"""Crash test: the real sidecar process with --state-dir, deltas streaming,
kill -9 at a random point, restart with the same dir, resend what was in
flight under its original delta IDs; several trials.

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

from sidecar.client import SidecarProcess, error_reason
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


async def stream_until_killed(proc: SidecarProcess, start: int, kill_at: int) -> tuple[int, int]:
    """Stream batches start+1.. and SIGKILL the process once `kill_at` batches
    are acknowledged, with up to WINDOW more in flight: (last acked, last sent).

    The kill follows a condition, not a clock: on a cold, loaded machine the
    first ack can take longer than any fixed delay, and a kill before it
    tested nothing (this test used to fail so, issue 13 item 15)."""
    call = proc.client.sessions.StreamDeltas()
    slots = asyncio.Semaphore(WINDOW)
    sent = start
    acked = start
    enough = asyncio.Event()

    async def write() -> None:
        # The call's own write API, not a request generator: after the kill
        # grpc would try to close a generator suspended in it ("aclose():
        # asynchronous generator is already running").
        nonlocal sent
        while True:
            await slots.acquire()
            k = sent + 1
            await call.write(
                spb.StreamDeltasRequest(session_id="g", base_revision=k - 1, delta_id=f"d{k}", ops=batch(k))
            )
            sent = k

    async def read() -> None:
        nonlocal acked
        while (response := await call.read()) is not grpc.aio.EOF:
            assert not response.HasField("error"), response.error
            assert response.revision == acked + 1
            acked = response.revision
            if acked - start >= kill_at:
                enough.set()
            slots.release()

    writer = asyncio.create_task(write())
    reader = asyncio.create_task(read())
    waiter = asyncio.create_task(enough.wait())
    await asyncio.wait([waiter, reader], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    assert enough.is_set(), f"the stream ended before {kill_at} acks: {reader.exception()!r}"
    os.kill(proc.pid, signal.SIGKILL)
    try:
        await reader
    except grpc.aio.AioRpcError as exc:  # the stream dies with the process, as it should
        # grpc.aio reports INTERNAL "Internal error from Core" instead when its own write is
        # in flight as the connection closes (grpc/grpc#36066, open upstream; seen once in a
        # fresh-clone CI run). This raw client has no sidecar to ask; sidecar.client._connection maps
        # both to SidecarGone once the exit is seen.
        internal_race = exc.code() == grpc.StatusCode.INTERNAL and "Internal error from Core" in str(exc.details())
        assert exc.code() == grpc.StatusCode.UNAVAILABLE or internal_race, exc
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    await proc.close(timeout=5.0)
    return acked, sent


#: Liveness bound for a handshake: a cold machine compiles every module first.
LAUNCH_TIMEOUT_S = 60.0


@pytest.mark.slow
@pytest.mark.timeout(600)  # 8 launches of the real process; cold and loaded, minutes
async def test_kill_9_loses_nothing_acknowledged(tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    rng = random.Random(9)
    revision = 0
    for trial in range(4):
        proc = await SidecarProcess.launch(["--state-dir", state_dir], timeout=LAUNCH_TIMEOUT_S)
        opened = await proc.client.sessions.OpenSession(spb.OpenSessionRequest(session_id="g"))
        assert opened.revision == revision and opened.created == (trial == 0)
        check_state(await proc.client.sessions.GetState(spb.GetStateRequest(session_id="g")))
        acked, sent = await stream_until_killed(proc, revision, rng.randint(1, 40))
        assert acked > revision

        proc = await SidecarProcess.launch(["--state-dir", state_dir], timeout=LAUNCH_TIMEOUT_S)
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
            # The batches in flight at the kill, resent under their original IDs and bases
            # (what a crash-recovering client does), are each applied exactly once: a
            # replay when the dead process had committed it, applied now when not.
            for k in range(acked + 1, sent + 1):
                resent = await proc.client.sessions.ApplyDeltas(
                    spb.ApplyDeltasRequest(session_id="g", base_revision=k - 1, delta_id=f"d{k}", ops=batch(k))
                )
                assert (resent.revision, resent.replayed) == (k, k <= reopened.revision)
            state = await proc.client.sessions.GetState(spb.GetStateRequest(session_id="g"))
            assert state.revision == sent
            check_state(state)
            # The same IDs over other ops are refused, as the window came back with its digests.
            other = spb.ApplyDeltasRequest(session_id="g", base_revision=sent, delta_id=f"d{acked}")
            other.ops.extend(batch(sent + 1))
            with pytest.raises(grpc.aio.AioRpcError) as reused:
                await proc.client.sessions.ApplyDeltas(other)
            assert reused.value.code() == grpc.StatusCode.ALREADY_EXISTS
            assert error_reason(reused.value) == "DELTA_ID_REUSED"
            revision = sent
        finally:
            await proc.close()
