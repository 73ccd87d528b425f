#!/usr/bin/env python3
"""Footprint and cold start of the real sidecar process, launched like a game
launches it, per configuration. Prints one JSON object.

For each configuration: RSS right after the handshake; the first run, sent at
once after the handshake (time from handshake to its first text); RSS once
GetInfo.llm_ready says the background loading is over; RSS after 100 runs;
CPU used while idle over `--idle-s` seconds; peak RSS (VmHWM).

Configurations:
  default           no config file: the embedded model is the default profile.
                    Its runs use it when its weights are installed, else a
                    scripted profile added next to it (the weights are optional).
  scripted          one scripted-model profile.
  provider_sse      one OpenAI-compatible profile at the fake server
                    (tests/fakes/openai_server.py), transport "auto" (= sse).
  provider_litellm  the same profile with transport "litellm" (imports litellm).

Usage: .venv/bin/python scripts/bench/bench_footprint.py [--runs 100] [--idle-s 30] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sidecar.client import SidecarProcess
from sidecar.v1 import agent_service_pb2 as apb

ROOT = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no {field} for {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def configs(upstream: str) -> dict[str, str]:
    provider = f'model = "openai/ok"\napi_base = "{upstream}"\napi_key_env = "BENCH_KEY"\nmax_retries = 0\n'
    scripted = 'model = "scripted/bench"\nmax_retries = 0\n[profiles.{name}.script]\nchunk_chars = 8\n'
    return {
        "default": 'log_level = "warning"\ndefault_profile = "local"\n[profiles.fake]\n'
        + scripted.format(name="fake"),
        "scripted": 'log_level = "warning"\n[profiles.fake]\n' + scripted.format(name="fake"),
        "provider_sse": f'log_level = "warning"\n[profiles.cloud]\n{provider}',
        "provider_litellm": f'log_level = "warning"\n[profiles.cloud]\n{provider}transport = "litellm"\n',
    }


async def one_run(client, profile: str, text: str = "The door opens.") -> tuple[float | None, str]:
    """(monotonic time of the first text or None, finish kind) of one narration."""
    first = None
    request = apb.RunRequest(session_id="bench", narrate=apb.NarrateInput(text=text), profile=profile)
    last = ""
    async for event in client.run(request, timeout=120):
        last = event.WhichOneof("kind")
        if last == "text" and first is None:
            first = time.monotonic()
    return first, last


async def measure(name: str, toml: str, runs: int, idle_s: float, tmp: Path) -> dict[str, object]:
    path = tmp / f"{name}.toml"
    path.write_text(toml)
    env = {**os.environ, "BENCH_KEY": "sk-bench"}
    launched = time.monotonic()
    sidecar = await SidecarProcess.launch(["--config", str(path)], env=env, timeout=60)
    handshake = time.monotonic()
    pid = sidecar.proc.pid
    out: dict[str, object] = {"spawn_to_handshake_ms": round((handshake - launched) * 1000, 1)}
    out["rss_mb_after_handshake"] = rss_mb(pid)
    try:
        client = sidecar.client
        info = await client.get_info()
        default = next(p for p in info.profiles if p.is_default)
        profile = default.name if default.ready else "fake"
        out["runs_on"] = profile
        await client.open_session("bench")
        first, kind = await one_run(client, profile)
        out["first_run_first_text_ms_after_handshake"] = round((first - handshake) * 1000, 1) if first else None
        out["first_run_end"] = kind
        for _ in range(6000):  # poll as a game would (up to 5 minutes on a busy machine)
            if (await client.get_info()).llm_ready:
                break
            await asyncio.sleep(0.05)
        out["llm_ready_ms_after_handshake"] = round((time.monotonic() - handshake) * 1000, 1)
        out["rss_mb_ready"] = rss_mb(pid)
        ends = [(await one_run(client, profile, f"Event {i}: the door opens."))[1] for i in range(runs)]
        out["runs_finished"] = ends.count("finished")
        out["rss_mb_after_runs"] = rss_mb(pid)
        await asyncio.sleep(1.0)  # let the last run's clean-up settle
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(idle_s)
        out["idle_cpu_percent"] = round((cpu_seconds(pid) - cpu0) / (time.monotonic() - t0) * 100, 3)
        out["rss_mb_peak"] = rss_mb(pid, "VmHWM")
    finally:
        await sidecar.close()
    return out


def start_fake() -> tuple[subprocess.Popen[str], str]:
    """The fake OpenAI-compatible server in its own process; returns it and its base URL."""
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fakes" / "openai_server.py"), "--chunks", "10", "--interval-ms", "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert fake.stdout is not None
    return fake, fake.stdout.readline().strip()


async def main(args: argparse.Namespace, upstream: str) -> dict[str, object]:
    result: dict[str, object] = {"runs": args.runs, "idle_s": args.idle_s}
    with tempfile.TemporaryDirectory() as tmp:
        for name, toml in configs(upstream).items():
            if args.only and name not in args.only.split(","):
                continue
            result[name] = await measure(name, toml, args.runs, args.idle_s, Path(tmp))
    result["targets"] = {
        "rss_mb_idle_scripted_or_openai_compatible": 120,
        "rss_mb_idle_default": 450,
        "idle_cpu_percent": 0.5,
        "first_run_first_text_ms_after_handshake (embedded or scripted)": 1000,
    }
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--only", default="", help="comma-separated configuration names")
    fake, upstream = start_fake()
    try:
        print(json.dumps(asyncio.run(main(parser.parse_args(), upstream)), indent=1))
    finally:
        assert fake.stdin is not None
        fake.stdin.close()
        fake.wait(5)
