#!/usr/bin/env python
"""The embedded model through the sidecar vs llama-cpp-python called directly,
on the same prompts, in the same run; and the sidecar's memory over a play
session (issue 30, items 1 and 3).

The real sidecar is launched like a game does (default config: the embedded
Gemma 3 270M), recording its model calls (GAME_SIDECAR_RECORD_RUNS). Each
narration runs through `Run` (greedy: temperature 0) and is timed at this
client, over gRPC. Its recorded messages then become the same prompt tokens
here (`sidecar.llm.local_prompt.prompt_of`, the code the sidecar uses), run on this
process's own `llama_cpp.Llama` with the same settings, greedily and with the
same stops. `decode_ratio` = the sidecar's decode tokens/s over the direct ones
(medians; target >= 0.95). Before each timed run, on either side, the bench waits until
the sidecar has used no CPU for 0.3 s: its warm-ups (docs/runs.md) would otherwise
share the cores with the direct side.

Memory: the sidecar's RSS (VmRSS, /proc) sampled every 2 ms by a thread: idle
with the model loaded and warm (`rss_mb_idle`), the highest seen during any run
(`rss_mb_peak`), and after `--soak` mixed runs (narrate, dialogue, continue,
decide over a session that keeps changing: `rss_mb_growth_300` is that less the
idle figure). Targets: growth <= 20 MB, peak within 150 MB of idle.
`rss_mb_growth_by_kind`: every 25 soak runs, the growth split into anonymous
memory (heaps, the KV buffer), file-backed (the mmapped weights, libraries) and
shared memory.
`prefill_tokens_per_run`: the prompt tokens a run processed (prompt less cached,
from the run's usage), median; `new_tokens_per_run`: how many of its prompt tokens
were new since the same actor's earlier runs (the prompt, tokenized here from the
recorded messages, less its longest common prefix with any of them), median: what
a run would prefill if every prefix it shares with the actor's past were kept.

Usage: .venv/bin/python scripts/bench/bench_local_model.py [--runs 8] [--max-tokens 64] [--soak 300]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
# Nothing here imports litellm any more; kept so an older checkout never fetches prices.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import grpc  # noqa: E402

from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.llm.chat_template import template_of  # noqa: E402
from sidecar.llm.cpu_level import load_backends  # noqa: E402
from sidecar.llm.kv_prefixes import common_prefix  # noqa: E402
from sidecar.llm.llama_settings import llama_settings  # noqa: E402
from sidecar.llm.local_prompt import prompt_of  # noqa: E402
from sidecar.llm.types import ReplyShape  # noqa: E402
from sidecar.llm.weights import find_local_model, resolve_weights  # noqa: E402
from sidecar.runs.replay_log import ENV as RECORD_ENV  # noqa: E402
from sidecar.v1 import agent_service_pb2 as apb  # noqa: E402
from sidecar.v1 import state_pb2 as spb  # noqa: E402
from sidecar.v1 import types_pb2 as tpb  # noqa: E402

EVENTS = [
    "Aria swings her sword at the goblin Snag and hits him.",
    "Snag drops his dagger and flees deeper into the cave.",
    "Aria picks up the dagger and studies its strange runes.",
    "A cold wind blows out half of the torches.",
    "Somewhere below, a drum starts to beat.",
    "Aria follows the sound down a narrow stair.",
    "The stair ends at a door of black iron.",
    "Aria pushes the door and it swings open without a sound.",
]
LINES = ["Where does this stair lead?", "Give me the key, goblin.", "Why do you fear the drum?",
         "Who else lives down here?"]
OPTIONS = [("flee", "Run back up the stair"), ("fight", "Draw the dagger and fight"),
           ("talk", "Ask Aria for mercy")]


def entity(eid: str, kind: int, name: str, description: str, location: str = "") -> spb.DeltaOp:
    ent = spb.Entity(id=eid, kind=kind, name=name, description=description, location_id=location)
    return spb.DeltaOp(upsert_entity=spb.UpsertEntityOp(entity=ent))


def scene() -> list[spb.DeltaOp]:
    """The bench's world: a cave, Aria (the player) and Snag (a goblin)."""
    return [
        entity("cave", tpb.ENTITY_KIND_LOCATION, "Damp Cave", "A damp cave lit by torches."),
        entity("aria", tpb.ENTITY_KIND_PLAYER, "Aria", "A young swordswoman.", "cave"),
        entity("snag", tpb.ENTITY_KIND_CHARACTER, "Snag", "A sneaky goblin.", "cave"),
    ]


def event(text: str) -> spb.DeltaOp:
    return spb.DeltaOp(record_event=spb.RecordEventOp(event=spb.GameEvent(text=text, entity_ids=["aria", "snag"])))


