"""Every domain event a run streams has its wire form (event_to_proto), field by field,
including events whose fields are all defaults (cleared notes, zero usage): the oneof
says what the event is either way."""

from __future__ import annotations

import pytest

from sidecar.context.contract import Chosen
from sidecar.projection.dealias import Mention
from sidecar.runs import events as ev
from sidecar.servicers.agent_service import event_to_proto
from sidecar.v1 import agent_service_pb2 as pb


def test_text_with_mentions_counts_utf8_bytes() -> None:
    value = ev.Text("Ça va, Grüb?", sentence_end=True, attempt=2, mentions=(Mention("BP_Goblin_C_7", 7, 4),))
    event = event_to_proto("r1", 5, value).event
    assert (event.run_id, event.seq, event.WhichOneof("kind")) == ("r1", 5, "text")
    assert (event.text.text, event.text.sentence_end, event.text.attempt) == ("Ça va, Grüb?", True, 2)
    [m] = event.text.mentions
    assert (m.entity_id, m.start, m.length) == ("BP_Goblin_C_7", 8, 5)  # "Ç" and "ü" are 2 bytes


def test_started_rejected_action_and_finished_carry_every_field() -> None:
    started = event_to_proto("r", 1, ev.Started("g1", "npc", "fast", "openai/ok", 12)).event.started
    assert (started.session_id, started.actor_id, started.profile, started.model, started.revision) == (
        "g1", "npc", "fast", "openai/ok", 12)
    rejected = event_to_proto("r", 2, ev.AttemptRejected(1, "no JSON")).event.rejected
    assert (rejected.attempt, rejected.reason) == (1, "no JSON")
    chosen = Chosen(action_id="flee", index=1, message="Run!", mentioned_ids=("a", "b"))
    action = event_to_proto("r", 3, ev.ActionChosen(chosen)).event.action
    assert (action.action_id, action.index, action.message, list(action.mentioned_ids)) == (
        "flee", 1, "Run!", ["a", "b"])
    timings = ev.Timings(queued_ms=1.5, prompt_build_ms=0.8, first_token_ms=3.0, total_ms=9.0)
    finished = event_to_proto("r", 4, ev.Finished("length", timings, 2)).event.finished
    assert (finished.finish_reason, finished.attempts) == (pb.FINISH_REASON_LENGTH, 2)
    t = finished.timings
    assert (t.queued_ms, t.prompt_build_ms, t.first_token_ms, t.total_ms) == (1.5, 0.8, 3.0, 9.0)


@pytest.mark.parametrize(
    ("value", "kind"),
    [(ev.NotesChanged(""), "notes"), (ev.UsageReport(0, 0, 0, 0.0), "usage")],
    ids=["cleared-notes", "zero-usage"],
)
def test_an_event_of_defaults_still_says_what_it_is(value: ev.RunEventValue, kind: str) -> None:
    response = event_to_proto("r", 1, value)
    assert response.event.WhichOneof("kind") == kind
    assert pb.RunResponse.FromString(response.SerializeToString()).event.WhichOneof("kind") == kind


def test_usage_values_reach_the_wire() -> None:
    usage = event_to_proto("r", 1, ev.UsageReport(42, 10, 32, 0.25)).event.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens, usage.cost_usd) == (42, 10, 32, 0.25)
