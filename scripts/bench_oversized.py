#!/usr/bin/env python3
"""The real sidecar's resident memory before and after a run of rejected,
oversized requests (issue 13, item 14). Each request is an ApplyDeltas batch of
about 10 MB that the sidecar must refuse (more ops than max_ops_per_batch, and
over max_request_bytes). Prints one JSON object.

Usage: .venv/bin/python scripts/bench_oversized.py [--requests 20] [--mb 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json

import grpc

from sidecar.client import SidecarProcess, error_reason
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def oversized(mb: float) -> bytes:
    """An ApplyDeltas body of about `mb` MB: 12,000 ops (over the 10,000 default)."""
    n = 12_000
    per_op = max(16, int(mb * 1_000_000 / n) - 40)
    ops = [pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=pb.Entity(id=f"e{i}", description="x" * per_op)))
           for i in range(n)]
    return spb.ApplyDeltasRequest(session_id="g", base_revision=0, delta_id="", ops=ops).SerializeToString()


async def main(requests: int, mb: float) -> dict[str, object]:
    body = oversized(mb)
    async with await SidecarProcess.launch(timeout=60) as sidecar:
        client = sidecar.client
        await client.open_session("g")
        await client.get_info()
        before = rss_mb(sidecar.pid)
        raw = client.channel.unary_unary("/sidecar.v1.SessionService/ApplyDeltas",
                                         request_serializer=lambda b: b, response_deserializer=lambda b: b)
        answers: dict[str, int] = {}
        for _ in range(requests):
            try:
                await raw(body)
                key = "OK"
            except grpc.aio.AioRpcError as err:
                key = f"{err.code().name}/{error_reason(err) or '-'}"
            answers[key] = answers.get(key, 0) + 1
        after = rss_mb(sidecar.pid)
        state = await client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    return {
        "requests": requests,
        "request_mb": round(len(body) / 1e6, 2),
        "answers": answers,
        "rss_before_mb": round(before, 1),
        "rss_after_mb": round(after, 1),
        "rss_growth_mb": round(after - before, 1),
        "revision_after": state.revision,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.requests, args.mb))))
