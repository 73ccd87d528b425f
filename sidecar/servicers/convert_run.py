"""RunRequest (proto) -> RunSpec (domain), with request-level validation."""

from __future__ import annotations

from sidecar.context.action_params import parse_schema
from sidecar.context.contract import (
    ActionOption,
    ContinueInput,
    DecisionInput,
    DescribeInput,
    DialogueInput,
    NarrateInput,
    RunInput,
    RunSpec,
)
from sidecar.errors import InvalidRequest
from sidecar.state.model import Moment
from sidecar.v1 import agent_service_pb2 as pb

__all__ = ["run_spec_from_proto"]


def _input_from_proto(request: pb.RunRequest) -> RunInput:
    which = request.WhichOneof("input")
    if which == "narrate":
        if not request.narrate.text.strip():
            raise InvalidRequest("narrate.text is empty: say what happened")
        return NarrateInput(text=request.narrate.text, entity_ids=tuple(request.narrate.entity_ids))
    if which == "dialogue":
        if not request.dialogue.text.strip():
            raise InvalidRequest("dialogue.text is empty: give the player's line")
        if not request.actor_id:
            raise InvalidRequest("dialogue needs actor_id: the NPC the player speaks to")
        return DialogueInput(text=request.dialogue.text, speaker_id=request.dialogue.speaker_id)
    if which == "decision":
        d = request.decision
        if not d.options:
            raise InvalidRequest("decision.options is empty: give at least one valid action")
        ids = [o.action_id for o in d.options]
        if any(not i for i in ids):
            raise InvalidRequest("decision.options: every option needs an action_id")
        if len(set(ids)) != len(ids):
            raise InvalidRequest("decision.options: action_id values must be unique")
        if d.max_attempts < 0:
            raise InvalidRequest("decision.max_attempts must be 0 (default) or positive")
        options = tuple(
            ActionOption(o.action_id, o.label, o.target_id,
                         parse_schema(o.parameters_schema, f"decision.options[{i}].parameters_schema"))
            for i, o in enumerate(d.options)
        )  # fmt: skip
        return DecisionInput(situation=d.situation, options=options, max_attempts=d.max_attempts)
    if which == "describe":
        if not request.describe.entity_id:
            raise InvalidRequest("describe.entity_id is empty: name the entity to describe")
        return DescribeInput(entity_id=request.describe.entity_id, aspect=request.describe.aspect)
    if which == "continue_story":
        return ContinueInput()
    raise InvalidRequest("RunRequest has no input: set one of narrate, dialogue, decision, describe, continue_story")


def run_spec_from_proto(request: pb.RunRequest, run_id: str) -> RunSpec:
    if not request.session_id:
        raise InvalidRequest("session_id is empty")
    if request.budget_tokens < 0:
        raise InvalidRequest("budget_tokens must be 0 (default) or positive")
    moment = None
    if request.HasField("moment"):
        m = request.moment
        moment = Moment(timeline=m.timeline, tick=m.tick, calendar=m.calendar)
    return RunSpec(
        session_id=request.session_id,
        actor_id=request.actor_id,
        input=_input_from_proto(request),
        focus_ids=tuple(request.focus_ids),
        moment=moment,
        budget_tokens=request.budget_tokens,
        run_id=run_id,
    )
