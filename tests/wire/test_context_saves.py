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


async def test_a_session_built_as_a_game_builds_one_exports_and_imports_the_same(make_server) -> None:
    """Issue 31: replies that name entities (mentions in the transcript), a describe, a
    decision and a continue, then export and import under a new ID: the state, every
    transcript as the game reads it and the next prompts are the same, byte for byte."""
    replies = ["player_1 raises a mug to npc_1.", "npc_1 nods at player_1 and pours.",
               'Fine. {"action": 1, "message": "Here, player_1.", "notes": "player_1 is thirsty."}']  # fmt: skip
    profile = ModelProfile(model="scripted/wire", max_retries=0, script=ScriptConfig(replies=replies, chunk_delay_ms=0))
    client = (await make_server(Config(profiles={"fake": profile}, default_profile="fake"))).client
    opened = await client.open_session("game")
    world = (
        World()
        .entity(TAVERN, "location", "The Rusty Anchor", description="A smoky harbour tavern.")
        .entity(NPC, "character", "Maerwyn", at=TAVERN, description="A nomad merchant.")
        .entity(PLAYER, "player", "Aria", at=TAVERN, description="A young sellsword.")
        .entity("npc-far-2", "character", "Ólafur", at="", description="Somewhere else.")
    )
    await world.send(client, "game", opened.revision)
    options = [apb.ActionOption(action_id="pour", label="Pour a drink", target_id=PLAYER),
               apb.ActionOption(action_id="wait", label="Wait")]  # fmt: skip
    for request in (
        _narrate("game", "Aria sits at the bar."),
        _dialogue("game", "A drink, Maerwyn?"),
        apb.RunRequest(session_id="game", actor_id=NPC, describe=apb.DescribeInput(entity_id=PLAYER)),
        apb.RunRequest(session_id="game", actor_id=NPC,
                       decision=apb.DecisionInput(situation="Aria waits. #choose:1", options=options)),
        apb.RunRequest(session_id="game", actor_id=NPC, continue_story=apb.ContinueInput()),
    ):
        await _run(client, request)
    exported = await client.sessions.ExportSession(spb.ExportSessionRequest(session_id="game"))
    await client.sessions.ImportSession(spb.ImportSessionRequest(session_id="loaded", blob=exported.blob))
    a, b = [await client.sessions.GetState(spb.GetStateRequest(session_id=s)) for s in ("game", "loaded")]
    assert a.revision == b.revision and a.snapshot == b.snapshot and len(a.snapshot.entities) == 4
    for actor in ("", NPC):
        read = [await client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id=s, actor_id=actor,
                                                                            include_model_text=True))
                for s in ("game", "loaded")]  # fmt: skip
        assert read[0].entries == read[1].entries and len(read[0].entries) >= 2
        assert any(e.mentions for e in read[0].entries), "the replies named entities"
    def describe(s: str) -> apb.RunRequest:
        return apb.RunRequest(session_id=s, actor_id=NPC, describe=apb.DescribeInput(entity_id=PLAYER))

    for make in (lambda s: _dialogue(s, "Another?"), lambda s: _narrate(s, "Rain starts."), describe):
        one, two = [await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=make(s))) for s in ("game", "loaded")]
        assert one.messages == two.messages and list(one.left_out) == list(two.left_out)
