"""PreviewPrompt answers for the run it previews: the same profile choice
(run, then actor, then session, then default) and the same budget rule."""

from __future__ import annotations

from world import World

from sidecar.config import Config, ContextConfig, ModelProfile, RunsConfig, ScriptConfig
from sidecar.v1 import agent_service_pb2 as apb

WINDOW, RESERVE = 4096, 512


def _config() -> Config:
    script = ScriptConfig(chunk_delay_ms=1)
    profiles = {
        "plain": ModelProfile(model="scripted/plain", context_window=WINDOW, script=script),
        "hero": ModelProfile(model="scripted/hero", context_window=WINDOW, script=script),
    }
    return Config(profiles=profiles, default_profile="plain", runs=RunsConfig(actor_profiles={"npc-7": "hero"}),
                  context=ContextConfig(output_reserve_tokens=RESERVE))


async def test_preview_uses_the_actor_profile_and_the_run_budget_rule(make_server) -> None:
    running = await make_server(_config())
    client = running.client
    opened = await client.open_session("p1")
    await World().entity("npc-7", "character", "Hero").send(client, "p1", opened.revision)

    def preview(actor: str, budget: int = 0) -> apb.PreviewPromptRequest:
        run = apb.RunRequest(session_id="p1", actor_id=actor, narrate=apb.NarrateInput(text="Dawn breaks."),
                             budget_tokens=budget)
        return apb.PreviewPromptRequest(run=run)

    assert (await client.agent.PreviewPrompt(preview("npc-7"))).model == "scripted/hero"
    assert (await client.agent.PreviewPrompt(preview(""))).model == "scripted/plain"
    # A run may lower the budget, never raise it past what the model takes.
    assert (await client.agent.PreviewPrompt(preview("", 1000))).budget_tokens == 1000
    assert (await client.agent.PreviewPrompt(preview("", 100_000))).budget_tokens == WINDOW - RESERVE
    # And the run itself is served by the same profile.
    run = apb.RunRequest(session_id="p1", actor_id="npc-7", narrate=apb.NarrateInput(text="Dawn breaks."))
    events = [e async for e in client.run(run)]
    assert events[0].started.profile == "hero"
