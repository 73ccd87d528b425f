"""Issue 30, item 3: the embedded model's memory stays flat over a play session. llama.cpp
frees many small blocks per token (the grammar's decoded candidates above all); glibc
kept them, and a session's RSS climbed by about 150 MB in 60 mixed runs. The grammar now
gets slices of the vocabulary (tests/llm/test_llm_grammar_slices.py) and the heap is
trimmed after each generation (`sidecar.heap.release_heap`).

Measured in a fresh process set up as the sidecar sets itself up (its heap settled once
loaded; a heap that earlier tests left in the test process added its noise), through the
real pipeline on the real weights: narrations, dialogue and decisions, as a game would
send them. A memory bound, not a timing one;
docs/benchmarks.md has the sidecar's own figures (scripts/bench/bench_local_model.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.runs_rig import build_rig, drain
from world import World

from sidecar import heap
from sidecar.context.contract import ActionOption, DecisionInput, DialogueInput, NarrateInput

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]

#: MB over the loaded model's RSS after the runs below: the first decode's buffers
#: (30-60 MB, kept for good) and the runs' (measured 41-62 in all; 163 before the
#: vocabulary slices and the heap trim).
OVER_LOADED_MB = 100
#: MB the runs after the first may add (measured about 11).
GROWTH_MB = 30

def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


async def measure() -> tuple[float, float, float]:
    """RSS (MB) with the model loaded, after the first run and after 24 mixed runs."""
    rig = build_rig(model="local/gemma3-270m", context_window=4096, max_output_tokens=60)
    await rig.session()
    await (
        World()
        .entity("dock", "location", "The Salt Dock", description="A windy dock stacked with crates.")
        .entity("pc_1", "player", "Ivo", at="dock", description="A courier with a sealed letter.")
        .entity("npc_mara", "character", "Mara", at="dock", description="The harbour master, sharp-eyed.")
        .apply_to(rig.app.store, "s1")
    )
    options = (ActionOption("wave", "Wave the ship in"), ActionOption("shout", "Shout at Ivo"),
               ActionOption("count", "Count the crates"))
    runs = [
        dict(run_input=NarrateInput("A gull steals a fish from a crate.", ())),
        dict(actor_id="npc_mara", run_input=DialogueInput(text="Where is the ship from Varo?", speaker_id="pc_1")),
        dict(actor_id="npc_mara", run_input=DecisionInput(situation="A ship nears the dock.", options=options)),
    ]
    try:
        await asyncio.to_thread(rig.app.gateway.local.preload)
        # As the server does once the background loading is over (sidecar/server.py): without
        # the wait, the tail of an import was counted as the runs' growth (40 MB).
        await rig.app.gateway.loaded()
        heap.settle()
        loaded = _rss_mb()
        after_first = 0.0
        for i in range(24):
            out = await drain(rig.submit(**runs[i % 3]))
            assert out.error is None, out.error
            after_first = after_first or _rss_mb()
        return loaded, after_first, _rss_mb()
    finally:
        await rig.runs.aclose()
        await rig.app.gateway.aclose()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_rss_stays_flat_over_mixed_runs() -> None:
    tests = Path(__file__).resolve().parent.parent
    path = os.pathsep.join(p for p in (str(tests / "llm"), str(tests), os.environ.get("PYTHONPATH", "")) if p)
    code = "import asyncio, json, test_llm_flat_memory as t; print(json.dumps(asyncio.run(t.measure())))"
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
        timeout=500, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    loaded, after_first, now = json.loads(done.stdout.strip().splitlines()[-1])
    assert now - loaded <= OVER_LOADED_MB, f"RSS {now - loaded:.1f} MB over the loaded model after 24 runs"
    assert now - after_first <= GROWTH_MB, f"RSS grew {now - after_first:.1f} MB after the first run"
