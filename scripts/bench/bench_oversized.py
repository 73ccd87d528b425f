#!/usr/bin/env python3
"""The real sidecar's resident memory under requests it must refuse (issue 13, item 14;
issue 24, item 2), over TCP loopback (`--listen tcp://127.0.0.1:0`). Prints one JSON object.

Scenarios, each against a freshly launched sidecar:

- `sequential`: `--requests` ApplyDeltas bodies of about `--mb` MB one after another, with
  the token (12,000 ops: over max_ops_per_batch, and over max_request_bytes);
- `unauthenticated`: `--concurrent` such bodies at once, each on its own connection,
  without the token (refused UNAUTHENTICATED);
- `authenticated`: the same with the token (refused by the receive limit).

For each: VmRSS when idle, the peak while the requests are in flight (sampled every
20 ms), and one second after the last answer. `world` times a `--world-mb` MB
ReplaceState sent in pieces (ReplaceStateChunked) and the RSS it leaves.

`--tree DIR` serves the sidecar from another source tree (as scripts/bench/bench_isolation.py
does), for before/after figures; `--only` picks scenarios.

Usage: .venv/bin/python scripts/bench/bench_oversized.py [--requests 20] [--mb 10]
       [--concurrent 32] [--big-mb 58] [--world-mb 40] [--tree DIR]
       [--only sequential,unauthenticated,authenticated,world]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

import grpc

from sidecar.client import SidecarProcess, error_reason
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb

APPLY = "/sidecar.v1.SessionService/ApplyDeltas"
#: Set from --tree: the command that serves the sidecar (None: this checkout).
COMMAND: tuple[str, ...] | None = None
#: `python -c` body serving the sidecar from the tree in argv[1], ahead of this checkout's
#: editable install (the same as scripts/bench/bench_isolation.py's).
FROM_TREE = (
    "import runpy, sys; tree = sys.argv.pop(1); "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
    "sys.path.insert(0, tree); sys.argv[0] = 'sidecar'; runpy.run_module('sidecar', run_name='__main__')"
)


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


class Peak:
    """The highest VmRSS seen while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.value = rss_mb(pid)
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        while True:
            self.value = max(self.value, rss_mb(self.pid))
            await asyncio.sleep(0.02)

    def __enter__(self) -> Peak:
        self._task = asyncio.create_task(self._sample())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        self.value = max(self.value, rss_mb(self.pid))


def tally(answers: list[str]) -> dict[str, int]:
    return {key: answers.count(key) for key in sorted(set(answers))}


async def _send(target: str, body: bytes, token: str | None) -> str:
    """One call on its own connection (separate HTTP/2 windows, as separate clients have)."""
    async with grpc.aio.insecure_channel(target) as channel:
        raw = channel.unary_unary(APPLY, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        try:
            await raw(body, metadata=metadata, timeout=120)
            return "OK"
        except grpc.aio.AioRpcError as err:
            return f"{err.code().name}/{error_reason(err) or '-'}"


async def launch() -> SidecarProcess:
    sidecar = await SidecarProcess.launch(args=["--listen", "tcp://127.0.0.1:0"], command=COMMAND, timeout=60)
    await sidecar.client.open_session("g")
    await sidecar.client.get_info()
    return sidecar


async def sequential(requests: int, body: bytes) -> dict[str, Any]:
    async with await launch() as sidecar:
        before = rss_mb(sidecar.pid)
        with Peak(sidecar.pid) as peak:
            answers = [await _send(sidecar.handshake.target, body, sidecar.token) for _ in range(requests)]
        await asyncio.sleep(1.0)
        after = rss_mb(sidecar.pid)
        state = await sidecar.client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    return {"requests": requests, "answers": tally(answers), "rss_idle_mb": round(before, 1),
            "rss_peak_mb": round(peak.value, 1), "rss_after_mb": round(after, 1),
            "growth_after_mb": round(after - before, 1), "revision_after": state.revision}


async def concurrent(n: int, body: bytes, with_token: bool) -> dict[str, Any]:
    async with await launch() as sidecar:
        idle = rss_mb(sidecar.pid)
        token = sidecar.token if with_token else None
        t0 = time.monotonic()
        with Peak(sidecar.pid) as peak:
            answers = await asyncio.gather(*(_send(sidecar.handshake.target, body, token) for _ in range(n)))
        seconds = time.monotonic() - t0
        await asyncio.sleep(1.0)
        after = rss_mb(sidecar.pid)
        state = await sidecar.client.sessions.GetState(spb.GetStateRequest(session_id="g"))
    return {"concurrent": n, "answers": tally(list(answers)), "seconds": round(seconds, 2),
            "rss_idle_mb": round(idle, 1), "rss_peak_mb": round(peak.value, 1), "rss_after_mb": round(after, 1),
            "peak_over_idle_mb": round(peak.value - idle, 1), "after_over_idle_mb": round(after - idle, 1),
            "revision_after": state.revision}


async def world(mb: float) -> dict[str, Any]:
    n = max(1, int(mb * 1_000_000 / 16_050))
    snapshot = pb.Snapshot(entities=[pb.Entity(id=f"e{i}", kind=1, description="w" * 16_000) for i in range(n)])
    request = spb.ReplaceStateRequest(session_id="g", snapshot=snapshot)
    async with await launch() as sidecar:
        idle = rss_mb(sidecar.pid)
        t0 = time.monotonic()
        with Peak(sidecar.pid) as peak:
            reply = await sidecar.client.replace_state(request)
        seconds = time.monotonic() - t0
        await asyncio.sleep(1.0)
        after = rss_mb(sidecar.pid)
    return {"request_mb": round(request.ByteSize() / 1e6, 1), "revision": reply.revision,
            "seconds": round(seconds, 2), "rss_idle_mb": round(idle, 1), "rss_peak_mb": round(peak.value, 1),
            "rss_after_mb": round(after, 1)}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    small, big = oversized(args.mb), oversized(args.big_mb)
    only = set(args.only.split(","))
    out: dict[str, Any] = {"request_mb": round(len(small) / 1e6, 2), "big_request_mb": round(len(big) / 1e6, 2)}
    if "sequential" in only:
        out["sequential"] = await sequential(args.requests, small)
    if "unauthenticated" in only:
        out["unauthenticated"] = await concurrent(args.concurrent, big, with_token=False)
    if "authenticated" in only:
        out["authenticated"] = await concurrent(args.concurrent, big, with_token=True)
    if "world" in only:
        out["world"] = await world(args.world_mb)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--concurrent", type=int, default=32)
    parser.add_argument("--big-mb", type=float, default=58.0)
    parser.add_argument("--world-mb", type=float, default=40.0)
    parser.add_argument("--tree", default="", help="serve the sidecar from this source tree")
    parser.add_argument("--only", default="sequential,unauthenticated,authenticated,world")
    parsed = parser.parse_args()
    if parsed.tree:
        COMMAND = (sys.executable, "-c", FROM_TREE, parsed.tree, "serve")
    print(json.dumps(asyncio.run(main(parsed))))
