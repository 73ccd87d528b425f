#!/usr/bin/env python3
"""Spawn-to-handshake time of the real sidecar, launched through the Python
client N times, and how fast it exits after stdin EOF. Prints one JSON object.

With --frozen, the same figures for the frozen build (scripts/package) in the same
run, interleaved with the venv's so both see the same machine load, plus per form:
the sidecar's own CPU time up to the handshake (user + system: what a loaded shared
machine distorts least), the first scripted run after launch (handshake to `finished`),
RSS at idle (after that run) and, for the frozen build, the folder's size in MiB and in
decimal MB (and the providers-only folder's, when dist/providers-only/ was built with
--without-local-model), and the load average.

Usage: .venv/bin/python scripts/bench/bench_startup.py [--runs 20] [--frozen dist/game-sidecar/game-sidecar]
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
import tempfile
import time
from pathlib import Path

from sidecar.client import SidecarProcess
from sidecar.host_watch import process_alive
from sidecar.v1 import agent_service_pb2 as agent

VENV_SERVE = [sys.executable, "-m", "sidecar", "serve"]
SCRIPTED_CONFIG = 'default_profile = "fake"\n[profiles.fake]\nmodel = "scripted/test"\n'

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


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return round(kb / 1024, 1)


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _cpu_ms(pid: int) -> float:
    """User + system CPU the process has used so far (/proc/<pid>/stat utime + stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def spawn_once(serve: list[str]) -> tuple[float, float]:
    """Spawn to handshake, ms of wall time and of the sidecar's CPU time (which the load of a shared
    machine inflates far less); then GetInfo and an orderly exit."""
    t0 = time.perf_counter()
    sidecar = await SidecarProcess.launch(command=serve, timeout=60)
    ms = (time.perf_counter() - t0) * 1000
    cpu = _cpu_ms(sidecar.pid)
    await sidecar.client.get_info()
    await sidecar.close()
    return ms, cpu


async def first_scripted_run(serve: list[str], config: str) -> dict[str, float]:
    """Handshake to the first scripted run's `finished`, and RSS once idle after it."""
    sidecar = await SidecarProcess.launch(["--config", config], command=serve, timeout=60)
    try:
        t0 = time.perf_counter()
        await sidecar.client.open_session("bench")
        request = agent.RunRequest(session_id="bench", narrate=agent.NarrateInput(text="The goblin attacks!"))
        async for _ in sidecar.client.run(request, timeout=120):
            pass
        run_ms = (time.perf_counter() - t0) * 1000
        await asyncio.sleep(1.0)  # let the run's buffers go before sampling idle memory
        return {"first_scripted_run_ms": round(run_ms, 1), "rss_idle_mb": _rss_mb(sidecar.pid)}
    finally:
        await sidecar.close()


async def frozen_vs_venv(runs: int, frozen: Path) -> dict[str, object]:
    forms = {"venv": VENV_SERVE, "frozen": [str(frozen), "serve"]}
    spawn: dict[str, list[float]] = {name: [] for name in forms}
    cpu: dict[str, list[float]] = {name: [] for name in forms}
    for _ in range(runs):
        for name, serve in forms.items():  # interleaved: both forms see the same load
            wall_ms, cpu_ms = await spawn_once(serve)
            spawn[name].append(wall_ms)
            cpu[name].append(cpu_ms)
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "sidecar.toml"
        config.write_text(SCRIPTED_CONFIG)
        for name, serve in forms.items():
            figures: dict[str, object] = {
                "spawn_to_handshake_ms_p50": round(statistics.median(spawn[name]), 1),
                "spawn_to_handshake_ms_max": round(max(spawn[name]), 1),
                "cpu_to_handshake_ms_p50": round(statistics.median(cpu[name]), 1),
            }
            figures.update(await first_scripted_run(serve, str(config)))
            out[name] = figures
    folder = frozen.parent
    # The target is in decimal MB (10^6 bytes); MiB (2^20) are what du -h shows.
    sizes = {"folder_mib": round(_folder_bytes(folder) / 2**20, 1), "folder_mb": round(_folder_bytes(folder) / 1e6, 1)}
    providers_only = folder.parent / "providers-only" / folder.name
    if providers_only.is_dir():
        size = _folder_bytes(providers_only)
        sizes["folder_mib_without_local_model"] = round(size / 2**20, 1)
        sizes["folder_mb_without_local_model"] = round(size / 1e6, 1)
    out["frozen"].update(sizes)  # type: ignore[union-attr]
    out["targets"] = {"frozen_spawn_to_handshake_ms_p50": 300, "first_scripted_run_ms": 1000,
                      "folder_mb_without_weights": 150}
    out["load_average_1min"] = round(os.getloadavg()[0], 2)
    return out


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
            "spawn_to_handshake_ms_p50": 300,
            "exit_after_stdin_eof_ms_max": 1000,
            "exit_after_parent_sigkill_ms_max": 1000,
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--frozen", type=Path, default=None,
                        help="the frozen build's executable: compare it with the venv's sidecar")
    args = parser.parse_args()
    if args.frozen is not None:
        print(json.dumps(asyncio.run(frozen_vs_venv(args.runs, args.frozen.resolve()))))
    else:
        print(json.dumps(asyncio.run(main(args.runs))))
