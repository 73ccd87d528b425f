#!/usr/bin/env python
"""A session's first token with the warm-up and without it, against llama.cpp's own
time to prefill the same new tokens (issue 30, item 2; docs/runs.md, Warm-up).

Two real sidecars, launched like a game does (the embedded Gemma 3 270M), one after the
other: `[local_model] warm_up = true` (the default) and `false`. Each opens a session,
applies a scene and, after `--settle` seconds (a player reading the screen), narrates its
first line; then `--runs` times: a world event arrives (ApplyDeltas), `--settle` seconds
pass, a narration follows. Each narration is timed at this client, over gRPC, to its
first text (`ttft_ms_*`, medians), greedy, 8 tokens; usage gives the tokens it evaluated
(prompt less cached: `prefill_tokens_*`).

The anchor: this process's own llama_cpp.Llama (same settings) gets each warm run's
recorded prompt with all but the tokens the sidecar evaluated already in its context,
and is timed to its first token (`direct_prefill_ms`: llama.cpp prefilling the same new
tokens, plus sampling one). Target: `ttft_ms_warm` <= `direct_prefill_ms` + 50.

Usage: .venv/bin/python scripts/bench/bench_warm_up.py [--runs 8] [--settle 1.5]
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
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_local_model import EVENTS, event, last_record, narrate, recorded_prompt, scene, timed_run  # noqa: E402

from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.llm.cpu_level import load_backends  # noqa: E402
from sidecar.llm.llama_settings import llama_settings  # noqa: E402
from sidecar.llm.weights import find_local_model, resolve_weights  # noqa: E402
from sidecar.runs.replay_log import ENV as RECORD_ENV  # noqa: E402

FIRST_LINE = "Aria steps into the cave, torch held high."


async def session(warm: bool, runs: int, settle: float) -> list[dict[str, Any]]:
    """The narrations of one sidecar (the first line first), each after the first with its recorded model call."""
    work = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    record, config = work / "runs.jsonl", work / "sidecar.toml"
    config.write_text(f"[local_model]\nwarm_up = {'true' if warm else 'false'}\n")
    env = {**os.environ, RECORD_ENV: str(record)}
    out: list[dict[str, Any]] = []
    async with await SidecarProcess.launch(["--log-level", "warning", "--config", str(config)], env=env,
                                           timeout=60) as sidecar:  # fmt: skip
        client = sidecar.client
        for _ in range(600):
            if (await client.get_info()).llm_ready:
                break
            await asyncio.sleep(0.1)
        await client.open_session("bench")
        revision = (await client.apply_deltas("bench", 0, scene())).revision
        await asyncio.sleep(settle)
        out.append(await timed_run(client, narrate(FIRST_LINE, 8)))
        for i in range(runs):
            news = [event(f"Turn {i}: the drum beats louder.")]
            revision = (await client.apply_deltas("bench", revision, news)).revision
            await asyncio.sleep(settle)
            got = await timed_run(client, narrate(EVENTS[i % len(EVENTS)], 8))
            got["record"] = last_record(record)
            out.append(got)
    return out


def direct_prefill_ms(llm: Any, record: dict[str, Any], new: int) -> float:
    """llama.cpp's time to first token for the recorded prompt with all but `new` tokens evaluated."""
    tokens, stops = recorded_prompt(llm, record)
    llm.reset()
    llm.eval(tokens[: len(tokens) - new])
    start = time.monotonic()
    for _ in llm.create_completion(tokens, max_tokens=1, temperature=0.0, stop=stops, stream=True):
        break
    return (time.monotonic() - start) * 1000


async def main(runs: int, settle: float) -> dict[str, Any]:
    import llama_cpp

    warm = await session(True, runs, settle)
    cold = await session(False, runs, settle)
    load_backends()  # a portable llama.cpp registers no CPU backend itself
    llm = llama_cpp.Llama(resolve_weights(find_local_model()), **llama_settings())
    direct_prefill_ms(llm, warm[1]["record"], 8)  # first-call costs, not counted
    anchors = [direct_prefill_ms(llm, got["record"], max(1, got["prompt"] - got["cached"])) for got in warm[1:]]
    llm.close()
    md = statistics.median

    def prefill(got: dict[str, Any]) -> int:
        return int(got["prompt"] - got["cached"])

    return {
        "runs": runs, "settle_s": settle, "model": "gemma3-270m q4_k_m",
        "ttft_ms_first_line_warm": round(warm[0]["ttft_ms"], 1),
        "ttft_ms_first_line_cold": round(cold[0]["ttft_ms"], 1),
        "prefill_tokens_first_line_warm": prefill(warm[0]),
        "prefill_tokens_first_line_cold": prefill(cold[0]),
        "ttft_ms_warm": round(md(g["ttft_ms"] for g in warm[1:]), 1),
        "ttft_ms_cold": round(md(g["ttft_ms"] for g in cold[1:]), 1),
        "prefill_tokens_warm": md(prefill(g) for g in warm[1:]),
        "prefill_tokens_cold": md(prefill(g) for g in cold[1:]),
        "prompt_tokens": md(g["prompt"] for g in warm[1:]),
        "direct_prefill_ms": round(md(anchors), 1),
        "ttft_ms_warm_over_direct": round(md(g["ttft_ms"] - a for g, a in zip(warm[1:], anchors, strict=True)), 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--settle", type=float, default=1.5, help="seconds between a change and the next line")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.runs, args.settle))))
