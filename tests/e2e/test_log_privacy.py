"""What the real sidecar process writes to stderr at each log level
(docs/privacy.md, "Logs"): at the default level and at info, JSON lines only
and no prompt text; at debug, prompts may appear, aliased, never an engine ID."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from world import World

from sidecar.client import SidecarProcess
from sidecar.v1 import agent_service_pb2 as apb

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

GOBLIN = "BP_Goblin_C_2147483647"
MARKER = "the cellar door creaks open"
#: Words of the fixed system rules: in every prompt, in no log line below debug.
RULES = "You voice characters"


@pytest.mark.parametrize("level", [None, "info", "debug"])
async def test_prompts_stay_out_of_logs_below_debug(tmp_path: Path, level: str | None) -> None:
    config = tmp_path / "sidecar.toml"
    config.write_text('default_profile = "fake"\n[profiles.fake]\nmodel = "scripted/logs"\n')
    lines: list[str] = []
    args = ["--config", str(config), *(["--log-level", level] if level else [])]
    async with await SidecarProcess.launch(args, on_stderr=lines.append) as sidecar:
        opened = await sidecar.client.open_session("g1")
        await World().entity(GOBLIN, "character", "Grub").send(sidecar.client, "g1", opened.revision)
        request = apb.RunRequest(
            session_id="g1", narrate=apb.NarrateInput(text=f"{GOBLIN}: {MARKER}", entity_ids=[GOBLIN])
        )
        events = [event async for event in sidecar.client.run(request)]
        assert events[-1].HasField("finished")
    assert lines, "the sidecar logs its start at every level"
    for line in lines:
        json.loads(line)  # every line is the sidecar's JSON, whatever library wrote it
        assert GOBLIN not in line
        if level != "debug":
            assert MARKER not in line and RULES not in line, line[:200]
