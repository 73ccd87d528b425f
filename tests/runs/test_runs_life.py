"""A run's life around the model: events in order, usage and counters,
faults after text (text kept, recorded interrupted), timeouts, decisions
with rejected attempts, min_revision."""

from __future__ import annotations

import asyncio

import msgspec
from fakes.runs_rig import drain
from waits import eventually

from sidecar.config import RunsConfig, ScriptConfig
from sidecar.context.contract import ActionOption, DecisionInput
from sidecar.errors import InvalidChoice, ProviderRateLimited, ProviderTimeout, ProviderUnavailable, RevisionNotReached
from sidecar.llm.scripted import DEFAULT_REPLY, ScriptedLLM
from sidecar.llm.types import Limits
from sidecar.runs.events import ActionChosen, AttemptRejected, Finished, NotesChanged, Text, UsageReport
from sidecar.state.model import Event
from sidecar.state.ops import RecordEvent


async def test_narration_events_in_order_with_usage_and_timings(make_rig) -> None:
    rig = make_rig()
    await rig.session()
    out = await drain(rig.submit("A goblin bursts in."))
    assert out.error is None
    kinds = out.kinds()
    assert kinds[0] == "Started" and kinds[-2:] == ["UsageReport", "Finished"]
    assert set(kinds[1:-2]) == {"Text"} and len(kinds) > 4
    assert out.text == DEFAULT_REPLY
    ends = [e.text for e in out.events if isinstance(e, Text) and e.sentence_end]
    assert len(ends) == 3  # the reply has three sentences, each end marked
    usage = out.events[-2]
    assert isinstance(usage, UsageReport) and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.cost_usd == 0.0
    finished = out.events[-1]
    assert isinstance(finished, Finished) and finished.finish_reason == "stop" and finished.attempts == 1
    t = finished.timings
    assert t.total_ms >= t.first_token_ms > 0 and t.queued_ms >= 0 and t.prompt_build_ms > 0
    session = rig.app.store.get("s1")
    assert session.usage[""].runs == 1 and session.usage[""].completion_tokens == usage.completion_tokens
    assert session.transcripts[""][-1].text == DEFAULT_REPLY and not session.transcripts[""][-1].interrupted


async def test_the_model_request_leaves_before_started_is_handed_out(make_rig, monkeypatch) -> None:
    """`started` waits one loop turn so the model request is under way first (its gRPC
    write used to run ahead of the request); it is still every run's first event,
    also when the run fails before any text."""
    from sidecar.llm import gateway as gateway_module

    received: list[object] = []
    received_at_send: list[int] = []
    real = gateway_module.request_checker

    def recording_checker(*args, **kwargs):
        check = real(*args, **kwargs)

        def recorded(request):
            received_at_send.append(len(received))
            return check(request)

        return recorded

    async def consume(handle) -> Exception | None:
        try:
            async for event in handle.events():
                received.append(event)
        except Exception as exc:  # noqa: BLE001 - inspected below
            return exc
        return None

    monkeypatch.setattr(gateway_module, "request_checker", recording_checker)
    rig = make_rig()
    await rig.session()
    assert await consume(rig.submit("A goblin bursts in.")) is None
    assert type(received[0]).__name__ == "Started"
    assert received_at_send == [0]  # the game had nothing, not even `started`, when the request left
    received.clear()
    error = await consume(rig.submit("boom #fail:rate_limit"))
    assert isinstance(error, ProviderRateLimited) and [type(e).__name__ for e in received] == ["Started"]


async def test_output_limit_gives_finish_reason_length(make_rig) -> None:
    rig = make_rig()
    await rig.session()
    out = await drain(rig.submit("go", limits=Limits(max_output_tokens=3)))
    assert out.events[-1].finish_reason == "length"
    assert out.text == " ".join(DEFAULT_REPLY.split()[:3])  # (the screen owes a space only to more text)


async def test_failure_after_text_keeps_the_text_and_records_it_interrupted(make_rig) -> None:
    rig = make_rig()
    await rig.session()
    out = await drain(rig.submit("boom #fail-mid:unavailable"))
    assert isinstance(out.error, ProviderUnavailable)
    assert out.text and DEFAULT_REPLY.startswith(out.text)
    assert "Finished" not in out.kinds()
    session = rig.app.store.get("s1")
    last = session.transcripts[""][-1]
    assert last.interrupted and last.text == out.text
    assert session.errors_by_reason == {"PROVIDER_UNAVAILABLE": 1}


async def test_failure_before_text_records_nothing(make_rig) -> None:
    rig = make_rig()
    await rig.session()
    out = await drain(rig.submit("boom #fail:rate_limit"))
    assert isinstance(out.error, ProviderRateLimited) and out.text == ""
    assert rig.app.store.get("s1").transcripts.get("", []) == []


async def test_retry_before_the_first_token_succeeds(make_rig) -> None:
    rig = make_rig(max_retries=1, retry_backoff_s=0.01)
    await rig.session()
    out = await drain(rig.submit("again #flaky:unavailable"))
    assert out.error is None and out.text == DEFAULT_REPLY


async def test_first_token_timeout_and_total_deadline(make_rig) -> None:
    rig = make_rig(first_token_timeout_s=0.2, max_retries=0, script=ScriptConfig(chunk_delay_ms=5))
    await rig.session()
    stalled = await drain(rig.submit("wait #stall"))
    assert isinstance(stalled.error, ProviderTimeout) and "first token" in stalled.error.message
    cut = await drain(rig.submit("talk #stall-mid", deadline_s=0.5))
    assert isinstance(cut.error, ProviderTimeout) and cut.text
    assert rig.app.store.get("s1").transcripts[""][-1].interrupted


