#!/usr/bin/env python
"""The floor under the sidecar's added time to the first token: one gRPC round trip.

A run through the sidecar costs, over a direct call to the provider, at least one
server-streaming gRPC call: the request in, the first message out. This measures
that alone, with nothing of ours in it: a server process whose one method answers
a request with one message at once (no protobuf, no interceptor, no work), on a
Unix socket like the sidecar's, and a client timing send -> first message,
interleaved over client kinds so both see the same load:

- `aio`: grpc.aio on both sides (the sidecar's server, the Python client's stack);
- `sync`: grpc.aio server, the blocking Python client (no event loop on the client);
- `sync_server`: the threaded (non-aio) grpc server, blocking client.

Prints one JSON object (p50/p99 ms per kind). Usage:
    .venv/bin/python scripts/bench/bench_grpc_floor.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent import futures
from pathlib import Path

import grpc

METHOD = "/floor.Floor/First"


def _first(request: bytes, context: object) -> object:
    yield b"x"


async def _first_aio(request: bytes, context: object) -> object:
    yield b"x"


def _handlers(aio: bool) -> grpc.GenericRpcHandler:
    handler = grpc.unary_stream_rpc_method_handler(_first_aio if aio else _first)
    return grpc.method_handlers_generic_handler("floor.Floor", {"First": handler})


def serve(path: str, aio: bool) -> None:
    if aio:

        async def main() -> None:
            server = grpc.aio.server()
            server.add_generic_rpc_handlers((_handlers(True),))
            server.add_insecure_port(f"unix:{path}")
            await server.start()
            print("ready", flush=True)
            await server.wait_for_termination()

        asyncio.run(main())
    else:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        server.add_generic_rpc_handlers((_handlers(False),))
        server.add_insecure_port(f"unix:{path}")
        server.start()
        print("ready", flush=True)
        server.wait_for_termination()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def start_servers() -> dict[str, tuple[subprocess.Popen[str], str]]:
    tmp = Path(tempfile.mkdtemp(prefix="floor-"))
    procs = {}
    for kind in ("aio", "sync"):
        path = str(tmp / f"{kind}.sock")
        cmd = [sys.executable, __file__, "--serve", kind, "--path", path]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        procs[kind] = (p, path)
    return procs


async def measure(args: argparse.Namespace, procs: dict[str, tuple[subprocess.Popen[str], str]]) -> None:
    aio_channel = grpc.aio.insecure_channel(f"unix:{procs['aio'][1]}")
    try:
        aio_call = aio_channel.unary_stream(METHOD)
        sync_aio = grpc.insecure_channel(f"unix:{procs['aio'][1]}").unary_stream(METHOD)
        sync_sync = grpc.insecure_channel(f"unix:{procs['sync'][1]}").unary_stream(METHOD)

        async def t_aio() -> float:
            t0 = time.perf_counter()
            async for _ in aio_call(b"q"):
                return (time.perf_counter() - t0) * 1000
            raise AssertionError("no message")

        def t_sync(stub: object) -> float:
            t0 = time.perf_counter()
            for _ in stub(b"q"):  # type: ignore[operator]
                return (time.perf_counter() - t0) * 1000
            raise AssertionError("no message")

        out: dict[str, list[float]] = {"aio": [], "sync": [], "sync_server": []}
        for i in range(args.calls + 200):  # the first 200 of each warm up
            a = await t_aio()
            b = t_sync(sync_aio)
            c = t_sync(sync_sync)
            if i >= 200:
                out["aio"].append(a)
                out["sync"].append(b)
                out["sync_server"].append(c)
        result = {
            "calls": args.calls,
            "load_average": os.getloadavg()[0],
            **{f"{k}_first_message_ms_p50": round(statistics.median(v), 3) for k, v in out.items()},
            **{f"{k}_first_message_ms_p99": round(pct(v, 0.99), 3) for k, v in out.items()},
        }
        print(json.dumps(result, indent=1))
    finally:
        await aio_channel.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--serve", choices=["aio", "sync"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.path, args.serve == "aio")
        return
    procs = start_servers()
    try:
        asyncio.run(measure(args, procs))
    finally:
        for p, _ in procs.values():
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
