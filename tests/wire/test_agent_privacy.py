"""Privacy over the wire, through a real server on a Unix socket, for what an
outside audit found (issue 13; docs/privacy.md is the contract): stop sequences
are projected, a decision reply naming a raw engine ID is retried, game IDs
shaped like aliases work, and the game reads its own names, never an alias."""

from __future__ import annotations

import pytest
from fakes.openai_server import FakeOpenAI
from test_agent_run import collect
from world import World

from sidecar.client import error_reason
from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.v1 import agent_service_pb2 as apb

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
        options=[apb.ActionOption(action_id="act.trade", label="Trade"),
                 apb.ActionOption(action_id="act.leave", label="Leave")],
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
    assert text == "Halt, Zoë! Grub blocks the door of The Rusty Anchor, and npc_99 laughs."
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