async def test_decision_chooses_and_updates_notes(make_rig) -> None:
    rig = make_rig()
    await rig.session(actors=2)
    options = (ActionOption("atk", "Attack", "actor-001"), ActionOption("flee", "Run away"))
    decision = DecisionInput(situation="A bandit blocks the road. #choose:2", options=options)
    out = await drain(rig.submit(actor_id="actor-000", run_input=decision))
    assert out.error is None, out.error
    chosen = [e for e in out.events if isinstance(e, ActionChosen)]
    assert len(chosen) == 1 and chosen[0].chosen.action_id == "flee" and chosen[0].chosen.index == 1
    notes = [e for e in out.events if isinstance(e, NotesChanged)]
    assert notes and notes[0].notes == "chose 2"
    assert out.kinds()[-2:] == ["UsageReport", "Finished"]
    # What streams is what the NPC says: not the reasoning before the JSON, not the JSON.
    assert out.text == "So be it." == chosen[0].chosen.message
    assert [e.sentence_end for e in out.events if isinstance(e, Text)][-1]


async def test_a_reply_cut_by_the_output_limit_ends_no_sentence_and_says_why_it_was_rejected(make_rig) -> None:
    rig = make_rig()
    await rig.session(actors=1)
    cut = await drain(rig.submit("A goblin bursts in.", limits=Limits(max_output_tokens=4)))
    assert cut.error is None and cut.events[-1].finish_reason == "length"
    texts = [e for e in cut.events if isinstance(e, Text)]
    assert texts and not texts[-1].sentence_end, texts  # the words stop mid-sentence
    options = (ActionOption("a", "Wait"), ActionOption("b", "Leave"))
    decision = DecisionInput(situation="Choose. #choose:2", options=options, max_attempts=2)
    out = await drain(rig.submit(actor_id="actor-000", run_input=decision, limits=Limits(max_output_tokens=4)))
    assert isinstance(out.error, InvalidChoice)
    rejected = [e for e in out.events if isinstance(e, AttemptRejected)]
    assert rejected and rejected[0].reason.endswith(
        "(the reply was cut at the output limit of 4 tokens before it ended; keep it shorter)"
    )


async def test_decision_without_a_usable_choice_retries_then_fails(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(decision_attempts=3))
    await rig.session(actors=1)
    options = (ActionOption("a", "Wait"), ActionOption("b", "Leave"))
    decision = DecisionInput(situation="Nothing happens. #garbage", options=options)
    out = await drain(rig.submit(actor_id="actor-000", run_input=decision))
    assert isinstance(out.error, InvalidChoice)
    rejected = [e for e in out.events if isinstance(e, AttemptRejected)]
    assert [r.attempt for r in rejected] == [1, 2]
    # A reply with no "message" shows nothing: its words were never meant for a player.
    assert not [e for e in out.events if isinstance(e, Text)]
    assert rig.app.store.get("s1").errors_by_reason == {"INVALID_CHOICE": 1}


async def test_min_revision_waits_for_the_delta(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(min_revision_wait_s=0.2))
    await rig.session()
    late = await drain(rig.submit("too early", min_revision=5))
    assert isinstance(late.error, RevisionNotReached)
    store = rig.app.store
    handle = rig.submit("after the event", min_revision=1)

    async def apply_once_the_run_waits():
        await eventually(lambda: store._slots["s1"].waiters, what="the run waits for revision 1")
        await store.apply("s1", 0, "d1", [RecordEvent(Event(text="The bridge collapses."))])

    out, _ = await asyncio.gather(drain(handle), apply_once_the_run_waits())
    assert out.error is None and out.events[0].revision == 1


async def test_profile_choice_run_then_actor_then_session_then_default(make_rig) -> None:
    from sidecar.config import ModelProfile

    rig = make_rig(runs=RunsConfig(actor_profiles={"actor-001": "alt"}))
    rig.app.config.profiles["alt"] = ModelProfile(model="scripted/alt", max_retries=0)
    rig.app.config.profiles["sess"] = ModelProfile(model="scripted/sess", max_retries=0)
    await rig.session(actors=2)

    async def served(**kw) -> str:
        out = await drain(rig.submit("hello", **kw))
        assert out.error is None, out.error
        return out.events[0].profile

    assert await served(actor_id="actor-000") == "fake"
    assert await served(actor_id="actor-001") == "alt"
    assert await served(actor_id="actor-001", profile="sess") == "sess"
    rig.app.store.get("s1").options.profile = "sess"
    assert await served(actor_id="actor-000") == "sess"
    assert await served(actor_id="actor-001") == "alt"


async def test_the_models_wait_for_a_first_turn_is_in_the_queued_timing(make_rig, monkeypatch) -> None:
    """The embedded model reports how long a request waited for its first turn (on the
    chunk with the usage); the run adds it to `timings.queued_ms`, each attempt's."""
    serve = ScriptedLLM.astreaming

    async def after_a_wait(self, model, messages, params):  # type: ignore[no-untyped-def]
        async for chunk in serve(self, model, messages, params):
            yield msgspec.structs.replace(chunk, queued_ms=250.0) if chunk.usage else chunk

    monkeypatch.setattr(ScriptedLLM, "astreaming", after_a_wait)
    rig = make_rig()
    await rig.session()
    out = await drain(rig.submit("A goblin bursts in."))
    finished = out.events[-1]
    assert isinstance(finished, Finished) and 250.0 <= finished.timings.queued_ms < 250.0 + finished.timings.total_ms
