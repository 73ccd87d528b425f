"""Replaying runs (issue 29, item 5), end to end on the embedded model: the real
sidecar, launched like a game launches it with GAME_SIDECAR_RECORD_RUNS set,
narrates, speaks and decides; RunStarted reports each run's seed (the one
asked for, or the one drawn); `game-sidecar replay FILE` then sends every
recorded call again and must get the same text, byte for byte."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.client import SidecarProcess
from sidecar.demo import EVENTS, scene_ops
from sidecar.replay import word_diff
from sidecar.runs.replay_log import ENV
from sidecar.v1 import agent_service_pb2 as agent_pb
from sidecar.v1 import state_pb2

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]


async def test_recorded_runs_replay_byte_for_byte(tmp_path: Path) -> None:
    record = tmp_path / "runs.jsonl"
    seeds = []
    async with await SidecarProcess.launch(env={**os.environ, ENV: str(record)}) as sidecar:
        client = sidecar.client
        opened = await client.open_session("qa")
        applied = await client.apply_deltas("qa", opened.revision, scene_ops())
        requests = []
        for n, (text, ids) in enumerate(EVENTS):
            event = state_pb2.DeltaOp(record_event=state_pb2.RecordEventOp(
                event=state_pb2.GameEvent(text=text, entity_ids=ids)))  # fmt: skip
            applied = await client.apply_deltas("qa", applied.revision, [event])
            narrate = agent_pb.NarrateInput(text=text, entity_ids=ids)
            requests.append(agent_pb.RunRequest(session_id="qa", narrate=narrate, seed=1000 + n if n else 0))
        asked = agent_pb.DialogueInput(text="Who are you?", speaker_id="Player_0")
        requests.append(agent_pb.RunRequest(session_id="qa", actor_id="NPC_Bram_7f3a", dialogue=asked))
        options = [agent_pb.ActionOption(action_id="serve", label="Serve Mira a drink"),
                   agent_pb.ActionOption(action_id="hide", label="Hide behind the bar")]  # fmt: skip
        requests.append(agent_pb.RunRequest(session_id="qa", actor_id="NPC_Bram_7f3a", seed=7,
                                            decision=agent_pb.DecisionInput(situation="Mira is thirsty.",
                                                                            options=options)))  # fmt: skip
        for request in requests:
            events = [e async for e in client.run(request)]
            assert events[-1].HasField("finished"), events[-1]
            seeds.append(events[0].started.seed)
    assert seeds[1:3] == [1001, 1002] and seeds[-1] == 7  # the seeds asked for
    assert seeds[0] and seeds[3]  # drawn when the request names none
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert [line["seed"] for line in lines] == seeds
    assert all("NPC_Bram_7f3a" not in json.dumps(line) for line in lines)  # projected, as sent

    command = [sys.executable, "-m", "sidecar", "replay", str(record)]  # as QA runs it, in a process of its own
    replayed = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert f"{len(lines)} of {len(lines)} identical" in replayed.stdout


def test_the_diff_names_the_words_that_changed() -> None:
    assert word_diff("The door opens.", "The door opens.") == ""
    assert word_diff("The old door opens.", "The red door opens slowly.") == (
        "The [-old-] {+red+} door [-opens.-] {+opens slowly.+}"
    )
