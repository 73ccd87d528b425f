"""Fuzz: thousands of random, malformed and garbage ApplyDeltas requests
against a running server. It never crashes; every answer is OK or a precise
status; OK exactly when the plain model accepts; and the state the server
reports at the end is the plain model's."""

from __future__ import annotations

import os
import random
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from sidecar.app import App
from sidecar.client import SidecarClient, error_reason
from sidecar.config import Config
from sidecar.servicers.calls import CallInterceptor
from sidecar.servicers.convert_state_from_pb import ops_from_pb, world_from_pb
from sidecar.servicers.session_service import SessionServicer
from sidecar.state.store import SessionStore
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import session_service_pb2_grpc as spb_grpc
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "state"))
from worldgen import PlainModel, world_as_model  # noqa: E402

TOKEN = "fuzz-token"
IDS = ["e0", "e1", "e2", "e3", "e4"]
APPLY = "/sidecar.v1.SessionService/ApplyDeltas"
#: What a rejection may be, per the contract.
PRECISE = {
    grpc.StatusCode.INVALID_ARGUMENT: {"INVALID_DELTA", "UNKNOWN_ENTITY", "LIMIT_EXCEEDED", "INVALID_REQUEST"},
    grpc.StatusCode.RESOURCE_EXHAUSTED: {"LIMIT_EXCEEDED"},
    grpc.StatusCode.ABORTED: {"STALE_REVISION"},
    grpc.StatusCode.NOT_FOUND: {"SESSION_NOT_FOUND"},
}


