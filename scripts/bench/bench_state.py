#!/usr/bin/env python
"""Figures for incremental state (issue 3). Prints one JSON object.

A world of 10,000 entities with 10 fields each; every tick 1% of the entities
change (3 fields each: position, hp, state). Measured in one run:

- delta_bytes / snapshot_bytes / bytes_ratio: a tick as ApplyDeltasRequest vs
  the whole world as ReplaceStateRequest, serialized protobuf.
- field_updates_per_s: validate + apply by the state engine on one core (domain
  ops prepared beforehand); field_updates_per_s_with_decode adds proto -> domain.
- apply_rtt_ms_p50_unary / _stream: one small batch (1 entity, 3 fields)
  through ApplyDeltas / StreamDeltas to the real sidecar process on its Unix
  socket, from a Python client; tick_rtt_ms_p50_stream: a whole tick.
- journal_apply_rtt_ms_p50 (stream) and _unary: the same with --state-dir.
- journal_loop_lag_ms_p99 / _max: how late a 1 ms timer fires on the event loop
  while ticks are journaled back to back, compactions included (commits run in
  the journal thread; a compaction encodes 500 entities per loop turn:
  snapshot_chunk_encode_ms); snapshot_encode_ms: encoding the whole session at
  once, what an ExportSession costs on the loop.
- rss_mb_10k_entities: RSS growth of a fresh process holding the world in a
  session (measured in a child process).
- delta_digest_us_per_tick / delta_digest_ms_10k_ops: the digest a delta ID is
  remembered with (codec.ops_digest), of one tick and of the whole world as one
  10,000-op batch; apply_ms_per_tick beside it for scale.
- import_blob_ms_10k_entities: decoding a save of the world (codec.import_blob),
  of which blob_shape_check_ms is the payload's shape check (blobshape); best
  of 5 each.

Usage: .venv/bin/python scripts/bench/bench_state.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time

import msgspec

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.config import StateLimits  # noqa: E402
from sidecar.servicers.convert_state_from_pb import ops_from_pb, world_from_pb  # noqa: E402
from sidecar.state import codec  # noqa: E402
from sidecar.state.apply import apply_ops  # noqa: E402
from sidecar.state.model import Session  # noqa: E402
from sidecar.state.store import SessionStore  # noqa: E402
from sidecar.state.validate import validate_batch  # noqa: E402
from sidecar.v1 import session_service_pb2 as spb  # noqa: E402
from sidecar.v1 import state_pb2 as pb  # noqa: E402
from sidecar.v1 import types_pb2 as tpb  # noqa: E402

SCRIPT = os.path.abspath(__file__)
N_ENTITIES = 10_000
CHANGE_SHARE = 0.01
STATES = ["idle", "walking", "fighting", "fleeing", "sleeping"]


def world_snapshot(rng: random.Random) -> pb.Snapshot:
    entities = [pb.Entity(id=f"loc-{i}", kind=tpb.ENTITY_KIND_LOCATION, name=f"Place {i}") for i in range(100)]
    for i in range(N_ENTITIES - len(entities)):
        fields = {
            "pos": tpb.Value(vector_value=tpb.Vec3(x=rng.uniform(0, 1000), y=rng.uniform(0, 1000), z=0.0)),
            "hp": tpb.Value(int_value=rng.randint(1, 100)),
            "mp": tpb.Value(int_value=rng.randint(0, 50)),
            "state": tpb.Value(string_value=rng.choice(STATES)),
            "speed": tpb.Value(double_value=rng.uniform(0, 5)),
            "alive": tpb.Value(bool_value=True),
            "home": tpb.Value(entity_ref=f"loc-{rng.randrange(100)}"),
            "level": tpb.Value(int_value=rng.randint(1, 60)),
            "faction": tpb.Value(string_value=rng.choice(["guild", "crown", "none"])),
            "inventory": tpb.Value(
                list_value=tpb.ValueList(values=[tpb.Value(string_value=s) for s in ("sword", "bread", "rope")])
            ),
        }
        entities.append(
            pb.Entity(
                id=f"npc-{i}",
                kind=tpb.ENTITY_KIND_CHARACTER,
                name=f"Npc {i}",
                location_id=f"loc-{rng.randrange(100)}",
                fields={k: tpb.FieldValue(value=v) for k, v in fields.items()},
            )
        )
    return pb.Snapshot(entities=entities)


def tick_ops(rng: random.Random, n_changing: int) -> list[pb.DeltaOp]:
    ops = []
    for i in rng.sample(range(N_ENTITIES - 100), n_changing):
        fields = {
            "pos": tpb.Value(vector_value=tpb.Vec3(x=rng.uniform(0, 1000), y=rng.uniform(0, 1000), z=0.0)),
            "hp": tpb.Value(int_value=rng.randint(1, 100)),
            "state": tpb.Value(string_value=rng.choice(STATES)),
        }
        ops.append(
            pb.DeltaOp(
                patch_entity=pb.PatchEntityOp(
                    id=f"npc-{i}", set_fields={k: tpb.FieldValue(value=v) for k, v in fields.items()}
                )
            )
        )
    return ops


def p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def engine_throughput(snapshot: pb.Snapshot, rng: random.Random, ticks: int) -> tuple[float, float]:
    limits = StateLimits()
    session = Session(id="bench")
    world = world_from_pb(snapshot)
    from sidecar.state.ops import world_to_ops

    ops = world_to_ops(world)
    validate_batch(session.world, ops, msgspec_replace(limits, len(ops)))
    apply_ops(session, ops, 1, limits)
    n_changing = int(N_ENTITIES * CHANGE_SHARE)
    pb_ticks = [tick_ops(rng, n_changing) for _ in range(ticks)]
    domain_ticks = [ops_from_pb(t) for t in pb_ticks]
    updates = sum(len(op.set_fields) for t in domain_ticks for op in t)  # type: ignore[union-attr]
    gc.collect()
    t0 = time.perf_counter()
    for t in domain_ticks:
        validate_batch(session.world, t, limits)
        apply_ops(session, t, session.revision + 1, limits)
    engine_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for t in pb_ticks:
        d = ops_from_pb(t)
        validate_batch(session.world, d, limits)
        apply_ops(session, d, session.revision + 1, limits)
    with_decode_s = time.perf_counter() - t0
    return updates / engine_s, updates / with_decode_s


def _best_ms(fn: object, n: int = 5) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def digests_and_blobs(snapshot: pb.Snapshot, rng: random.Random) -> dict[str, float]:
    """What delta digests cost per batch, and what the blob shape check adds to an import."""
    from sidecar.state.blobshape import check_payload_shape
    from sidecar.state.ops import world_to_ops

    limits = StateLimits()
    world = world_from_pb(snapshot)
    ops = world_to_ops(world)
    session = Session(id="bench")
    apply_ops(session, ops, 1, limits)
    ticks = [ops_from_pb(tick_ops(rng, int(N_ENTITIES * CHANGE_SHARE))) for _ in range(200)]
    gc.collect()
    t0 = time.perf_counter()
    for t in ticks:
        codec.ops_digest(t)
    digest_us = (time.perf_counter() - t0) / len(ticks) * 1e6
    t0 = time.perf_counter()
    for t in ticks:
        apply_ops(session, t, session.revision + 1, limits)
    apply_ms = (time.perf_counter() - t0) / len(ticks) * 1000
    blob = codec.export_blob(session)
    raw = msgspec.msgpack.decode(msgspec.msgpack.decode(blob)["payload"])
    return {
        "delta_digest_us_per_tick": digest_us,
        "apply_ms_per_tick": apply_ms,
        "delta_digest_ms_10k_ops": _best_ms(lambda: codec.ops_digest(ops)),
        "import_blob_ms_10k_entities": _best_ms(lambda: codec.import_blob(blob)),
        "blob_shape_check_ms": _best_ms(lambda: check_payload_shape(raw, codec.BLOB_VERSION)),
        "blob_mb": len(blob) / 1e6,
    }


def msgspec_replace(limits: StateLimits, n: int) -> StateLimits:
    import msgspec

    return msgspec.structs.replace(limits, max_ops_per_batch=max(n, limits.max_ops_per_batch))


async def rtts(state_dir: str | None, snapshot: pb.Snapshot, rng: random.Random, n: int) -> dict[str, float]:
    args = ["--state-dir", state_dir] if state_dir else []
    out: dict[str, float] = {}
    async with await SidecarProcess.launch(args) as proc:
        c = proc.client
        # litellm loads in the background after the handshake; measure after it, not against it.
        for _ in range(600):
            if (await c.get_info()).llm_ready:
                break
            await asyncio.sleep(0.1)
        await c.open_session("bench")
        r = await c.sessions.ReplaceState(spb.ReplaceStateRequest(session_id="bench", snapshot=snapshot))
        rev = r.revision
        small = [tick_ops(rng, 1) for _ in range(n)]
        times = []
        for ops in small:
            t0 = time.perf_counter()
            resp = await c.sessions.ApplyDeltas(
                spb.ApplyDeltasRequest(session_id="bench", base_revision=rev, delta_id=f"u{rev}", ops=ops)
            )
            times.append(time.perf_counter() - t0)
            rev = resp.revision
        out["unary"] = statistics.median(times) * 1000

        async def stream(batches: list[list[pb.DeltaOp]]) -> list[float]:
            nonlocal rev
            queue: asyncio.Queue[spb.StreamDeltasRequest | None] = asyncio.Queue()

            async def requests():  # type: ignore[no-untyped-def]
                while (item := await queue.get()) is not None:
                    yield item

            call = c.sessions.StreamDeltas(requests())
            took = []
            for ops in batches:
                t0 = time.perf_counter()
                queue.put_nowait(
                    spb.StreamDeltasRequest(session_id="bench", base_revision=rev, delta_id=f"s{rev}", ops=ops)
                )
                resp = await call.read()
                took.append(time.perf_counter() - t0)
                assert not resp.HasField("error"), resp.error
                rev = resp.revision
            queue.put_nowait(None)
            await call.code()
            return took

        out["stream"] = statistics.median(await stream(small)) * 1000
        n_changing = int(N_ENTITIES * CHANGE_SHARE)
        out["tick_stream"] = statistics.median(await stream([tick_ops(rng, n_changing) for _ in range(n // 10)])) * 1000
    return out


async def journal_loop_lag(snapshot: pb.Snapshot, rng: random.Random, ticks: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as d:
        store = SessionStore(StateLimits(journal_compact_records=200), d)
        await store.start()
        await store.open("bench")
        await store.replace("bench", world_from_pb(snapshot))
        n_changing = int(N_ENTITIES * CHANGE_SHARE)
        batches = [ops_from_pb(tick_ops(rng, n_changing)) for _ in range(ticks)]
        lateness: list[float] = []
        done = False

        async def ticker() -> None:
            while not done:
                t0 = time.perf_counter()
                await asyncio.sleep(0.001)
                lateness.append(time.perf_counter() - t0 - 0.001)

        task = asyncio.create_task(ticker())
        t0 = time.perf_counter()
        for ops in batches:
            rev = store.get("bench").revision
            await store.apply("bench", rev, f"t{rev}", ops)
        elapsed = time.perf_counter() - t0
        done = True
        await task
        session = store.get("bench")
        t1 = time.perf_counter()
        codec.encode_session(session)
        encode_ms = (time.perf_counter() - t1) * 1000
        chunk = list(session.world.entities.values())[: codec.SNAPSHOT_CHUNK]
        t1 = time.perf_counter()
        msgspec.msgpack.encode(chunk)
        chunk_ms = (time.perf_counter() - t1) * 1000
        await store.aclose()
    return {
        "p99": p(lateness, 0.99) * 1000,
        "max": max(lateness) * 1000,
        "ticks_per_s": ticks / elapsed,
        "snapshot_encode_ms": encode_ms,
        "snapshot_chunk_encode_ms": chunk_ms,
    }


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def rss_child() -> None:
    """In a fresh process: RSS growth from holding the world in a session."""
    snapshot = world_snapshot(random.Random(1)).SerializeToString()
    gc.collect()
    before = rss_kb()

    async def build() -> SessionStore:
        store = SessionStore(StateLimits())
        await store.start()
        await store.open("bench")
        await store.replace("bench", world_from_pb(pb.Snapshot.FromString(snapshot)))
        return store

    store = asyncio.run(build())
    gc.collect()
    after = rss_kb()
    assert len(store.get("bench").world.entities) == N_ENTITIES
    print(json.dumps({"rss_mb": (after - before) / 1024}))


async def main(quick: bool) -> None:
    rng = random.Random(7)
    snapshot = world_snapshot(rng)
    n_changing = int(N_ENTITIES * CHANGE_SHARE)
    tick = spb.ApplyDeltasRequest(session_id="bench", base_revision=1, delta_id="t1", ops=tick_ops(rng, n_changing))
    whole = spb.ReplaceStateRequest(session_id="bench", snapshot=snapshot)
    delta_bytes, snapshot_bytes = tick.ByteSize(), whole.ByteSize()
    ups, ups_decode = engine_throughput(snapshot, rng, 50 if quick else 300)
    costs = digests_and_blobs(snapshot, rng)
    plain = await rtts(None, snapshot, rng, 200 if quick else 2000)
    with tempfile.TemporaryDirectory(prefix="bench-state-") as d:
        journaled = await rtts(d, snapshot, rng, 200 if quick else 2000)
    lag = await journal_loop_lag(snapshot, rng, 100 if quick else 600)
    child = await asyncio.create_subprocess_exec(sys.executable, SCRIPT, "--rss-child", stdout=asyncio.subprocess.PIPE)
    out, _ = await child.communicate()
    rss = json.loads(out)["rss_mb"]
    print(
        json.dumps(
            {
                "entities": N_ENTITIES,
                "fields_per_entity": 10,
                "changing_per_tick": n_changing,
                "fields_changed_per_entity": 3,
                "delta_bytes": delta_bytes,
                "snapshot_bytes": snapshot_bytes,
                "bytes_ratio": round(delta_bytes / snapshot_bytes, 5),
                "field_updates_per_s": round(ups),
                "field_updates_per_s_with_decode": round(ups_decode),
                "apply_rtt_ms_p50_unary": round(plain["unary"], 3),
                "apply_rtt_ms_p50_stream": round(plain["stream"], 3),
                "tick_rtt_ms_p50_stream": round(plain["tick_stream"], 3),
                "journal_apply_rtt_ms_p50": round(journaled["stream"], 3),
                "journal_apply_rtt_ms_p50_unary": round(journaled["unary"], 3),
                "journal_tick_rtt_ms_p50_stream": round(journaled["tick_stream"], 3),
                "journal_loop_lag_ms_p99": round(lag["p99"], 3),
                "journal_loop_lag_ms_max": round(lag["max"], 3),
                "journal_ticks_per_s": round(lag["ticks_per_s"], 1),
                "snapshot_encode_ms": round(lag["snapshot_encode_ms"], 2),
                "snapshot_chunk_encode_ms": round(lag["snapshot_chunk_encode_ms"], 2),
                "rss_mb_10k_entities": round(rss, 1),
                **{k: round(v, 2) for k, v in costs.items()},
                "python": sys.version.split()[0],
                "cpus": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.rss_child:
        rss_child()
    else:
        asyncio.run(main(ns.quick))
