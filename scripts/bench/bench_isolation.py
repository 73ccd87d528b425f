#!/usr/bin/env python3
"""One session's heavy work against everyone else's latency and the sidecar's memory
(issue 24, items 3 and 4). Launches the real sidecar (a game's way, TCP loopback) and
prints one JSON object:

- `heavy_prompt`: session "heavy" holds 1,000 characters with 16 KB descriptions full
  of engine IDs; one narration names all of them. While its prompt builds, session
  "other" sends one-op ApplyDeltas back to back: their latency (p50, p99, max), and
  the heavy run's prompt_build_ms and outcome.
- `runaway`: a fake OpenAI-compatible server (tests/fakes/openai_server.py, "runaway")
  that ignores max_tokens and streams `--runaway-mb` MB in 400,000-character chunks;
  a narration with max_output_tokens 256. The text and deltas that reach the game,
  the finish reason, what the provider got to send, RSS before / peak / after, and
  other calls' latency meanwhile.
- `slow_reader`: the same provider with a limit too high to matter (1,000,000 tokens),
  and a game that reads one event every `--read-interval-ms` for `--read-s` seconds,
  then cancels: RSS and what the provider got to send (backpressure).

`--tree DIR` runs the sidecar from another source tree (e.g. `git archive <commit> sidecar
| tar -x -C DIR`), for before/after figures with the same client; `--only` picks scenarios.

Usage: .venv/bin/python scripts/bench/bench_isolation.py [--runaway-mb 40] [--tree DIR]
       [--only heavy_prompt,runaway,slow_reader]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from bench_oversized import Peak, rss_mb  # noqa: E402 - the same RSS sampling as the oversized bench
from fakes.openai_server import FakeOpenAI  # noqa: E402

from sidecar.client import SidecarClient, SidecarProcess  # noqa: E402
from sidecar.v1 import agent_service_pb2 as apb  # noqa: E402
from sidecar.v1 import state_pb2 as spb  # noqa: E402
from sidecar.v1 import types_pb2 as tpb  # noqa: E402

ENTITIES = 1_000
#: `python -c` body that serves the sidecar from the tree in argv[1] (ahead of this
#: checkout's editable install, whose finder would otherwise win).
FROM_TREE = (
    "import runpy, sys; tree = sys.argv.pop(1); "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
    "sys.path.insert(0, tree); sys.argv[0] = 'sidecar'; runpy.run_module('sidecar', run_name='__main__')"
)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2) if ordered else float("nan")


def upsert(eid: str, name: str = "", description: str = "") -> spb.DeltaOp:
    entity = spb.Entity(id=eid, kind=tpb.ENTITY_KIND_CHARACTER, name=name or eid, description=description)
    return spb.DeltaOp(upsert_entity=spb.UpsertEntityOp(entity=entity))


def heavy_ops() -> list[spb.DeltaOp]:
    ids = [f"BP_Villager_C_{i:04d}" for i in range(ENTITIES)]
    ops = []
    for i, eid in enumerate(ids):
        words: list[str] = []
        size = 0
        j = i
        while size < 15_900:
            word = ids[(j * 7 + 3) % ENTITIES] if j % 2 else "knows"
            words.append(word)
            size += len(word) + 1
            j += 1
        ops.append(upsert(eid, f"Villager {i}", " ".join(words)[:16_000]))
    return ops


class Latency:
    """Back-to-back one-op ApplyDeltas on session "other" until stopped."""

    def __init__(self, client: SidecarClient) -> None:
        self.client = client
        self.ms: list[float] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        revision = (await self.client.open_session("other")).revision
        n = 0
        while not self.stop.is_set():
            t0 = time.perf_counter()
            revision = (await self.client.apply_deltas("other", revision, [upsert(f"o{n % 50}")])).revision
            self.ms.append((time.perf_counter() - t0) * 1000)
            n += 1
            await asyncio.sleep(0.005)

    def report(self) -> dict[str, Any]:
        return {"calls": len(self.ms), "p50_ms": pct(self.ms, 0.5), "p99_ms": pct(self.ms, 0.99),
                "max_ms": round(max(self.ms), 2) if self.ms else None}


async def heavy_prompt(sidecar: SidecarProcess) -> dict[str, Any]:
    client = sidecar.client
    await client.open_session("heavy")
    revision = 0
    ops = heavy_ops()
    for start in range(0, len(ops), 200):
        revision = (await client.apply_deltas("heavy", revision, ops[start : start + 200])).revision
    ids = [f"BP_Villager_C_{i:04d}" for i in range(ENTITIES)]
    request = apb.RunRequest(session_id="heavy", profile="fake",
                             narrate=apb.NarrateInput(text="Everyone in the village gathers.", entity_ids=ids))
    latency = Latency(client)
    probe = asyncio.create_task(latency.run())
    await asyncio.sleep(0.3)  # a few calls before, as a baseline
    before = len(latency.ms)
    t0 = time.perf_counter()
    events = [e async for e in client.run(request, timeout=300)]
    wall = (time.perf_counter() - t0) * 1000
    latency.stop.set()
    await probe
    during = latency.ms[before:]
    finished = events[-1].finished if events and events[-1].HasField("finished") else None
    return {
        "entities": ENTITIES,
        "heavy_run_ms": round(wall, 1),
        "prompt_build_ms": round(finished.timings.prompt_build_ms, 1) if finished else None,
        "heavy_finished": finished is not None,
        "other_calls_during": {"calls": len(during), "p50_ms": pct(during, 0.5), "p99_ms": pct(during, 0.99),
                               "max_ms": round(max(during), 2) if during else None},
    }


async def runaway(sidecar: SidecarProcess, fake: FakeOpenAI) -> dict[str, Any]:
    client = sidecar.client
    await client.open_session("r")
    latency = Latency(client)
    probe = asyncio.create_task(latency.run())
    await asyncio.sleep(0.3)
    before_calls = len(latency.ms)
    sent_before = fake.seen.bytes_sent
    idle = rss_mb(sidecar.pid)
    deltas: list[int] = []
    finish = ""
    with Peak(sidecar.pid) as peak:
        request = apb.RunRequest(session_id="r", profile="runaway", narrate=apb.NarrateInput(text="It rains."),
                                 limits=apb.GenerationLimits(max_output_tokens=256))
        async for event in client.run(request, timeout=120):
            if event.HasField("text"):
                deltas.append(len(event.text.text))
            elif event.HasField("finished"):
                finish = apb.FinishReason.Name(event.finished.finish_reason)
        await asyncio.sleep(1.0)
    latency.stop.set()
    await probe
    during = latency.ms[before_calls:]
    return {
        "provider_mb_offered": fake.runaway_bytes / 1e6,
        "provider_mb_sent": round((fake.seen.bytes_sent - sent_before) / 1e6, 2),
        "finish_reason": finish,
        "text_chars": sum(deltas),
        "deltas": len(deltas),
        "largest_delta_chars": max(deltas) if deltas else 0,
        "rss_idle_mb": round(idle, 1),
        "rss_peak_mb": round(peak.value, 1),
        "rss_after_mb": round(rss_mb(sidecar.pid), 1),
        "other_calls_during": {"calls": len(during), "p99_ms": pct(during, 0.99),
                               "max_ms": round(max(during), 2) if during else None},
    }


async def slow_reader(sidecar: SidecarProcess, fake: FakeOpenAI, interval_ms: float, seconds: float) -> dict[str, Any]:
    client = sidecar.client
    await client.open_session("s")
    idle = rss_mb(sidecar.pid)
    sent_before = fake.seen.bytes_sent
    chars = 0
    request = apb.RunRequest(session_id="s", profile="runaway", narrate=apb.NarrateInput(text="It pours."),
                             limits=apb.GenerationLimits(max_output_tokens=1_000_000))
    call = client.agent.Run(request, timeout=120)
    deadline = time.monotonic() + seconds
    with Peak(sidecar.pid) as peak:
        async for response in call:
            if response.event.HasField("text"):
                chars += len(response.event.text.text)
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(interval_ms / 1000)
        sent_while_reading = fake.seen.bytes_sent - sent_before
        call.cancel()
        await asyncio.sleep(1.0)
    return {
        "read_interval_ms": interval_ms,
        "read_s": seconds,
        "text_chars_read": chars,
        "provider_mb_sent_while_reading": round(sent_while_reading / 1e6, 2),
        "rss_idle_mb": round(idle, 1),
        "rss_peak_mb": round(peak.value, 1),
        "rss_after_mb": round(rss_mb(sidecar.pid), 1),
    }


async def warm(sidecar: SidecarProcess) -> None:
    """Background loading over and one run served: start-up work is not measured."""
    client = sidecar.client
    for _ in range(600):
        if (await client.get_info()).llm_ready:
            break
        await asyncio.sleep(0.05)
    await client.open_session("warm")
    async for _ in client.narrate("warm", "The day begins.", profile="fake"):
        pass
    await asyncio.sleep(1.0)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    async with FakeOpenAI(runaway_bytes=int(args.runaway_mb * 1e6)) as fake:
        config = f"""
