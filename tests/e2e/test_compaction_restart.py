"""A transcript compaction survives a real restart (issue 23): the sidecar process
with --state-dir compacts an actor's transcript in the background, is killed with
SIGKILL, and the next process previews the same summary from the journal."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from waits import eventually

from sidecar.client import SidecarProcess
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import state_pb2 as spb
from sidecar.v1 import types_pb2 as tpb

NPC, PC, INN = "BP_Merchant_C_1", "PLAYER_1", "LOC_Inn_1"
SUMMARY = "npc_1 sold player_1 a brass lamp."
CONFIG = f"""log_level = "warning"
default_profile = "talk"
[profiles.talk]
model = "scripted/talk"
max_retries = 0
[profiles.talk.script]
replies = ["Aye."]
chunk_delay_ms = 0
[profiles.sum]
model = "scripted/sum"
max_retries = 0
[profiles.sum.script]
replies = ["{SUMMARY}"]
chunk_delay_ms = 0
[transcripts]
compact_after_entries = 8
keep_entries = 4
summary_profile = "sum"
"""


def entity(eid: str, kind: int, name: str, at: str = "") -> spb.DeltaOp:
    made = spb.Entity(id=eid, kind=kind, name=name, location_id=at)
    return spb.DeltaOp(upsert_entity=spb.UpsertEntityOp(entity=made))


def talk(i: int) -> apb.RunRequest:
    line = apb.DialogueInput(speaker_id=PC, text=f"Line {i}: any lamps?")
    return apb.RunRequest(session_id="g", actor_id=NPC, dialogue=line)


async def system_message(proc: SidecarProcess) -> str:
    reply = await proc.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=talk(99)))
    return str(reply.messages[0].content)


async def test_a_compaction_survives_sigkill_and_restart(tmp_path: Path) -> None:
    config = tmp_path / "sidecar.toml"
    config.write_text(CONFIG)
    args = ["--config", str(config), "--state-dir", str(tmp_path / "state")]
    first = await SidecarProcess.launch(args, timeout=60)
    try:
        client = first.client
        await client.open_session("g")
        ops = [
            entity(INN, tpb.ENTITY_KIND_LOCATION, "The Flagon"),
            entity(NPC, tpb.ENTITY_KIND_CHARACTER, "Maerwyn", INN),
            entity(PC, tpb.ENTITY_KIND_PLAYER, "Aren", INN),
        ]
        await client.apply_deltas("g", 0, ops)
        for i in range(5):  # 10 entries: past 8
            async for _ in client.run(talk(i)):
                pass

        async def compacted() -> bool:
            return SUMMARY in await system_message(first)

        await eventually(compacted, timeout=30, what="the summary in the prompt")
        before = await system_message(first)
    finally:
        os.kill(first.proc.pid, signal.SIGKILL)  # no clean shutdown: only the journal remains
        await first.close()
    second = await SidecarProcess.launch(args, timeout=60)
    try:
        assert await system_message(second) == before
        page = await second.client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g", actor_id=NPC))
        assert (page.total, page.first_index, len(page.entries)) == (10, 6, 4)
        assert page.summary == "Maerwyn sold Aren a brass lamp."
    finally:
        await second.close()