class RssSampler:
    """The sidecar's VmRSS every 2 ms on a thread; `peak` since the last reset."""

    def __init__(self, pid: int) -> None:
        self._path = f"/proc/{pid}/status"
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self) -> float:
        with open(self._path) as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024

    def parts(self) -> dict[str, float]:
        """RSS by kind (MB): anonymous (heaps, KV buffer), file-backed (the mmapped weights,
        libraries), shared memory; where growth sits says who holds it."""
        with open(self._path) as status:
            return {line.split(":")[0]: round(int(line.split()[1]) / 1024, 1) for line in status
                    if line.startswith(("RssAnon:", "RssFile:", "RssShmem:"))}

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            try:
                self.peak = max(self.peak, self.now())
            except (OSError, StopIteration):
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


async def settle(pid: int, quiet_s: float = 0.3) -> None:
    """Until the sidecar has used no CPU for `quiet_s` (its warm-ups are over: they start
    0.25 s after a change and run on the model's worker), so that what is timed next,
    here or in the sidecar, has the cores to itself."""
    await asyncio.sleep(quiet_s)
    for _ in range(200):
        before = cpu_ticks(pid)
        await asyncio.sleep(quiet_s)
        if cpu_ticks(pid) == before:
            return


def last_record(path: Path) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8").strip().splitlines()
    record: dict[str, Any] = json.loads(lines[-1])
    return record


def recorded_prompt(llm: Any, record: dict[str, Any]) -> tuple[list[int], list[str]]:
    """The tokens the sidecar's model was given for a recorded call, and its stops."""
    shape = ReplyShape(**record["shape"]) if record.get("shape") else None
    prompt, stops, templated, _ = prompt_of(record["messages"], shape, template_of(llm))
    tokens: list[int] = llm.tokenize(prompt.encode("utf-8"), add_bos=not templated, special=True)
    return tokens, stops


def direct_run(llm: Any, record: dict[str, Any], max_tokens: int) -> tuple[float, float, int]:
    """(ttft_ms, decode tokens/s, tokens) for llama-cpp-python on the recorded call's prompt."""
    tokens, stops = recorded_prompt(llm, record)
    start = time.monotonic()
    first = last = 0.0
    n = 0
    for _chunk in llm.create_completion(tokens, max_tokens=max_tokens, temperature=0.0, stop=stops, stream=True):
        now = time.monotonic()
        if n == 0:
            first = now
        last = now
        n += 1
    rate = (n - 1) / (last - first) if n > 1 and last > first else float("nan")
    return (first - start) * 1000, rate, n


async def timed_run(client: Any, request: apb.RunRequest) -> dict[str, Any]:
    """Run `request`; time to first text at this client, decode rate, usage and timings."""
    start = time.monotonic()
    first = last = 0.0
    out: dict[str, Any] = {"completion": 0, "prompt": 0, "cached": 0, "queued_ms": 0.0}
    async for response in client.agent.Run(request):
        kind = response.event.WhichOneof("kind")
        now = time.monotonic()
        if kind == "text":
            first = first or now
            last = now
        elif kind == "usage":
            usage = response.event.usage
            out.update(completion=usage.completion_tokens, prompt=usage.prompt_tokens, cached=usage.cached_tokens)
        elif kind == "finished":
            out["queued_ms"] = response.event.finished.timings.queued_ms
    n = out["completion"]
    out["ttft_ms"] = (first - start) * 1000 if first else float("nan")
    out["rate"] = (n - 1) / (last - first) if n > 1 and last > first else float("nan")
    return out


def narrate(text: str, max_tokens: int, actor: str = "") -> apb.RunRequest:
    return apb.RunRequest(session_id="bench", actor_id=actor, narrate=apb.NarrateInput(text=text),
                          limits=apb.GenerationLimits(max_output_tokens=max_tokens, temperature=0.0))


def mixed(i: int) -> apb.RunRequest:
    """The soak's run i: narrate, dialogue, continue, decide in turn (the model's own sampling)."""
    limits = apb.GenerationLimits(max_output_tokens=48)
    kind = i % 4
    if kind == 0:
        return apb.RunRequest(session_id="bench", narrate=apb.NarrateInput(text=EVENTS[i % len(EVENTS)]),
                              limits=limits)
    if kind == 1:
        return apb.RunRequest(session_id="bench", actor_id="snag", limits=limits,
                              dialogue=apb.DialogueInput(speaker_id="aria", text=LINES[i % len(LINES)]))
    if kind == 2:
        return apb.RunRequest(session_id="bench", actor_id="snag", continue_story=apb.ContinueInput(), limits=limits)
    options = [apb.ActionOption(action_id=a, label=d) for a, d in OPTIONS]
    # A decision's JSON does not fit 48 tokens (INVALID_CHOICE): the profile's own limit.
    return apb.RunRequest(session_id="bench", actor_id="snag",
                          decision=apb.DecisionInput(situation="Aria stands over Snag with a dagger.",
                                                     options=options))