default_profile = "fake"
[profiles.fake]
model = "scripted/bench"
max_retries = 0
[profiles.runaway]
model = "openai/runaway"
api_base = "{fake.base_url}"
max_retries = 0
"""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "sidecar.toml"
            path.write_text(config)
            args_ = ["--listen", "tcp://127.0.0.1:0", "--config", str(path)]
            command = (sys.executable, "-c", FROM_TREE, args.tree, "serve") if args.tree else None
            only = set(args.only.split(","))
            out: dict[str, Any] = {}
            if "heavy_prompt" in only:
                async with await SidecarProcess.launch(args=args_, command=command, timeout=60) as sidecar:
                    await warm(sidecar)
                    out["heavy_prompt"] = await heavy_prompt(sidecar)
            if "runaway" in only:
                async with await SidecarProcess.launch(args=args_, command=command, timeout=60) as sidecar:
                    await warm(sidecar)
                    out["runaway"] = await runaway(sidecar, fake)
            if "slow_reader" in only:
                async with await SidecarProcess.launch(args=args_, command=command, timeout=60) as sidecar:
                    await warm(sidecar)
                    out["slow_reader"] = await slow_reader(sidecar, fake, args.read_interval_ms, args.read_s)
            return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runaway-mb", type=float, default=40.0)
    parser.add_argument("--read-interval-ms", type=float, default=5.0)
    parser.add_argument("--read-s", type=float, default=3.0)
    parser.add_argument("--tree", default="", help="serve the sidecar from this source tree")
    parser.add_argument("--only", default="heavy_prompt,runaway,slow_reader")
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
