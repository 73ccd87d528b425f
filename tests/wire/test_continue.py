"""The Continue input (seed 003's "continue" action, issue 23): the actor carries
the story on from its last reply, over gRPC and through the Python client."""

from __future__ import annotations

import grpc
import pytest
from world import World

from sidecar.client import error_reason
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.v1 import agent_service_pb2 as apb

NPC, PC, INN = "BP_Merchant_C_1", "PLAYER_1", "LOC_Inn_1"
REPLIES = ["npc_1 leans in: the road north is closed.", "Bandits hold the bridge, and the toll is blood."]


@pytest.fixture
async def running(make_server):  # type: ignore[no-untyped-def]
    fake = ModelProfile(model="scripted/go", max_retries=0, script=ScriptConfig(chunk_delay_ms=0, replies=REPLIES))
    server = await make_server(Config(profiles={"fake": fake}, default_profile="fake"))
    await server.client.open_session("g")
    world = World().entity(INN, "location", "The Flagon").entity(NPC, name="Maerwyn", at=INN)
    await world.entity(PC, "player", "Aren", at=INN).send(server.client, "g", 0)
    return server


def go_on() -> apb.RunRequest:
    return apb.RunRequest(session_id="g", actor_id=NPC, continue_story=apb.ContinueInput())


async def test_continue_with_nothing_to_continue_is_refused_and_records_nothing(running) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=go_on()))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and error_reason(err.value) == "INVALID_REQUEST"
    assert "nothing to continue" in (err.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as run_err:
        async for _ in running.client.run(go_on()):
            pass
    assert error_reason(run_err.value) == "INVALID_REQUEST"
    assert NPC not in running.app.store.get("g").transcripts


async def test_continue_carries_on_from_the_last_reply(running) -> None:  # type: ignore[no-untyped-def]
    line = apb.RunRequest(
        session_id="g", actor_id=NPC, dialogue=apb.DialogueInput(speaker_id=PC, text="Which road is safe?")
    )
    async for _ in running.client.run(line):
        pass
    preview = await running.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=go_on()))
    *_, last_reply, final = preview.messages
    # The last output is the history's last turn; the input asks to carry it on.
    assert (last_reply.role, last_reply.content) == ("assistant", REPLIES[0])
    assert final.role == "user" and "carry the story on from where your last reply ends" in final.content
    text = "".join([piece async for piece in running.client.continue_story("g", NPC)])
    assert text == REPLIES[1]
    page = await running.client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g", actor_id=NPC))
    assert [(e.role, e.text) for e in page.entries] == [
        ("player", "Which road is safe?"),
        ("actor", "Maerwyn leans in: the road north is closed."),
        ("continue", ""),
        ("actor", REPLIES[1]),
    ]
    after = await running.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=go_on()))
    turns = [(m.role, m.content) for m in after.messages[1:-1]]
    assert turns[-3:] == [("assistant", REPLIES[0]), ("user", "Go on."), ("assistant", REPLIES[1])]
