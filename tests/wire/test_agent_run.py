"""AgentService.Run and CancelRun through a real grpc.aio server on a Unix
socket, with the scripted fake model and, for upstream cancellation, the fake
OpenAI-compatible HTTP server on both transports (litellm, sse)."""

from __future__ import annotations

import grpc
import pytest
from fakes.openai_server import FakeOpenAI
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from waits import eventually
from world import World

from sidecar.client import SidecarClient, error_reason, is_retryable
from sidecar.config import Config, ModelProfile, RunsConfig, ScriptConfig
from sidecar.llm.scripted import DEFAULT_REPLY
from sidecar.v1 import agent_service_pb2 as apb


def scripted_config(runs: RunsConfig | None = None, **profile: object) -> Config:
    fields: dict = {"model": "scripted/wire", "max_retries": 0, "script": ScriptConfig(chunk_delay_ms=1)}
    fields.update(profile)
    return Config(profiles={"fake": ModelProfile(**fields)}, default_profile="fake", runs=runs or RunsConfig())


def narrate(text: str, session_id: str = "g1", **fields: object) -> apb.RunRequest:
    return apb.RunRequest(session_id=session_id, narrate=apb.NarrateInput(text=text), **fields)  # type: ignore[arg-type]


async def collect(
    client: SidecarClient, request: apb.RunRequest
) -> tuple[list[apb.RunEvent], grpc.aio.AioRpcError | None]:
    events: list[apb.RunEvent] = []
    try:
        async for event in client.run(request):
            events.append(event)
    except grpc.aio.AioRpcError as err:
        return events, err
    return events, None


def info_of(err: grpc.aio.AioRpcError) -> error_details_pb2.ErrorInfo:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info


@pytest.fixture
async def scripted(make_server):
    running = await make_server(scripted_config())
    await running.client.open_session("g1")
    return running


async def test_narration_streams_events_with_run_id_and_seq(scripted) -> None:
    events, err = await collect(scripted.client, narrate("A goblin bursts in.", run_id="r-1"))
    assert err is None
    kinds = [e.WhichOneof("kind") for e in events]
    assert kinds[0] == "started" and kinds[-2:] == ["usage", "finished"]
    assert kinds.count("text") >= 2
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert {e.run_id for e in events} == {"r-1"}
    assert "".join(e.text.text for e in events if e.HasField("text")) == DEFAULT_REPLY
    assert sum(e.text.sentence_end for e in events if e.HasField("text")) == 3
    started, finished = events[0].started, events[-1].finished
    assert (started.session_id, started.profile, started.model) == ("g1", "fake", "scripted/wire")
    assert finished.finish_reason == apb.FINISH_REASON_STOP and finished.attempts == 1
    assert finished.timings.total_ms >= finished.timings.first_token_ms > 0
    assert events[-2].usage.completion_tokens > 0


async def test_run_id_is_made_up_when_empty(scripted) -> None:
    events, err = await collect(scripted.client, narrate("Rain falls."))
    assert err is None and len(events[0].run_id) >= 16 and len({e.run_id for e in events}) == 1


