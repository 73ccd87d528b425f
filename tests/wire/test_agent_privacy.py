"""Privacy over the wire, through a real server on a Unix socket, for what an
outside audit found (issue 13; docs/privacy.md is the contract): stop sequences
are projected, a decision reply naming a raw engine ID is retried, game IDs
shaped like aliases work, and the game reads its own names, never an alias."""

from __future__ import annotations

import grpc
import pytest
from fakes.openai_server import FakeOpenAI
from test_agent_run import collect
from world import HIDDEN, World

from sidecar.client import error_reason
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import session_service_pb2 as spb

TAVERN = "/Game/Maps/Tavern.Tavern_0001"
GOBLIN = "BP_Goblin_C_2147483647"
HERO = "9b2d5c1e-hero-0000-0000-000000000001"
LONG_ID = "BP_Merchant_C_2147483647_PersistentLevel_0001"


def tavern() -> World:
    """Aliases by order of arrival: loc_1, npc_1, player_1."""
    return (
        World()
        .entity(TAVERN, "location", "The Rusty Anchor")
        .entity(GOBLIN, "character", "Grub", at=TAVERN)
        .entity(HERO, "player", "Zoë", at=TAVERN)
    )


def scripted(*replies: str, chunk_chars: int = 0) -> Config:
    script = ScriptConfig(replies=list(replies), chunk_chars=chunk_chars, chunk_delay_ms=0)
    profile = ModelProfile(model="scripted/privacy", max_retries=0, script=script)
    return Config(profiles={"fake": profile}, default_profile="fake")


async def _session(running, world: World | None = None) -> None:
    opened = await running.client.open_session("g1")
    await (world or tavern()).send(running.client, "g1", opened.revision)


@pytest.mark.parametrize("transport", ["litellm", "sse"])
async def test_stop_sequences_reach_the_model_projected(make_server, monkeypatch, transport) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    async with FakeOpenAI(chunks=3) as upstream:
        profile = ModelProfile(
            model="openai/ok", api_base=upstream.base_url, api_key_env="FAKE_OPENAI_KEY", transport=transport
        )
        running = await make_server(Config(profiles={"http": profile}, default_profile="http"))
        await _session(running)
        request = apb.RunRequest(
            session_id="g1",
            narrate=apb.NarrateInput(text="The goblin speaks.", entity_ids=[GOBLIN]),
            limits=apb.GenerationLimits(stop_sequences=[f"{GOBLIN}:", "THE END"]),
        )
        events, err = await collect(running.client, request)
        assert err is None and events[-1].HasField("finished")
        (raw,) = upstream.seen.bodies
        assert GOBLIN.encode() not in raw
        assert upstream.seen.requests[0]["stop"] == ["npc_1:", "THE END"]


async def test_a_reply_naming_a_raw_engine_id_is_retried(make_server) -> None:
    bad = f'I choose {{"action": "{LONG_ID}", "message": "Greetings, {LONG_ID}."}}'
    good = 'Fine. {"action": 2, "message": "Farewell, npc_2.", "notes": "npc_2 still owes me."}'
    running = await make_server(scripted(bad, good))
    await _session(running, tavern().entity(LONG_ID, "character", "Merchant", at=TAVERN))
    decision = apb.DecisionInput(
        situation="A customer waits.",
        options=[
            apb.ActionOption(action_id="act.trade", label="Trade"),
            apb.ActionOption(action_id="act.leave", label="Leave"),
        ],
        max_attempts=2,
    )
    events, err = await collect(running.client, apb.RunRequest(session_id="g1", actor_id=GOBLIN, decision=decision))
    assert err is None, err and (err.code(), error_reason(err), err.details())
    (rejected,) = [e.rejected for e in events if e.HasField("rejected")]
    assert rejected.attempt == 1 and LONG_ID[:14] not in rejected.reason
    (action,) = [e.action for e in events if e.HasField("action")]
    assert action.action_id == "act.leave"
    assert action.message == "Farewell, Merchant." and list(action.mentioned_ids) == [LONG_ID]
    # The notes reach the game with its names too; the session keeps the model's words.
    (notes,) = [e.notes.notes for e in events if e.HasField("notes")]
    assert notes == "Merchant still owes me."
    assert running.app.store.get("g1").notes[GOBLIN] == "npc_2 still owes me."


async def test_engine_ids_shaped_like_aliases_can_run(make_server) -> None:
    running = await make_server(scripted("The room is quiet."))
    await _session(running, World().entity("loc_2", "location", "Cellar").entity("npc_1", at="loc_2", name="Odo"))
    for request in (
        apb.RunRequest(session_id="g1", actor_id="npc_1", dialogue=apb.DialogueInput(text="Hello?")),
        apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="Odo sneezes.", entity_ids=["npc_1"])),
    ):
        events, err = await collect(running.client, request)
        assert err is None, err and (error_reason(err), err.details())
        assert events[-1].HasField("finished")


