"""Issue 30, item 2, through the real pipeline on the real weights: a session is warm
before its first line, and again after each change, for its recent actors
(sidecar/runs/warm_up.py). A warm run evaluates only its input and what changed; the
same run on a sidecar with `warm_up = false` evaluates its whole prompt (what every first
line did before). Timings are the benchmark's (docs/benchmarks.md), not asserted here."""

from __future__ import annotations

import pytest
from fakes.runs_rig import RunsRig, build_rig, drain
from waits import eventually
from world import World

from sidecar.config import LocalModelConfig
from sidecar.context.contract import DialogueInput, NarrateInput
from sidecar.runs.events import UsageReport

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]


async def _settled(rig: RunsRig) -> None:
    """Until no warm-up is pending (each prefill takes about a second here)."""
    warm = rig.runs.warm_up
    await eventually(lambda: not (warm._tasks or warm._dirty), timeout=120, what="the warm-ups are over")


async def _usage(rig: RunsRig, **run: object) -> UsageReport:
    out = await drain(rig.submit(**run))  # type: ignore[arg-type]
    assert out.error is None, out.error
    return next(e for e in out.events if isinstance(e, UsageReport))


async def _scene(rig: RunsRig) -> None:
    await rig.app.store.open("s1")  # type: ignore[attr-defined]
    await (
        World()
        .entity("hall", "location", "The Long Hall", description="A smoky mead hall with a fire pit.")
        .entity("pc_1", "player", "Sigrun", at="hall", description="A shieldmaiden back from the raid.")
        .entity("npc_jarl", "character", "Jarl Orm", at="hall", description="An old jarl with a silver beard.")
        .apply_to(rig.app.store, "s1")
    )


@pytest.fixture(params=[True, False], ids=["warm", "cold"])
async def rig(request: pytest.FixtureRequest):
    rig = build_rig(model="local/gemma3-270m", context_window=4096, max_output_tokens=12,
                    local_model=LocalModelConfig(warm_up=request.param))
    await rig.app.gateway.loaded()
    assert rig.app.gateway.local.loaded
    yield rig
    await rig.runs.aclose()
    await rig.app.gateway.aclose()


async def test_the_first_line_and_the_next_after_a_change_start_warm(rig: RunsRig) -> None:
    warm = rig.runs.warm_up.enabled
    await _scene(rig)
    await _settled(rig)
    first = await _usage(rig, run_input=NarrateInput("Sigrun slams a captured banner on the table.", ()))
    if warm:
        assert rig.runs.warm_up.prompts >= 1 and rig.runs.warm_up.tokens > 200
        assert first.prompt_tokens - first.cached_tokens < 40, first  # its input and the reply cue
    else:
        assert rig.runs.warm_up.prompts == 0
        assert first.cached_tokens < first.prompt_tokens / 2, first  # the whole scene evaluated

    line = DialogueInput(text="What news from the south?", speaker_id="pc_1")
    await _usage(rig, actor_id="npc_jarl", run_input=line)
    store = rig.app.store
    news = ("A thrall drops a tray of horns, and the mead runs across the floor toward the fire pit "
            "while the hounds bark and the skalds stop their song to laugh at him.")
    event = World().event(news, at="hall").ops
    await store.apply("s1", store.get("s1").revision, "", event)  # type: ignore[attr-defined]
    await _settled(rig)
    again = await _usage(rig, actor_id="npc_jarl", run_input=DialogueInput(text="And the ships?", speaker_id="pc_1"))
    if warm:
        assert again.prompt_tokens - again.cached_tokens < 25, again  # its input and the reply cue
        assert rig.app.gateway.local.warm_ups >= 2
    else:
        assert again.prompt_tokens - again.cached_tokens > 40, again  # the news too
        assert rig.app.gateway.local.warm_ups == 0