@pytest.mark.parametrize(
    ("request_", "code", "reason"),
    [
        (narrate("x", session_id="nope"), grpc.StatusCode.NOT_FOUND, "SESSION_NOT_FOUND"),
        (narrate("x", profile="nope"), grpc.StatusCode.NOT_FOUND, "PROFILE_NOT_FOUND"),
        (narrate("   "), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
        (apb.RunRequest(session_id="g1"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
        (
            narrate("x", limits=apb.GenerationLimits(max_output_tokens=-1)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_REQUEST",
        ),
        (narrate("x", min_revision=-1), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REQUEST"),
        (narrate("x #fail:rate_limit"), grpc.StatusCode.RESOURCE_EXHAUSTED, "PROVIDER_RATE_LIMITED"),
        (narrate("x #fail:unavailable"), grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
        (narrate("x #fail:timeout"), grpc.StatusCode.DEADLINE_EXCEEDED, "PROVIDER_TIMEOUT"),
        (narrate("x #fail:auth"), grpc.StatusCode.PERMISSION_DENIED, "PROVIDER_AUTH"),
        (narrate("x #fail:content_filter"), grpc.StatusCode.FAILED_PRECONDITION, "CONTENT_FILTERED"),
        (narrate("x #fail:context_window"), grpc.StatusCode.INVALID_ARGUMENT, "CONTEXT_WINDOW_EXCEEDED"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_errors_have_the_documented_status(scripted, request_, code, reason) -> None:
    events, err = await collect(scripted.client, request_)
    assert err is not None and err.code() == code, err and err.details()
    assert error_reason(err) == reason and info_of(err).reason == reason
    assert not any(e.HasField("text") for e in events)


async def test_failure_mid_stream_keeps_the_text_sent(scripted) -> None:
    events, err = await collect(scripted.client, narrate("x #fail-mid:internal"))
    assert err is not None and err.code() == grpc.StatusCode.UNAVAILABLE
    text = "".join(e.text.text for e in events if e.HasField("text"))
    assert text and DEFAULT_REPLY.startswith(text)
    assert not any(e.HasField("finished") for e in events)


async def test_cancel_run_ends_the_stream_and_unknown_runs_are_not_found(scripted) -> None:
    client = scripted.client
    call = client.agent.Run(narrate("talk #stall-mid", run_id="r-cancel"))
    seen = []
    async for response in call:
        seen.append(response.event)
        if response.event.HasField("text"):
            break
    await client.agent.CancelRun(apb.CancelRunRequest(run_id="r-cancel"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for response in call:
            seen.append(response.event)
    assert caught.value.code() == grpc.StatusCode.CANCELLED
    assert error_reason(caught.value) == "RUN_CANCELLED"
    with pytest.raises(grpc.aio.AioRpcError) as again:
        await client.agent.CancelRun(apb.CancelRunRequest(run_id="r-cancel"))
    assert again.value.code() == grpc.StatusCode.NOT_FOUND and error_reason(again.value) == "RUN_NOT_FOUND"
    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await client.agent.CancelRun(apb.CancelRunRequest(run_id=""))
    assert empty.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_queue_full_over_the_wire(make_server) -> None:
    running = await make_server(scripted_config(runs=RunsConfig(max_concurrent=1, max_queue=1)))
    client = running.client
    await client.open_session("g1")
    world = World()
    for i in range(3):
        world.entity(f"npc-{i}", "character", f"N{i}")
    await world.send(client, "g1", 0)
    first = client.agent.Run(narrate("hold #stall", actor_id="npc-0"))
    await first.read()  # started: it holds the only slot
    second = client.agent.Run(narrate("wait", actor_id="npc-1"))
    await eventually(lambda: running.app.runs.stats()[0]["queued"] == 1, what="the second run is queued")
    events, err = await collect(client, narrate("no room", actor_id="npc-2"))
    assert err is not None and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert error_reason(err) == "QUEUE_FULL" and info_of(err).metadata["queue_length"] == "1"
    first.cancel()
    async for _ in second:
        pass
    info = await client.get_info(include_stats=True)
    stats = {s.session_id: s for s in info.stats}["g1"]
    assert stats.errors_by_reason["QUEUE_FULL"] == 1 and stats.runs >= 1


async def test_close_session_cancels_its_runs(scripted) -> None:
    call = scripted.client.agent.Run(narrate("x #stall"))
    await call.read()
    closed = await scripted.client.close_session("g1")
    assert closed.cancelled_runs == 1
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in call:
            pass
    assert caught.value.code() == grpc.StatusCode.CANCELLED


@pytest.mark.parametrize("transport", ["litellm", "sse"])
async def test_client_cancel_closes_the_upstream_http_stream(make_server, monkeypatch, transport) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    async with FakeOpenAI(interval_s=0.005) as upstream:
        profile = ModelProfile(
            model="openai/endless", api_base=upstream.base_url, api_key_env="FAKE_OPENAI_KEY", transport=transport
        )
        running = await make_server(Config(profiles={"http": profile}, default_profile="http"))
        await running.client.open_session("g1")
        call = running.client.agent.Run(narrate("go on"))
        texts = 0
        async for response in call:
            texts += response.event.HasField("text")
            if texts == 3:
                break
        call.cancel()
        await eventually(lambda: upstream.seen.disconnects, what="the upstream HTTP stream is closed")
        assert upstream.seen.active == 0


async def test_deadline_from_the_client_ends_the_run(scripted) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in scripted.client.run(narrate("x #stall-mid"), timeout=0.5):
            pass
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


async def test_decide_returns_the_games_action_and_errors_say_if_retryable(make_server) -> None:
    running = await make_server(scripted_config())
    client = running.client
    await client.open_session("g1")
    await World().entity("npc-0", "character", "Grub").send(client, "g1", 0)
    options = [apb.ActionOption(action_id="act_wait", label="Wait"), apb.ActionOption(action_id="act_hit", label="Hit")]
    chosen = await client.decide("g1", "npc-0", "A stranger walks in. #choose:2", options)
    assert (chosen.action_id, chosen.index) == ("act_hit", 1)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.decide("g1", "npc-0", "Nothing makes sense. #garbage", options)
    assert error_reason(caught.value) == "INVALID_CHOICE" and not is_retryable(caught.value)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.decide("g1", "npc-0", "The sky darkens. #fail:rate_limit", options)
    assert error_reason(caught.value) == "PROVIDER_RATE_LIMITED" and is_retryable(caught.value)
