"""The real sidecar freezes its start-up heap once the background loading is over
(sidecar/heap.py): later collections never walk the modules and libraries again,
and runs go on as before."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from sidecar.client import SidecarProcess
from sidecar.v1 import agent_service_pb2 as apb

pytestmark = [pytest.mark.timeout(120)]


class SettledLine:
    """Reads the sidecar's stderr; `seen` is set at its "heap settled" line."""

    def __init__(self) -> None:
        self.seen = asyncio.Event()
        self.fields: dict = {}

    def __call__(self, line: str) -> None:
        record = json.loads(line)
        if record["msg"] == "heap settled":
            self.fields = record["fields"]
            self.seen.set()


async def test_the_heap_is_frozen_once_loaded_and_runs_still_work(tmp_path: Path) -> None:
    config = tmp_path / "sidecar.toml"
    config.write_text('default_profile = "fake"\n[profiles.fake]\nmodel = "scripted/heap"\n')
    settled = SettledLine()
    args = ["--config", str(config), "--log-level", "debug"]
    async with await SidecarProcess.launch(args, on_stderr=settled) as sidecar:
        await settled.seen.wait()  # the pytest timeout bounds this wait
        assert (await sidecar.client.get_info()).llm_ready  # settled only after the loading
        # The modules, classes and functions of grpc, protobuf, msgspec and ours, at least.
        assert settled.fields["frozen"] > 10_000
        # glibc's mmap threshold is fixed from here on (sidecar/heap.py; tests/test_heap.py).
        assert settled.fields["mmap_threshold_fixed"] is sys.platform.startswith("linux")
        await sidecar.client.open_session("g1")
        request = apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="A bell rings."))
        events = [event async for event in sidecar.client.run(request)]
        assert events[-1].HasField("finished")