async def test_the_game_reads_its_own_names_with_mentions(make_server) -> None:
    reply = "Halt, player_1! npc_1 blocks the door of loc_1, and npc_99 laughs."
    running = await make_server(scripted(reply, chunk_chars=3))  # splits every alias
    await _session(running)
    request = apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="The hero runs.", entity_ids=[HERO]))
    events, err = await collect(running.client, request)
    assert err is None
    deltas = [e.text for e in events if e.HasField("text")]
    text = "".join(d.text for d in deltas)
    # npc_99 was never issued (the model made it up): it reads as the generic word.
    assert text == "Halt, Zoë! Grub blocks the door of The Rusty Anchor, and someone laughs."
    named = []
    for delta in deltas:
        raw = delta.text.encode()
        for m in delta.mentions:  # spans in UTF-8 bytes of the delta's text
            named.append((m.entity_id, raw[m.start : m.start + m.length].decode()))
    assert named == [(HERO, "Zoë"), (GOBLIN, "Grub"), (TAVERN, "The Rusty Anchor")]
    # The transcript reads as the stream did (issue 23: no alias on a player's screen); what
    # the model said is there only behind the debug flag; the preview shows what the model sees.
    transcript = await running.client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g1"))
    last = transcript.entries[-1]
    assert last.text == text and not last.model_text
    raw = last.text.encode()
    spans = [(m.entity_id, raw[m.start : m.start + m.length].decode()) for m in last.mentions]
    assert spans == [(HERO, "Zoë"), (GOBLIN, "Grub"), (TAVERN, "The Rusty Anchor")]
    debug = apb.ReadTranscriptRequest(session_id="g1", include_model_text=True)
    assert (await running.client.agent.ReadTranscript(debug)).entries[-1].model_text == reply
    preview = await running.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=request))
    shown = "".join(m.content for m in preview.messages)
    assert "player_1 (Zoë)" in shown and GOBLIN not in shown


# -- issue 24: IDs inside aliases and the project's words; stop sequences; invisible IDs --


def party() -> World:
    """Party members pc_1 and pc_2 beside an NPC (alias npc_1, which holds "pc_1"), and a
    book whose ID is one of the prompt's own words."""
    return (
        World()
        .entity("tavern_main", "location", "Tavern")
        .entity("pc_1", "player", "Ada", at="tavern_main")
        .entity("pc_2", "player", "Bo", at="tavern_main")
        .entity("guard_7", "character", "Guard", at="tavern_main", description="Watches pc_1 and pc_2.")
        .entity("narrator", "item", "Book of Tales", at="tavern_main")
        .entity("Identity", "item", "Mask", at="tavern_main")
    )


async def test_a_party_beside_an_npc_can_run(make_server) -> None:
    """Refused with PRIVACY_LEAK_BLOCKED before: `pc_1` occurs inside the alias `npc_1`,
    `narrator` and `Identity` in the prompt's own words."""
    running = await make_server(scripted("npc_1 nods to player_1."))
    await _session(running, party())
    for request in (
        apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="pc_1 enters.", entity_ids=["guard_7", "pc_1"])),
        apb.RunRequest(session_id="g1", actor_id="guard_7", dialogue=apb.DialogueInput(text="Hi", speaker_id="pc_2")),
        apb.RunRequest(session_id="g1", actor_id="guard_7", dialogue=apb.DialogueInput(text="And you?")),
    ):
        events, err = await collect(running.client, request)
        assert err is None, err and (error_reason(err), err.details())
        assert events[-1].HasField("finished")
        assert "".join(e.text.text for e in events if e.HasField("text")) == "Guard nods to Ada."
    preview = await running.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=request))
    shown = "\n".join(m.content for m in preview.messages)
    assert "You are Guard." in shown and "npc_1 nods to player_1." in shown  # the transcript, as written
    narrate = apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="Rain.", entity_ids=["tavern_main"]))
    preview = await running.client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=narrate))
    shown = "\n".join(m.content for m in preview.messages)
    assert "You are still the narrator: concise" in shown


async def test_a_stop_sequence_naming_a_hidden_entity_is_not_sent(make_server, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    async with FakeOpenAI(chunks=3) as upstream:
        profile = ModelProfile(model="openai/ok", api_base=upstream.base_url, api_key_env="FAKE_OPENAI_KEY")
        running = await make_server(Config(profiles={"http": profile}, default_profile="http"))
        await _session(running, tavern().entity("BP_Spy_C_0000000099", "character", "Spy", at=TAVERN,
                                                visibility=HIDDEN))  # fmt: skip
        request = apb.RunRequest(
            session_id="g1",
            actor_id=GOBLIN,
            dialogue=apb.DialogueInput(text="Who is there?"),
            limits=apb.GenerationLimits(stop_sequences=["BP_Spy_C_0000000099:", f"{GOBLIN}:", "THE END"]),
        )
        events, err = await collect(running.client, request)
        assert err is None and events[-1].HasField("finished")
        # The spy's would have been "someone:", ending the reply at the first "someone:".
        assert upstream.seen.requests[0]["stop"] == ["npc_1:", "THE END"]


@pytest.mark.parametrize("bad", [" ", "\u200b", "\u00ad\u200d", "\ufeff \u2060"])
async def test_an_id_of_only_whitespace_or_invisible_characters_is_refused(make_server, bad: str) -> None:
    running = await make_server(scripted("-"))
    await _session(running)
    before = await running.client.sessions.GetState(spb.GetStateRequest(session_id="g1"))
    for world in (World().entity(bad, "item", "Ghost"), World().entity("cup_0001", "item", "Cup", at=bad)):
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await world.send(running.client, "g1", before.revision)
        assert (refused.value.code(), error_reason(refused.value)) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_DELTA",
        )
        assert "only whitespace or invisible characters" in refused.value.details()
    after = await running.client.sessions.GetState(spb.GetStateRequest(session_id="g1"))
    assert after == before
