"""A run is planned once (issue 14 item 3; docs/runs.md, "How a run is served"):
through the real servicer on a real socket, a Run chooses its profile once,
resolves it to a route once, makes its model ready once and makes up its ID
once, however many decision attempts it takes; PreviewPrompt plans the same way
(and, recording nothing, makes up no ID)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from sidecar.config import Config, ModelProfile, ScriptConfig
from sidecar.llm.gateway import ModelGateway
from sidecar.runs import plan as plan_module
from sidecar.v1 import agent_service_pb2 as apb


def _config() -> Config:
    fake = ModelProfile(model="scripted/plan", max_retries=0, script=ScriptConfig(chunk_delay_ms=0))
    return Config(profiles={"fake": fake}, default_profile="fake")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the planning steps wherever they are called from."""
    seen: Counter[str] = Counter()

    def spy(owner: Any, name: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            seen[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)

    spy(plan_module, "resolve_profile")  # which profile serves the run
    spy(plan_module, "new_run_id")  # the run's ID, when the game gave none
    spy(ModelGateway, "target")  # the profile's settings and route, ProfileNotFound
    spy(ModelGateway, "prepare_profile")  # the model made callable, its tokenizer ready
    return seen


async def _run(client: Any, request: apb.RunRequest) -> list[apb.RunEvent]:
    return [event async for event in client.run(request)]


async def test_a_run_is_planned_once(make_server: Any, calls: Counter[str]) -> None:
    running = await make_server(_config())
    await running.client.open_session("g1")
    events = await _run(running.client, apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="Rain.")))
    assert events[-1].HasField("finished")
    assert dict(calls) == {"resolve_profile": 1, "new_run_id": 1, "target": 1, "prepare_profile": 1}
    assert events[0].run_id and {e.run_id for e in events} == {events[0].run_id}


async def test_a_run_the_game_named_makes_up_no_id(make_server: Any, calls: Counter[str]) -> None:
    running = await make_server(_config())
    await running.client.open_session("g1")
    request = apb.RunRequest(session_id="g1", run_id="mine", narrate=apb.NarrateInput(text="Rain."))
    events = await _run(running.client, request)
    assert {e.run_id for e in events} == {"mine"}
    assert calls["new_run_id"] == 0 and calls["resolve_profile"] == 1


async def test_every_decision_attempt_reuses_the_plan(make_server: Any, calls: Counter[str]) -> None:
    running = await make_server(_config())
    await running.client.open_session("g1")
    decision = apb.DecisionInput(
        situation="A goblin blocks the way. #garbage",
        options=[apb.ActionOption(action_id="fight", label="Fight"), apb.ActionOption(action_id="flee", label="Flee")],
        max_attempts=3,
    )
    events: list[apb.RunEvent] = []
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for event in running.client.run(apb.RunRequest(session_id="g1", decision=decision)):
            events.append(event)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # INVALID_CHOICE after 3 attempts
    assert sum(e.HasField("rejected") for e in events) == 2
    assert dict(calls) == {"resolve_profile": 1, "new_run_id": 1, "target": 1, "prepare_profile": 1}


async def test_preview_prompt_uses_the_same_planner(make_server: Any, calls: Counter[str]) -> None:
    running = await make_server(_config())
    await running.client.open_session("g1")
    request = apb.PreviewPromptRequest(run=apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="Rain.")))
    reply = await running.client.agent.PreviewPrompt(request)
    assert reply.model == "scripted/plan" and reply.messages
    assert dict(calls) == {"resolve_profile": 1, "target": 1, "prepare_profile": 1}


async def test_an_unknown_profile_is_refused_by_the_planner_before_anything_runs(
    make_server: Any, calls: Counter[str]
) -> None:
    running = await make_server(_config())
    await running.client.open_session("g1")
    request = apb.RunRequest(session_id="g1", profile="nope", narrate=apb.NarrateInput(text="Rain."))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _run(running.client, request)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert calls["target"] == 1 and calls["prepare_profile"] == 0 and calls["new_run_id"] == 0
