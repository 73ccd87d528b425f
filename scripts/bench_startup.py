#!/usr/bin/env python3
"""Spawn-to-handshake time of the real sidecar, launched through the Python
client N times, and how fast it exits after stdin EOF. Prints one JSON object.

Usage: .venv/bin/python scripts/bench_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from sidecar.client import SidecarProcess


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def main(runs: int) -> dict[str, object]:
    spawn: list[float] = []
    exit_eof: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sidecar = await SidecarProcess.launch()
        spawn.append((time.perf_counter() - t0) * 1000)
        await sidecar.client.get_info()
        await sidecar.client.close()
        assert sidecar.proc.stdin is not None
        t1 = time.perf_counter()
        sidecar.proc.stdin.close()
        await sidecar.proc.wait()
        exit_eof.append((time.perf_counter() - t1) * 1000)
        await sidecar.close()
    return {
        "runs": runs,
        "spawn_to_handshake_ms": {
            "p50": round(statistics.median(spawn), 1),
            "max": round(max(spawn), 1),
            "p90": round(_pct(spawn, 0.9), 1),
        },
        "exit_after_stdin_eof_ms": {"p50": round(statistics.median(exit_eof), 1), "max": round(max(exit_eof), 1)},
        "targets": {"spawn_to_handshake_ms_p50": 500, "exit_after_stdin_eof_ms_max": 1000},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    print(json.dumps(asyncio.run(main(parser.parse_args().runs))))
