#!/usr/bin/env python3
"""httpx against aiohttp for what the sse transport does: one streamed chat
completion from the fake OpenAI-compatible server (its own process), read line
by line on a pooled connection. CPU milliseconds of this process per request
and time to the first SSE line, sequential requests. Prints one JSON object.

Usage: .venv/bin/python scripts/bench/bench_http_clients.py [--requests 200] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parents[2]
BODY = {"model": "ok", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "Narrate."}]}


async def measure(one: Callable[[], Awaitable[float]], n: int) -> dict[str, float]:
    for _ in range(20):  # warm-up: connection, lazy imports
        await one()
    cpu = time.process_time()
    ttft = sorted([await one() for _ in range(n)])
    return {"cpu_ms_per_request": round((time.process_time() - cpu) / n * 1000, 3),
            "first_line_ms_p50": round(ttft[n // 2] * 1000, 3)}


async def via_httpx(url: str, n: int) -> dict[str, float]:
    limits = httpx.Limits(max_connections=1024, max_keepalive_connections=256)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(None, connect=10)) as client:
        async def one() -> float:
            start, first = time.perf_counter(), 0.0
            response = await client.send(client.build_request("POST", url, json=BODY), stream=True)
            async for line in response.aiter_lines():
                if not first and line.startswith("data:"):
                    first = time.perf_counter() - start
            await response.aclose()
            return first

        return await measure(one, n)


async def via_aiohttp(url: str, n: int) -> dict[str, float]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1024)) as session:
        async def one() -> float:
            start, first = time.perf_counter(), 0.0
            async with session.post(url, json=BODY) as response:
                async for line in response.content:
                    if not first and line.startswith(b"data:"):
                        first = time.perf_counter() - start
            return first

        return await measure(one, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fakes" / "openai_server.py"), "--chunks", "10", "--interval-ms", "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert fake.stdin is not None and fake.stdout is not None
    url = fake.stdout.readline().strip() + "/chat/completions"
    result: dict[str, list[dict[str, float]]] = {"httpx": [], "aiohttp": []}
    try:
        for _ in range(args.repeat):  # interleaved, so load changes hit both alike
            result["httpx"].append(asyncio.run(via_httpx(url, args.requests)))
            result["aiohttp"].append(asyncio.run(via_aiohttp(url, args.requests)))
    finally:
        fake.stdin.close()
        fake.wait(5)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
