#!/usr/bin/env python
"""The embedded model through the sidecar vs llama-cpp-python called directly,
on the same prompts, in the same run.

The real sidecar is launched like a game does (default config: the embedded
Gemma 3 270M). For each narration the exact prompt comes from `PreviewPrompt`;
the sidecar then narrates it through `Run` (its direct local route, worker
thread, gRPC), and this process runs the same prompt on its own
`llama_cpp.Llama` with the same settings. Greedy decoding on both sides, so
both generate the same tokens. Prints one JSON object: time to first token
and decode tokens/s for each side, and the sidecar's share of direct throughput.

Usage: .venv/bin/python scripts/bench_local_model.py [--runs 6] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Nothing here imports litellm any more; kept so an older checkout never fetches prices.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.llm.local import STOP, format_prompt, llama_settings  # noqa: E402
from sidecar.llm.weights import find_local_model, resolve_weights  # noqa: E402
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


def entity(eid: str, kind: int, name: str, description: str, location: str = "") -> spb.DeltaOp:
    ent = spb.Entity(id=eid, kind=kind, name=name, description=description, location_id=location)
    return spb.DeltaOp(upsert_entity=spb.UpsertEntityOp(entity=ent))


def direct_run(llm, prompt: str, max_tokens: int) -> tuple[float, float, int]:
    """(ttft_ms, decode tokens/s, tokens) for llama-cpp-python on `prompt`."""
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    start = time.monotonic()
    first = last = 0.0
    n = 0
    for _chunk in llm.create_completion(
        tokens, max_tokens=max_tokens, temperature=0.0, repeat_penalty=1.1, stop=list(STOP), stream=True
    ):
        now = time.monotonic()
        if n == 0:
            first = now
        last = now
        n += 1
    rate = (n - 1) / (last - first) if n > 1 and last > first else float("nan")
    return (first - start) * 1000, rate, n


async def sidecar_run(client, text: str, max_tokens: int) -> tuple[float, float, int, str]:
    request = apb.RunRequest(
        session_id="bench",
        narrate=apb.NarrateInput(text=text),
        limits=apb.GenerationLimits(max_output_tokens=max_tokens, temperature=0.0),
    )
    start = time.monotonic()
    first = last = 0.0
    completion = 0
    reply = []
    async for response in client.agent.Run(request):
        event = response.event
        now = time.monotonic()
        if event.HasField("text"):
            if not first:
                first = now
            last = now
            reply.append(event.text.text)
        elif event.HasField("usage"):
            completion = event.usage.completion_tokens
    # Tokens after the first, over the time from first to last text (the decode rate).
    rate = (completion - 1) / (last - first) if completion > 1 and last > first else float("nan")
    return (first - start) * 1000, rate, completion, "".join(reply)


async def main(runs: int, max_tokens: int) -> None:
    import llama_cpp

    sidecar = await SidecarProcess.launch(["--log-level", "warning"], timeout=20)
    try:
        client = sidecar.client
        await client.open_session("bench")
        await client.apply_deltas("bench", 0, [
            entity("cave", tpb.ENTITY_KIND_LOCATION, "Damp Cave", "A damp cave lit by torches."),
            entity("aria", tpb.ENTITY_KIND_PLAYER, "Aria", "A young swordswoman.", "cave"),
            entity("snag", tpb.ENTITY_KIND_CHARACTER, "Snag", "A sneaky goblin.", "cave"),
        ])
        for _ in range(600):
            if (await client.get_info()).llm_ready:
                break
            await asyncio.sleep(0.1)
        llm = await asyncio.to_thread(lambda: llama_cpp.Llama(resolve_weights(find_local_model()), **llama_settings()))
        # Warm both: model load, first-call costs.
        await sidecar_run(client, "The cave is quiet.", 8)
        direct_run(llm, "Warm up.", 8)
        side_ttft, side_rate, dir_ttft, dir_rate, same = [], [], [], [], 0
        for i in range(runs):
            text = EVENTS[i % len(EVENTS)]
            preview = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=apb.RunRequest(
                session_id="bench", narrate=apb.NarrateInput(text=text))))
            prompt = format_prompt([{"role": m.role, "content": m.content} for m in preview.messages])
            t, r, n_side, reply = await sidecar_run(client, text, max_tokens)
            side_ttft.append(t)
            side_rate.append(r)
            t, r, n_direct = await asyncio.to_thread(direct_run, llm, prompt, max_tokens)
            dir_ttft.append(t)
            dir_rate.append(r)
            same += n_side == n_direct
        md = statistics.median
        result = {
            "runs": runs,
            "max_tokens": max_tokens,
            "model": "gemma3-270m q4_k_m",
            "sidecar_ttft_ms_p50": round(md(side_ttft), 1),
            "direct_ttft_ms_p50": round(md(dir_ttft), 1),
            "sidecar_tokens_per_s_p50": round(md(side_rate), 2),
            "direct_tokens_per_s_p50": round(md(dir_rate), 2),
            "throughput_ratio": round(md(side_rate) / md(dir_rate), 3),
            "runs_with_equal_token_counts": same,
            "last_reply": reply,
        }
        llm.close()
    finally:
        await sidecar.close()
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.max_tokens))
