"""What a provider's model writes reaches the player clean (issue 29, item 6), over the wire
through a real server, from a real HTTP server speaking OpenAI SSE on both transports: no
markup, role label or next turn in TextDelta, the transcript reads as the stream did, and a
reply that ended at a next turn is no cut one. The embedded model's side is its grammar
(tests/llm/test_llm_local_voice.py); the screen itself: tests/llm/test_llm_screen.py."""

from __future__ import annotations

import pytest
from fakes.openai_server import FakeOpenAI
from test_agent_run import collect
from world import World

from sidecar.config import Config, ModelProfile
from sidecar.v1 import agent_service_pb2 as apb

INN, BRAM, MIRA = "/Game/Inn.Inn_0001", "BP_Bram_C_7", "BP_Player_C_1"


async def _server(make_server, monkeypatch, upstream: FakeOpenAI, transport: str):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    profile = ModelProfile(
        model="openai/ok", api_base=upstream.base_url, api_key_env="FAKE_OPENAI_KEY", transport=transport
    )
    running = await make_server(Config(profiles={"http": profile}, default_profile="http"))
    opened = await running.client.open_session("g1")
    world = World().entity(INN, "location", "The Flagon").entity(BRAM, name="Bram", at=INN)
    await world.entity(MIRA, "player", "Mira", at=INN).send(running.client, "g1", opened.revision)
    return running


@pytest.mark.parametrize("transport", ["litellm", "sse"])
async def test_a_chat_models_markup_labels_and_next_turn_never_reach_the_screen(
    make_server, monkeypatch, transport
) -> None:
    reply = (
        "**Narrator:** The door *bursts* open and npc_1 looks up.\n\n"
        "Rain pours in. <end_of_turn>\nplayer_1: What now?\nNarrator: More."
    )
    async with FakeOpenAI(chunks=9, reply=reply) as upstream:
        running = await _server(make_server, monkeypatch, upstream, transport)
        request = apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="The door opens.", entity_ids=[BRAM]))
        events, err = await collect(running.client, request)
        assert err is None
        deltas = [e.text for e in events if e.HasField("text")]
        text = "".join(d.text for d in deltas)
        assert text == "The door bursts open and Bram looks up. Rain pours in."
        assert deltas[-1].sentence_end and events[-1].finished.finish_reason == apb.FINISH_REASON_STOP
        transcript = await running.client.agent.ReadTranscript(apb.ReadTranscriptRequest(session_id="g1"))
        assert transcript.entries[-1].text == text


@pytest.mark.parametrize("transport", ["litellm", "sse"])
async def test_a_spoken_lines_label_and_stage_directions_are_not_said(make_server, monkeypatch, transport) -> None:
    reply = 'Bram: *leans closer* "Keep your voice down, player_1." [whispers]\nplayer_1: Why?'
    async with FakeOpenAI(chunks=7, reply=reply) as upstream:
        running = await _server(make_server, monkeypatch, upstream, transport)
        line = apb.DialogueInput(speaker_id=MIRA, text="Where is the key?")
        events, err = await collect(running.client, apb.RunRequest(session_id="g1", actor_id=BRAM, dialogue=line))
        assert err is None
        assert "".join(e.text.text for e in events if e.HasField("text")) == '"Keep your voice down, Mira."'


async def test_a_decisions_spoken_line_is_screened_too(make_server, monkeypatch) -> None:
    reply = '{"action": 2, "message": "*sighs* **Fine.** Go, player_1.", "notes": "let her go"}'
    async with FakeOpenAI(chunks=5, reply=reply) as upstream:
        running = await _server(make_server, monkeypatch, upstream, "sse")
        options = [apb.ActionOption(action_id=f"act.{w.lower()}", label=w) for w in ("Stay", "Go")]
        decision = apb.DecisionInput(situation="Mira wants to leave.", options=options)
        events, err = await collect(running.client, apb.RunRequest(session_id="g1", actor_id=BRAM, decision=decision))
        assert err is None
        (action,) = [e.action for e in events if e.HasField("action")]
        assert action.action_id == "act.go" and action.message == "Fine. Go, Mira."
        assert "".join(e.text.text for e in events if e.HasField("text")) == "Fine. Go, Mira."
