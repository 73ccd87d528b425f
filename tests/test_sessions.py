"""Closing a session leaves nothing behind: `sidecar.sessions.close_session`
cancels the session's runs, closes its store slot and empties the context
engine's caches for it (and only for it)."""

from __future__ import annotations

import pytest
from world import World

from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.context.contract import DialogueInput, RunSpec
from sidecar.runs import RunOptions
from sidecar.runs.prompt import prepare_prompt
from sidecar.server import build_app
from sidecar.sessions import close_session
from sidecar.v1 import agent_service_pb2 as apb


def scripted_config() -> Config:
    profile = ModelProfile(model="scripted/sessions", max_retries=0, script=ScriptConfig(chunk_delay_ms=0))
    return Config(profiles={"fake": profile}, default_profile="fake")


def narrate(text: str, session_id: str) -> apb.RunRequest:
    return apb.RunRequest(session_id=session_id, narrate=apb.NarrateInput(text=text))


def _scene(npc: str) -> list:
    return (
        World()
        .entity("loc-1", "location", "The Rusty Anchor")
        .entity(npc, "character", "Maerwyn", at="loc-1")
        .entity("player-1", "player", "Aria", at="loc-1")
        .memory(npc, f"{npc} owes Aria a favour.")
        .ops
    )


async def _prompt_as_a_run(app, spec: RunSpec) -> None:
    """The prompt step of a Run: planned, then built with preview=False."""
    plan = app.runs.planner.plan(spec, RunOptions())
    await prepare_prompt(plan, store=app.store, gateway=app.gateway, context=app.context, gate=app.gate,
                         min_revision_wait_s=0)


@pytest.mark.slow
async def test_ten_thousand_sessions_opened_prompted_and_closed_leave_the_caches_empty() -> None:
    app = build_app(scripted_config())
    await app.store.start()
    context = app.context
    survivor = "keep-me"
    await app.store.open(survivor)
    await app.store.apply(survivor, 0, "", _scene("npc-7"))
    spec = RunSpec(survivor, "npc-7", DialogueInput(text="Hello there.", speaker_id="player-1"))
    await _prompt_as_a_run(app, spec)
    held_by_survivor = context.cached_entries()
    assert held_by_survivor > 0

    for i in range(10_000):
        sid = f"s-{i}"
        await app.store.open(sid)
        await app.store.apply(sid, 0, "", _scene("npc-7"))
        # The path a Run takes (preview=False remembers the prompt's sticky state too).
        line = DialogueInput(text=f"Line {i}?", speaker_id="player-1")
        await _prompt_as_a_run(app, RunSpec(sid, "npc-7", line))
        if i == 0:
            assert context.cached_entries() > held_by_survivor
        assert await close_session(sid, app.store, app.runs, context) == 0

    assert context.builds >= 10_001
    assert context.cached_entries() == held_by_survivor
    await close_session(survivor, app.store, app.runs, context)
    assert context.cached_entries() == 0
    await app.runs.aclose()


async def test_close_session_over_the_wire_forgets_the_prompts_of_its_runs(make_server) -> None:
    running = await make_server(scripted_config())
    client, context = running.client, running.app.context
    for sid in ("g1", "g2"):
        await client.open_session(sid)
        events = [e async for e in client.run(narrate("A goblin bursts in.", session_id=sid))]
        assert events[-1].WhichOneof("kind") == "finished"
    await client.agent.PreviewPrompt(apb.PreviewPromptRequest(run=narrate("Rain falls.", session_id="g1")))
    both = context.cached_entries()

    await client.close_session("g1")
    one = context.cached_entries()
    assert 0 < one < both
    await client.close_session("g2")
    assert context.cached_entries() == 0
