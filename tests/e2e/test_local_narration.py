"""The main job end to end: the real sidecar process, launched like a game
launches it, with no config (so the embedded Gemma model serves), narrating
through its direct path (no litellm)."""

from __future__ import annotations

import io
import re

import pytest

from sidecar.client import SidecarProcess
from sidecar.demo import EVENTS, OPTIONS, run_demo, scene_ops
from sidecar.v1 import agent_service_pb2 as agent_pb

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(300)]


async def test_embedded_model_streams_narration_with_usage() -> None:
    async with await SidecarProcess.launch() as sidecar:
        client = sidecar.client
        opened = await client.open_session("e2e")
        applied = await client.apply_deltas("e2e", opened.revision, scene_ops())
        text, ids = EVENTS[0]
        request = agent_pb.RunRequest(session_id="e2e", narrate=agent_pb.NarrateInput(text=text, entity_ids=ids),
                                      min_revision=applied.revision,
                                      limits=agent_pb.GenerationLimits(max_output_tokens=48))
        events = [e async for e in client.run(request)]
        kinds = [e.WhichOneof("kind") for e in events]
        assert kinds[0] == "started" and kinds[-2:] == ["usage", "finished"]
        assert events[0].started.model == "local/gemma3-270m"
        texts = [e.text.text for e in events if e.HasField("text")]
        assert len(texts) >= 2, "narration should stream in more than one event"
        assert "".join(texts).strip()
        usage = events[-2].usage
        assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 48
        assert (await client.get_info()).llm_ready


async def test_demo_narrates_every_event_then_speaks_and_decides() -> None:
    out = io.StringIO()
    assert await run_demo(out=out) == 0
    shown = out.getvalue()
    for text, _ in EVENTS:
        assert f"> {text}" in shown
    assert shown.count("tokens/s]") == len(EVENTS) + 2  # the narrations, Bram's line, his decision
    chosen = shown.split("[chooses: ")[1].split("]")[0]
    action_id, _, given = chosen.partition(" ")
    assert action_id in {o.action_id for o in OPTIONS}
    # The game's own values come back: an entity as its engine ID, each within its schema.
    expected = {"bar_the_door": r"\(with=(a bench|the broom|a barrel)\)",
                "throw_mugs": r"\(at=BP_Goblin_C_2147483647, mugs=[123]\)"}.get(action_id, "")  # fmt: skip
    assert re.fullmatch(expected, given), chosen
    # Display names on screen, never an alias handle, an engine ID or the decision's JSON.
    assert "Mira" in shown and not re.search(r"\b(?:npc|player|loc)_\d|Player_0|NPC_Bram|\{", shown), shown


async def test_the_demo_says_a_provider_failure_in_one_line(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: the docs' example config with no key set printed a 40-line traceback."""
    monkeypatch.delenv("NO_SUCH_DEMO_KEY", raising=False)
    config = tmp_path / "sidecar.toml"
    config.write_text('[profiles.cloud]\nmodel = "openai/gpt-4o-mini"\napi_key_env = "NO_SUCH_DEMO_KEY"\n'
                      'api_base = "http://127.0.0.1:9/v1"\n')  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    assert await run_demo(config=str(config), out=out, err=err) == 1
    lines = [ln for ln in err.getvalue().splitlines() if ln.startswith("game-sidecar demo:")]
    assert len(lines) == 1 and "PERMISSION_DENIED / PROVIDER_AUTH" in lines[0] and "NO_SUCH_DEMO_KEY" in lines[0]
    assert "Traceback" not in err.getvalue() + out.getvalue()
