"""Issue 23 over the wire (a real server, the scripted model): a session imported from
its own export previews byte-identical prompts for the same input after a mixed
session (events, lore, memories, dialogue and narration runs); the narrator (actor "")
can be given memories."""

from __future__ import annotations

from world import World

from sidecar.client import SidecarClient
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import session_service_pb2 as spb

NPC, PLAYER, TAVERN = "npc-maerwyn-7", "player-one-1", "loc-tavern-01"


def _config() -> Config:
    profile = ModelProfile(model="scripted/wire", max_retries=0, script=ScriptConfig(chunk_delay_ms=1))
    return Config(profiles={"fake": profile}, default_profile="fake")


def _dialogue(session: str, text: str) -> apb.RunRequest:
    return apb.RunRequest(session_id=session, actor_id=NPC, dialogue=apb.DialogueInput(text=text), budget_tokens=1500)


def _narrate(session: str, text: str) -> apb.RunRequest:
    return apb.RunRequest(
        session_id=session, narrate=apb.NarrateInput(text=text, entity_ids=[PLAYER]), budget_tokens=1500
    )


async def _run(client: SidecarClient, request: apb.RunRequest) -> None:
    events = [e async for e in client.run(request)]
    assert events[-1].HasField("finished")


async def test_an_imported_session_previews_byte_identical_prompts(make_server) -> None:
    client = (await make_server(_config())).client
    opened = await client.open_session("save")
    world = (
        World()
        .entity(TAVERN, "location", "The Rusty Anchor", description="A smoky harbour tavern.")
        .entity(NPC, "character", "Maerwyn", at=TAVERN, description="A nomad merchant.", hp=30, max_hp=30)
        .entity(PLAYER, "player", "Aria", at=TAVERN, description="A young sellsword.")
        .lore("lore-watch", "The Watch", "The harbour watch answers to the crown.", triggers=["watch"])
        .memory(NPC, "The watch captain owes me silk.")
        .memory(NPC, "Aria paid twice for the silk.")
        .memory("", "The narrator remembers the great flood.")
    )
    revision = await world.send(client, "save", opened.revision)
    for turn, line in enumerate(["Evening.", "Is the watch about?", "The silk, again?", "And the flood?"]):
        await _run(client, _dialogue("save", line))
        await _run(client, _narrate("save", f"A patron leaves, {turn}."))
        revision = await World().event(f"Rain on the roof, {turn}.", at=TAVERN).send(client, "save", revision)
    exported = await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="save"))
    await client.sessions.ImportSession(spb.ImportSessionRequest(session_id="loaded", blob=exported.blob))
    for make in (_dialogue, _narrate):
        a = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=make("save", "The watch and the silk?")))
        b = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=make("loaded", "The watch and the silk?")))
        assert a.messages == b.messages and list(a.left_out) == list(b.left_out)
        assert a.prompt_tokens == b.prompt_tokens and len(a.messages) > 2
    narrator = await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=_narrate("loaded", "The flood returns.")))
    assert any("The narrator remembers the great flood." in m.content for m in narrator.messages)
