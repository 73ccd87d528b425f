#!/usr/bin/env python
"""The Python client's figures with the workload of clients/cpp/bench/bench_client.cpp
(and clients/csharp/bench/BenchClient), so the three clients can be compared on one
machine: launch -> handshake and stop, unary ApplyDeltas against StreamDeltas (one
op per batch), and scripted runs (first token, cold and warm). Prints one JSON object.

Before the measured calls, all three benches warm up the same way: unary and stream
calls for --warmup-seconds, then a 1 s pause (start-up work, the sidecar's background
imports or .NET's JIT, does not belong in a steady-state figure).

Usage: .venv/bin/python scripts/bench/bench_client_py.py [--config clients/cpp/bench/bench.toml]
           [--launches 10] [--batches 1000] [--runs 10] [--warmup-seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.v1 import agent_service_pb2 as agent_pb  # noqa: E402
from sidecar.v1 import session_service_pb2 as session_pb  # noqa: E402
from sidecar.v1 import state_pb2, types_pb2  # noqa: E402


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))]


def fact(i: int) -> state_pb2.DeltaOp:
    return state_pb2.DeltaOp(set_scene_fact=state_pb2.SetSceneFactOp(key="tick", value=types_pb2.Value(int_value=i)))


async def main(args: argparse.Namespace) -> dict[str, object]:
    exe = os.environ.get("GAME_SIDECAR_EXE") or str(ROOT / ".venv" / "bin" / "game-sidecar")
    launch_args = ["serve", "--config", args.config]
    launch_ms, first_call_ms, stop_ms = [], [], []
    for _ in range(args.launches):
        t0 = time.perf_counter()
        p = await SidecarProcess.launch(launch_args, command=[exe], timeout=30)
        t1 = time.perf_counter()
        await p.client.get_info()
        t2 = time.perf_counter()
        await p.close()
        t3 = time.perf_counter()
        launch_ms.append((t1 - t0) * 1000)
        first_call_ms.append((t2 - t0) * 1000)
        stop_ms.append((t3 - t2) * 1000)

    async with await SidecarProcess.launch(launch_args, command=[exe], timeout=30) as sidecar:
        client = sidecar.client
        await client.open_session("bench")
        rev, warmup = 0, 0
        warm = client.sessions.StreamDeltas()
        warm_until = time.perf_counter() + args.warmup_seconds
        while time.perf_counter() < warm_until:
            rev = (await client.apply_deltas("bench", rev, [fact(warmup)], delta_id=f"wu{warmup}")).revision
            await warm.write(session_pb.StreamDeltasRequest(session_id="bench", base_revision=rev,
                                                            delta_id=f"ws{warmup}", ops=[fact(warmup)]))
            rev = (await warm.read()).revision
            warmup += 1
        await warm.done_writing()
        await asyncio.sleep(1.0)

        unary_us: list[float] = []
        cpu0 = time.process_time()
        for i in range(args.batches):
            t0 = time.perf_counter()
            r = await client.apply_deltas("bench", rev, [fact(i)], delta_id=f"u{i}")
            unary_us.append((time.perf_counter() - t0) * 1e6)
            rev = r.revision
        unary_cpu_us = (time.process_time() - cpu0) * 1e6 / max(1, args.batches)

        stream_us: list[float] = []
        call = client.sessions.StreamDeltas()
        cpu0 = time.process_time()
        for i in range(args.batches):
            req = session_pb.StreamDeltasRequest(session_id="bench", base_revision=rev, delta_id=f"s{i}", ops=[fact(i)])
            t0 = time.perf_counter()
            await call.write(req)
            resp = await call.read()
            stream_us.append((time.perf_counter() - t0) * 1e6)
            if resp.HasField("error"):
                raise SystemExit(f"StreamDeltas: {resp.error}")
            rev = resp.revision
        stream_cpu_us = (time.process_time() - cpu0) * 1e6 / max(1, args.batches)
        await call.done_writing()

        ttft_ms, total_ms, cold = [], [], 0.0
        for i in range(args.runs + 1):
            req = agent_pb.RunRequest(session_id="bench", narrate=agent_pb.NarrateInput(text="The gate opens."))
            first = -1.0
            t0 = time.perf_counter()
            async for event in client.run(req):
                if event.WhichOneof("kind") == "text" and first < 0:
                    first = (time.perf_counter() - t0) * 1000
            total = (time.perf_counter() - t0) * 1000
            if i == 0:
                cold = first
            else:
                ttft_ms.append(first)
                total_ms.append(total)

    return {
        "bench": "python_client", "launches": args.launches,
        "launch_to_handshake_ms_p50": round(pct(launch_ms, 0.5), 1),
        "launch_to_handshake_ms_max": round(max(launch_ms), 1),
        "launch_to_first_call_ms_p50": round(pct(first_call_ms, 0.5), 1), "stop_ms_p50": round(pct(stop_ms, 0.5), 1),
        "batches": args.batches, "warmup_batches": warmup, "warmup_seconds": args.warmup_seconds,
        "apply_deltas_unary_us_p50": round(pct(unary_us, 0.5)), "apply_deltas_unary_us_p99": round(pct(unary_us, 0.99)),
        "stream_deltas_us_p50": round(pct(stream_us, 0.5)), "stream_deltas_us_p99": round(pct(stream_us, 0.99)),
        "stream_vs_unary_p50": round(pct(stream_us, 0.5) / max(1.0, pct(unary_us, 0.5)), 2),
        "apply_deltas_unary_cpu_us": round(unary_cpu_us), "stream_deltas_cpu_us": round(stream_cpu_us),
        "runs": args.runs, "run_cold_first_token_ms": round(cold, 1),
        "run_first_token_ms_p50": round(pct(ttft_ms, 0.5), 1), "run_total_ms_p50": round(pct(total_ms, 0.5), 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "clients" / "cpp" / "bench" / "bench.toml"))
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup-seconds", type=float, default=3.0)
    parsed = parser.parse_args()
    parsed.config = str(Path(parsed.config).resolve())
    print(json.dumps(asyncio.run(main(parsed))))
