#!/usr/bin/env python3
"""Spawn-to-handshake time of the real sidecar, launched through the Python
client N times, and how fast it exits after stdin EOF. Prints one JSON object.

Usage: .venv/bin/python scripts/bench_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from sidecar.client import SidecarProcess
from sidecar.lifecycle import process_alive

# A stand-in game: spawns the sidecar with --no-stdin-watch so only the parent
# watchdog can notice its death, prints the handshake, then waits to be killed.
PARENT = (
    "import os, subprocess, sys, time\n"
    "env = dict(os.environ, GAME_SIDECAR_MAGIC='game-sidecar-v1')\n"
    "c = subprocess.Popen([sys.executable, '-m', 'sidecar', 'serve', '--no-stdin-watch'], env=env,"
    " stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "sys.stdout.write(c.stdout.readline().decode()); sys.stdout.flush(); time.sleep(600)\n"
)




def exit_after_parent_kill_ms() -> float:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert parent.stdout is not None
    pid = json.loads(parent.stdout.readline())["pid"]
    t0 = time.perf_counter()
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    while process_alive(pid):
        time.sleep(0.002)
    return (time.perf_counter() - t0) * 1000


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
    parent_kill = [exit_after_parent_kill_ms() for _ in range(max(3, runs // 4))]
    return {
        "runs": runs,
        "spawn_to_handshake_ms": {
            "p50": round(statistics.median(spawn), 1),
            "max": round(max(spawn), 1),
            "p90": round(_pct(spawn, 0.9), 1),
        },
        "exit_after_stdin_eof_ms": {"p50": round(statistics.median(exit_eof), 1), "max": round(max(exit_eof), 1)},
        "exit_after_parent_sigkill_ms": {
            "p50": round(statistics.median(parent_kill), 1),
            "max": round(max(parent_kill), 1),
        },
        "targets": {
            "spawn_to_handshake_ms_p50": 500,
            "exit_after_stdin_eof_ms_max": 1000,
            "exit_after_parent_sigkill_ms_max": 1000,
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    print(json.dumps(asyncio.run(main(parser.parse_args().runs))))