class Gen:
    """Random proto ops. `good_*` stay inside what the plain model describes."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng

    def id(self) -> str:
        return self.r.choice(IDS)

    def loc(self) -> str:
        return self.r.choice(["", "", *IDS])

    def text(self) -> str:
        return "".join(self.r.choice("abcé龍 🐉") for _ in range(self.r.randint(1, 6))).strip() or "x"

    def value(self, depth: int = 0) -> tpb.Value:
        k = self.r.randrange(7 if depth < 2 else 6)
        if k == 0:
            return tpb.Value(string_value=self.text())
        if k == 1:
            return tpb.Value(int_value=self.r.randint(-(2**63), 2**63 - 1))
        if k == 2:
            return tpb.Value(double_value=self.r.uniform(-1e9, 1e9))
        if k == 3:
            return tpb.Value(bool_value=self.r.random() < 0.5)
        if k == 4:
            return tpb.Value(vector_value=tpb.Vec3(x=self.r.random(), y=-1.5, z=2.0))
        if k == 5:
            return tpb.Value(entity_ref=self.id())
        return tpb.Value(list_value=tpb.ValueList(values=[self.value(depth + 1) for _ in range(self.r.randint(0, 3))]))

    def fields(self) -> dict[str, tpb.FieldValue]:
        return {self.r.choice("abcd"): tpb.FieldValue(value=self.value()) for _ in range(self.r.randint(0, 3))}

    def good_op(self) -> pb.DeltaOp:
        r = self.r
        k = r.randrange(12)
        if k < 3:
            e = pb.Entity(
                id=self.id(), kind=r.randint(0, 6), name=self.text(), location_id=self.loc(), fields=self.fields()
            )
            return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=e))
        if k < 5:
            p = pb.PatchEntityOp(id=self.id(), set_fields=self.fields(), unset_fields=r.sample("abcd", r.randint(0, 2)))
            if r.random() < 0.3:
                p.location_id = self.loc()
            if r.random() < 0.3:
                p.name = self.text()
            return pb.DeltaOp(patch_entity=p)
        if k == 5:
            return pb.DeltaOp(remove_entity=pb.RemoveEntityOp(id=self.id()))
        if k == 6:
            ev = pb.GameEvent(text=self.text(), entity_ids=r.sample(IDS, r.randint(0, 2)), actor_id=self.loc())
            return pb.DeltaOp(record_event=pb.RecordEventOp(event=ev))
        if k == 7:
            rel = pb.Relation(source_id=self.id(), target_id=self.id(), kind=r.choice(["likes", "owes"]), strength=0.5)
            return pb.DeltaOp(set_relation=pb.SetRelationOp(relation=rel, remove=r.random() < 0.3))
        if k == 8:
            pad = tpb.Pad(pleasure=r.uniform(-1.3, 1.3), arousal=0.1, dominance=-0.2)
            return pb.DeltaOp(set_mood=pb.SetMoodOp(actor_id=self.id(), pad=pad))
        if k == 9:
            remove = r.random() < 0.3
            fact = pb.SetSceneFactOp(key=r.choice(["weather", "time"]), remove=remove)
            if not remove:
                fact.value.CopyFrom(self.value())
            return pb.DeltaOp(set_scene_fact=fact)
        if k == 10:
            return pb.DeltaOp(
                record_memory=pb.RecordMemoryOp(memory=pb.MemoryEntry(actor_id=self.id(), text=self.text()))
            )
        return pb.DeltaOp(set_story=pb.SetStoryOp(author_note=self.text()))

    def bad_op(self) -> tuple[pb.DeltaOp, str]:
        """An op the contract rejects whatever the state, and the reason it must get."""
        r = self.r
        k = r.randrange(9)
        if k == 0:
            return pb.DeltaOp(), "INVALID_DELTA"
        if k == 1:
            f = tpb.FieldValue(value=tpb.Value())  # no kind
            return pb.DeltaOp(patch_entity=pb.PatchEntityOp(id="e0", set_fields={"a": f})), "INVALID_DELTA"
        if k == 2:
            e = pb.Entity(id="e0", kind=r.randint(7, 1000))
            return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=e)), "INVALID_DELTA"
        if k == 3:
            e = pb.Entity(id="x" * 300)
            return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=e)), "LIMIT_EXCEEDED"
        if k == 4:
            e = pb.Entity(id="", name="no id")
            return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=e)), "INVALID_DELTA"
        if k == 5:
            v = tpb.Value(string_value="deep")
            for _ in range(r.randint(5, 40)):
                v = tpb.Value(list_value=tpb.ValueList(values=[v]))
            return pb.DeltaOp(set_scene_fact=pb.SetSceneFactOp(key="k", value=v)), "LIMIT_EXCEEDED"
        if k == 6:
            v = tpb.Value(double_value=r.choice([float("nan"), float("inf"), -float("inf")]))
            return pb.DeltaOp(set_scene_fact=pb.SetSceneFactOp(key="k", value=v)), "INVALID_DELTA"
        if k == 7:
            return pb.DeltaOp(record_event=pb.RecordEventOp(event=pb.GameEvent(text="   "))), "INVALID_DELTA"
        e = pb.Entity(id="e1", description="d" * 20_000)
        return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=e)), "LIMIT_EXCEEDED"


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if b and rng.random() < 0.6:
            b[rng.randrange(len(b))] = rng.randrange(256)
        else:
            b[rng.randrange(len(b) + 1) : rng.randrange(len(b) + 1)] = rng.randbytes(rng.randint(1, 4))
    return bytes(b)


@pytest.fixture
async def session_server() -> AsyncIterator[SidecarClient]:
    """SessionService alone on a Unix socket, behind the sidecar's own call
    interceptor (auth, tolerant parsing, error mapping): the fuzz is about the state path."""
    with tempfile.TemporaryDirectory(prefix="sidecar-fuzz-") as tmp:
        target = "unix:" + os.path.join(tmp, "s.sock")
        config = Config()
        store = SessionStore(config.state)
        await store.start()
        server = grpc.aio.server(interceptors=[CallInterceptor(TOKEN)])
        app = App(config=config, store=store, gateway=None, runs=None, context=None)
        spb_grpc.add_SessionServiceServicer_to_server(SessionServicer(app), server)
        server.add_insecure_port(target)
        await server.start()
        client = SidecarClient(target, TOKEN)
        try:
            yield client
        finally:
            await client.close()
            await server.stop(None)
            await store.aclose()


@pytest.mark.slow
async def test_fuzz_apply_deltas(session_server: SidecarClient) -> None:
    client = session_server
    rng = random.Random(20261129)
    gen = Gen(rng)
    await client.open_session("fz")
    model = PlainModel()
    raw = client.channel.unary_unary(APPLY, request_serializer=lambda b: b, response_deserializer=lambda b: b)
    counts: dict[str, int] = {}
    for i in range(3000):
        kind = rng.choices(["good", "bad", "stale", "bytes", "mutated"], weights=[6, 2, 1, 1, 1])[0]
        ops = [gen.good_op() for _ in range(rng.randint(0, 4))]
        base = model.revision
        expected: str | None = None
        if kind == "bad":
            bad, expected = gen.bad_op()
            at = rng.randint(0, len(ops))
            ops.insert(at, bad)
            if at > 0:  # an earlier op may fail first, for its own reason
                expected = "REJECTED"
        elif kind == "stale":
            base = model.revision + rng.choice([-1, 1, 7])
            expected = "STALE_REVISION"
        req = spb.ApplyDeltasRequest(session_id="fz", base_revision=base, delta_id=f"d{i}", ops=ops)
        data = req.SerializeToString()
        if kind == "bytes":
            data = rng.randbytes(rng.randint(0, 64))
        elif kind == "mutated":
            data = mutate(rng, data)
        try:
            answer = await raw(data)
            outcome = "OK"
        except grpc.aio.AioRpcError as err:
            answer = None
            code, reason = err.code(), error_reason(err)
            assert reason in PRECISE.get(code, set()), (kind, code, reason, err.details())
            outcome = reason
            if reason == "INVALID_REQUEST" and "not a valid ApplyDeltasRequest" in (err.details() or ""):
                assert kind in ("bytes", "mutated")
                outcome = "UNPARSEABLE"
        counts[outcome] = counts.get(outcome, 0) + 1
        if kind in ("bytes", "mutated"):
            if answer is not None or outcome not in ("UNPARSEABLE", "SESSION_NOT_FOUND", "STALE_REVISION"):
                # It parsed: resync the model from what the server says (it is a valid request).
                parsed = spb.ApplyDeltasRequest.FromString(data)
                if answer is not None and not spb.ApplyDeltasResponse.FromString(answer).replayed:
                    assert parsed.session_id == "fz" and model.apply(ops_from_pb(parsed.ops)), parsed
            continue
        if expected is not None:
            assert outcome == expected or (expected == "REJECTED" and outcome != "OK"), (kind, outcome, expected, req)
            continue
        accepted = model.apply(ops_from_pb(ops))
        assert (outcome == "OK") == accepted, (outcome, req)
        if accepted:
            assert spb.ApplyDeltasResponse.FromString(answer).revision == model.revision  # type: ignore[arg-type]
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="fz"))
    assert state.revision == model.revision
    assert world_as_model(world_from_pb(state.snapshot)) == model.d
    assert counts.get("OK", 0) > 300 and counts.get("UNKNOWN_ENTITY", 0) > 50, counts
    assert counts.get("UNPARSEABLE", 0) > 50, counts


async def test_stream_reports_unparseable_requests_and_goes_on(session_server: SidecarClient) -> None:
    client = session_server
    await client.open_session("g")
    call = client.channel.stream_stream(
        "/sidecar.v1.SessionService/StreamDeltas", request_serializer=lambda b: b, response_deserializer=lambda b: b
    )
    good = spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="a").SerializeToString()
    bad_utf8 = b"\x0a\x02\xff\xfe"  # field 1 (session_id) with invalid UTF-8
    got = [spb.StreamDeltasResponse.FromString(r) async for r in call(iter([bad_utf8, b"\xff\xff\xff", good]))]
    assert [r.error.reason for r in got] == ["INVALID_REQUEST", "INVALID_REQUEST", ""]
    assert got[0].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert got[2].revision == 1
