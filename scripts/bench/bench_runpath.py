#!/usr/bin/env python
"""The sidecar's own work per run, in process: plan, queue, prompt, model call,
events, recording, with the scripted model streaming at once (no delays), so
what is measured is the run path and nothing else (no gRPC, no network).

Runs `--runs` narrations one after another, then `--runs` decisions that take
three attempts (two rejected replies), in `--rounds` rounds, and prints one
JSON object: CPU ms and wall ms per run (median over rounds). Point PYTHONPATH
at another checkout to compare trees on the same machine, e.g.

    .venv/bin/python scripts/bench/bench_runpath.py --runs 300 --rounds 5
    PYTHONPATH=/tmp/base .venv/bin/python scripts/bench/bench_runpath.py --runs 300 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

# The checkout this script is in, after PYTHONPATH (which may name another tree to compare).
sys.path.append(str(Path(__file__).resolve().parents[2]))

import sidecar  # noqa: E402
from sidecar.config import Config, ModelProfile, ScriptConfig  # noqa: E402
from sidecar.context.contract import ActionOption, DecisionInput, NarrateInput, RunSpec  # noqa: E402
from sidecar.runs import RunOptions  # noqa: E402
from sidecar.server import build_app  # noqa: E402
from sidecar.state.model import Entity  # noqa: E402
from sidecar.state.ops import UpsertEntity  # noqa: E402

NPC = "npc-bench-1"


def _config() -> Config:
    script = ScriptConfig(chunk_delay_ms=0.0, first_token_delay_ms=0.0)
    fake = ModelProfile(model="scripted/bench", max_retries=0, script=script)
    return Config(profiles={"fake": fake}, default_profile="fake")


async def _drain(app: object, spec: RunSpec) -> None:
    handle = app.runs.submit(spec, RunOptions())  # type: ignore[attr-defined]
    try:
        async for _ in handle.events():
            pass
    except Exception as exc:  # noqa: BLE001 - decisions end INVALID_CHOICE by design here
        if type(exc).__name__ != "InvalidChoice":
            raise


async def _round(runs: int) -> dict[str, float]:
    app = build_app(_config())
    await app.store.start()  # type: ignore[attr-defined]
    app.gateway.start()  # type: ignore[attr-defined]
    await app.store.open("b1")  # type: ignore[attr-defined]
    ops = [UpsertEntity(Entity(id=NPC, kind="character", name="Maerwyn"))]
    await app.store.apply("b1", 0, "", ops)  # type: ignore[attr-defined]
    options = (ActionOption("wait", "Wait"), ActionOption("leave", "Leave"))
    kinds = {
        "narrate": lambda i: RunSpec("b1", "", NarrateInput(f"The door opens ({i}).")),
        "decision_3_attempts": lambda i: RunSpec(
            "b1", NPC, DecisionInput(f"Nothing happens ({i}). #garbage", options, max_attempts=3)
        ),
    }
    out: dict[str, float] = {}
    for name, make in kinds.items():
        await _drain(app, make(-1))  # warm: tokenizer, caches, first imports
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for i in range(runs):
            await _drain(app, make(i))
        out[f"{name}_cpu_ms_per_run"] = (time.process_time() - cpu0) * 1000 / runs
        out[f"{name}_wall_ms_per_run"] = (time.perf_counter() - wall0) * 1000 / runs
    await app.runs.aclose()  # type: ignore[attr-defined]
    await app.store.aclose()  # type: ignore[attr-defined]
    await app.gateway.aclose()  # type: ignore[attr-defined]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = [asyncio.run(_round(args.runs)) for _ in range(args.rounds)]
    result = {key: round(statistics.median(r[key] for r in rounds), 3) for key in rounds[0]}
    result["rounds"] = args.rounds
    result["runs"] = args.runs
    result["tree"] = str(Path(sidecar.__file__).resolve().parent.parent)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
