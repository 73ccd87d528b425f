"""Long-session soak for scripts/bench/bench_context.py (issue 23): one session through
the real sidecar process (scripted model, a --state-dir journal), `turns`
dialogue turns with one world event every third turn.

Per turn it times ApplyDeltas (on event turns), Run (to RunFinished) and
PreviewPrompt, over gRPC. Figures compare the window of turns ending at turn
500 with the window ending at the last turn (p50 of each): growth = last over
500. RSS of the sidecar process is read at turn 500 and at the end.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sidecar.client import SidecarProcess
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import state_pb2 as spb
from sidecar.v1 import types_pb2 as tpb

NPC, PLAYER, TAVERN = "BP_Merchant_C_0000000001", "PLAYER_0000000001", "LOC_Tavern_0000000001"
WINDOW = 100

_CONFIG = """log_level = "warning"
default_profile = "fake"
[profiles.fake]
model = "scripted/soak"
max_retries = 0
[profiles.fake.script]
chunk_chars = 64
first_token_delay_ms = 0
chunk_delay_ms = 0
"""


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for {pid}")


def _entity(eid: str, kind: int, name: str, location: str = "", description: str = "") -> spb.DeltaOp:
    return spb.DeltaOp(upsert_entity=spb.UpsertEntityOp(entity=spb.Entity(
        id=eid, kind=kind, name=name, location_id=location, description=description)))


async def _run(client: Any, request: apb.RunRequest) -> str:
    last = ""
    async for event in client.run(request, timeout=120):
        last = event.WhichOneof("kind")
    return last


async def soak(turns: int = 3000, extra_config: str = "") -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "soak.toml"
        cfg.write_text(_CONFIG + extra_config)
        state = Path(tmp) / "state"
        sidecar = await SidecarProcess.launch(
            ["--config", str(cfg), "--state-dir", str(state)], env=dict(os.environ), timeout=60
        )
        pid = sidecar.proc.pid
        apply_ms: dict[int, float] = {}
        run_ms: dict[int, float] = {}
        preview_ms: dict[int, float] = {}
        rss: dict[str, float] = {}
        rss_series: dict[str, float] = {}
        ends: dict[str, int] = {}
        try:
            client = sidecar.client
            await client.open_session("soak")
            setup = [
                _entity(TAVERN, tpb.ENTITY_KIND_LOCATION, "The Gilded Flagon"),
                _entity(NPC, tpb.ENTITY_KIND_CHARACTER, "Maerwyn", TAVERN),
                _entity(PLAYER, tpb.ENTITY_KIND_PLAYER, "Aren", TAVERN),
            ]
            revision = (await client.apply_deltas("soak", 0, setup)).revision
            mark = min(500, turns)
            for turn in range(1, turns + 1):
                if turn % 3 == 0:
                    op = spb.DeltaOp(record_event=spb.RecordEventOp(event=spb.GameEvent(
                        text=f"Event {turn}: a cart rolls past the tavern door.",
                        entity_ids=[NPC], location_id=TAVERN)))
                    t0 = time.perf_counter()
                    revision = (await client.apply_deltas("soak", revision, [op])).revision
                    apply_ms[turn] = (time.perf_counter() - t0) * 1000
                request = apb.RunRequest(
                    session_id="soak", actor_id=NPC,
                    dialogue=apb.DialogueInput(speaker_id=PLAYER, text=f"Turn {turn}: what news from the road?"),
                )
                t0 = time.perf_counter()
                await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=request))
                preview_ms[turn] = (time.perf_counter() - t0) * 1000
                t0 = time.perf_counter()
                end = await _run(client, request)
                run_ms[turn] = (time.perf_counter() - t0) * 1000
                ends[end] = ends.get(end, 0) + 1
                if turn == mark:
                    rss["mark"] = _rss_mb(pid)
                if turn % (WINDOW * 5) == 0:
                    rss_series[str(turn)] = _rss_mb(pid)
            rss["end"] = _rss_mb(pid)
        finally:
            await sidecar.close()

    def p50(series: dict[int, float], last: int) -> float:
        values = [v for t, v in series.items() if last - WINDOW < t <= last]
        return statistics.median(values) if values else 0.0

    mark = min(500, turns)
    a0, a1 = p50(apply_ms, mark), p50(apply_ms, turns)
    r0, r1 = p50(run_ms, mark), p50(run_ms, turns)
    v0, v1 = p50(preview_ms, mark), p50(preview_ms, turns)
    return {
        "soak_turns": turns,
        "soak_run_ends": ends,
        "apply_ms_p50_at_500": round(a0, 2),
        "apply_ms_p50_at_end": round(a1, 2),
        "apply_ms_p50_growth": round(a1 / a0, 2) if a0 else None,
        "run_ms_p50_at_500": round(r0, 2),
        "run_ms_p50_at_end": round(r1, 2),
        "run_ms_p50_growth": round(r1 / r0, 2) if r0 else None,
        "preview_ms_p50_at_500": round(v0, 2),
        "preview_ms_p50_at_end": round(v1, 2),
        "preview_ms_p50_growth": round(v1 / v0, 2) if v0 else None,
        "rss_mb_at_500": rss.get("mark"),
        "rss_mb_at_end": rss.get("end"),
        "rss_mb_growth": round(rss["end"] - rss["mark"], 1) if "mark" in rss else None,
        "series_ms_p50": {
            str(t): [round(p50(apply_ms, t), 2), round(p50(run_ms, t), 2), round(p50(preview_ms, t), 2)]
            for t in range(WINDOW * 5, turns + 1, WINDOW * 5)
        },
        "rss_mb_series": rss_series,
    }


def run_soak(turns: int) -> dict[str, object]:
    return asyncio.run(soak(turns))
