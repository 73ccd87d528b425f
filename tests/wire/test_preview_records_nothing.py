"""PreviewPrompt records nothing a later run reads (issue 31, item 1; docs/context.md): two
sessions built the same way over a real server, one previewed before every run (at tight and
roomy budgets, for every input kind and actor), the other never; every run's prompt, as the
model received it (the replay record), and what the session holds after are the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from world import World

from sidecar.client import SidecarClient
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.runs import replay_log
from sidecar.v1 import agent_service_pb2 as apb

NPC, GUARD, PLAYER, INN, YARD = "npc-maerwyn-7", "npc-guard-2", "player-one-1", "loc-inn-01", "loc-yard-02"


@pytest.fixture
def record(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "runs.jsonl"
    replay_log.configure(str(path))
    yield path
    replay_log.configure(None)


def _requests(session: str, turn: int) -> list[apb.RunRequest]:
    """One turn: a narration naming entities, a line to each NPC, a decision, a Describe."""
    options = [apb.ActionOption(action_id=a, label=label) for a, label in (("pour", "Pour an ale"), ("shut", "Shut"))]
    return [
        apb.RunRequest(session_id=session, narrate=apb.NarrateInput(text=f"A cart rolls in, {turn}.",
                                                                    entity_ids=[PLAYER, NPC])),  # fmt: skip
        apb.RunRequest(session_id=session, actor_id=NPC,
                       dialogue=apb.DialogueInput(speaker_id=PLAYER, text=f"Any news, {turn}?")),  # fmt: skip
        apb.RunRequest(session_id=session, actor_id=GUARD,
                       dialogue=apb.DialogueInput(speaker_id=PLAYER, text=f"Halt? {turn}")),  # fmt: skip
        # (the scripted model's cue: it chooses option 2)
        apb.RunRequest(session_id=session, actor_id=NPC, decision=apb.DecisionInput(
            situation=f"A thirsty guest, {turn}. #choose:2", options=options)),  # fmt: skip
        apb.RunRequest(session_id=session, actor_id=NPC, describe=apb.DescribeInput(entity_id=INN)),
    ]


async def _play(client: SidecarClient, session: str, previews: bool) -> None:
    opened = await client.open_session(session)
    world = (
        World()
        .entity(INN, "location", "The Rusty Anchor", description="A smoky harbour tavern.")
        .entity(YARD, "location", "The Yard", description="Mud and carts.")
        .entity(NPC, "character", "Maerwyn", at=INN, description="A nomad merchant.")
        .entity(GUARD, "character", "Ósk", at=YARD, description="A tired guard.")
        .entity(PLAYER, "player", "Aria", at=INN, description="A young sellsword.")
        .memory(NPC, "Aria paid twice for the silk.")
    )
    revision = await world.send(client, session, opened.revision)
    for turn in range(3):
        for i in range(20):
            revision = await World().event(f"Rain, turn {turn}, drop {i}.", at=INN).send(client, session, revision)
        for request in _requests(session, turn):
            if previews:
                for budget in (6000, 800, 560):
                    for other in _requests(session, turn + 10):
                        other.budget_tokens = budget
                        await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=other))
            request.budget_tokens = 1000
            events = [e async for e in client.run(request)]
            assert events[-1].HasField("finished")


async def test_a_preview_changes_no_later_prompt(make_server, record: Path) -> None:
    profile = ModelProfile(model="scripted/preview", max_retries=0, script=ScriptConfig(chunk_delay_ms=0))
    client = (await make_server(Config(profiles={"fake": profile}, default_profile="fake"))).client
    await _play(client, "plain", previews=False)
    await _play(client, "previewed", previews=True)
    calls = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]  # noqa: ASYNC240
    plain = [c["messages"] for c in calls if c["session_id"] == "plain"]
    previewed = [c["messages"] for c in calls if c["session_id"] == "previewed"]
    assert len(plain) == len(previewed) == 15
    for i, (a, b) in enumerate(zip(plain, previewed, strict=True)):
        assert a == b, f"run {i} read another prompt after previews"
    for actor in ("", NPC, GUARD):
        pages = [
            await client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id=s, actor_id=actor))
            for s in ("plain", "previewed")
        ]
        assert [e.text for e in pages[0].entries] == [e.text for e in pages[1].entries]
        assert pages[0].entries