async def main(runs: int, max_tokens: int, soak: int) -> dict[str, Any]:
    import llama_cpp

    work = Path(tempfile.mkdtemp(prefix="bench-local-"))
    record = work / "runs.jsonl"
    env = {**os.environ, RECORD_ENV: str(record)}
    sidecar = await SidecarProcess.launch(["--log-level", "warning"], env=env, timeout=60)
    sampler = RssSampler(sidecar.pid)
    try:
        client = sidecar.client
        await client.open_session("bench")
        revision = (await client.apply_deltas("bench", 0, scene())).revision
        for _ in range(600):
            if (await client.get_info()).llm_ready:
                break
            await asyncio.sleep(0.1)
        await timed_run(client, narrate("The cave is quiet.", 8))  # warm: model load, first-call costs
        await asyncio.sleep(1.0)
        idle = sampler.now()
        sampler.peak = idle
        load_backends()  # a portable llama.cpp registers no CPU backend itself
        llm = await asyncio.to_thread(lambda: llama_cpp.Llama(resolve_weights(find_local_model()), **llama_settings()))
        direct_run(llm, last_record(record), 8)  # warm the direct side too
        side, direct, same = [], [], 0
        for i in range(runs):
            await settle(sidecar.pid)
            got = await timed_run(client, narrate(EVENTS[i % len(EVENTS)], max_tokens))
            side.append(got)
            await settle(sidecar.pid)
            d = await asyncio.to_thread(direct_run, llm, last_record(record), max_tokens)
            direct.append(d)
            same += got["completion"] == d[2]
        peak_decode = sampler.peak
        prefill, new, seen = [], [], {}
        errors: dict[str, int] = {}
        checkpoints: dict[int, float] = {}
        idle_parts, parts_by_run = sampler.parts(), {}

        def growth_by_kind() -> dict[str, float]:
            return {k: round(v - idle_parts[k], 1) for k, v in sampler.parts().items()}

        for i in range(soak):
            if i and i % 100 == 0:
                checkpoints[i] = round(sampler.now() - idle, 1)
            if i and i % 25 == 0:
                parts_by_run[i] = growth_by_kind()
            if i % 4 == 0:  # the world moves on between turns
                moved = await client.apply_deltas("bench", revision, [event(f"Turn {i}: the drum beats.")])
                revision = moved.revision
            request = mixed(i)
            try:
                got = await timed_run(client, request)
            except grpc.aio.AioRpcError as exc:  # e.g. INVALID_CHOICE: counted, the soak goes on
                errors[exc.code().name] = errors.get(exc.code().name, 0) + 1
                continue
            prefill.append(got["prompt"] - got["cached"])
            tokens, _ = recorded_prompt(llm, last_record(record))
            earlier = seen.setdefault(request.actor_id, [])
            if earlier:
                new.append(len(tokens) - max(common_prefix(tokens, e) for e in earlier))
            earlier.append(tokens)
        await asyncio.sleep(1.0)
        after = sampler.now()
        parts_by_run[soak] = growth_by_kind()
        llm.close()
    finally:
        sampler.close()
        await sidecar.close()
    md = statistics.median
    side_rate, dir_rate = md(s["rate"] for s in side), md(d[1] for d in direct)
    return {
        "runs": runs, "max_tokens": max_tokens, "soak_runs": soak, "model": "gemma3-270m q4_k_m",
        "cpu_count": os.cpu_count(),
        "sidecar_ttft_ms_p50": round(md(s["ttft_ms"] for s in side), 1),
        "direct_ttft_ms_p50": round(md(d[0] for d in direct), 1),
        "sidecar_tokens_per_s_p50": round(side_rate, 2),
        "direct_tokens_per_s_p50": round(dir_rate, 2),
        "decode_ratio": round(side_rate / dir_rate, 3),
        "runs_with_equal_token_counts": same,
        "rss_mb_idle": round(idle, 1),
        "rss_mb_peak": round(sampler.peak, 1),
        "rss_mb_peak_over_idle": round(sampler.peak - idle, 1),
        "rss_mb_peak_decode_runs": round(peak_decode, 1),
        "rss_mb_after_soak": round(after, 1),
        "rss_mb_growth_300": round(after - idle, 1),
        "rss_mb_growth_by_run": checkpoints,
        "rss_mb_growth_by_kind": parts_by_run,
        "soak_errors": errors,
        "prefill_tokens_per_run": md(prefill) if prefill else None,
        "new_tokens_per_run": md(new) if new else None,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--soak", type=int, default=300, help="mixed runs for the memory figures")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.runs, args.max_tokens, args.soak))))
