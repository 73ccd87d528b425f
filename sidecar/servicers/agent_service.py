"""AgentService: Run (streamed events), CancelRun; PreviewPrompt and
ReadTranscript are served by `sidecar.servicers.agent_context`.

Thin: RunRequest -> RunSpec + RunOptions (the scheduler plans the run, its
ID included), domain events -> RunEvent with the run ID and seq 1, 2, 3...; errors are raised and mapped to a status by
`sidecar.servicers.calls.CallInterceptor`. The call ending early
(client cancel, deadline) cancels the run, which closes the model upstream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from sidecar import runtrace
from sidecar.app import App
from sidecar.errors import InvalidRequest, RunCancelled
from sidecar.llm.types import Limits
from sidecar.runs import RunOptions
from sidecar.runs import events as ev
from sidecar.servicers.convert_run import run_spec_from_proto
from sidecar.v1 import agent_service_pb2 as pb
from sidecar.v1 import agent_service_pb2_grpc

__all__ = ["AgentServicer", "run_options_from_proto", "event_to_proto"]

_FINISH = {"stop": pb.FINISH_REASON_STOP, "length": pb.FINISH_REASON_LENGTH}
#: Bounds that keep a typo from turning into an hour-long run.
_MAX_TIMEOUT_MS = 3_600_000


def run_options_from_proto(request: pb.RunRequest, time_remaining: float | None) -> RunOptions:
    lim = request.limits
    if lim.max_output_tokens < 0:
        raise InvalidRequest("limits.max_output_tokens must be 0 (default) or positive")
    if not 0 <= lim.first_token_timeout_ms <= _MAX_TIMEOUT_MS or not 0 <= lim.total_timeout_ms <= _MAX_TIMEOUT_MS:
        raise InvalidRequest(f"limits timeouts must be between 0 and {_MAX_TIMEOUT_MS} ms")
    if lim.HasField("temperature") and not 0.0 <= lim.temperature <= 2.0:
        raise InvalidRequest("limits.temperature must be between 0 and 2")
    if request.min_revision < 0:
        raise InvalidRequest("min_revision must be 0 (no wait) or positive")
    if len(lim.stop_sequences) > 8 or any(not s for s in lim.stop_sequences):
        raise InvalidRequest("limits.stop_sequences: at most 8, none empty")
    return RunOptions(
        profile=request.profile,
        limits=Limits(
            max_output_tokens=lim.max_output_tokens,
            temperature=lim.temperature if lim.HasField("temperature") else None,
            first_token_timeout_s=lim.first_token_timeout_ms / 1000,
            total_timeout_s=lim.total_timeout_ms / 1000,
            stop=tuple(lim.stop_sequences),
        ),
        urgent=request.urgent,
        min_revision=request.min_revision,
        deadline_s=time_remaining,
        seed=request.seed,
    )


def event_to_proto(run_id: str, seq: int, value: ev.RunEventValue) -> pb.RunResponse:
    # Filled in place: a message passed to a constructor or CopyFrom is copied, and this
    # runs once per streamed event (half the cost of building the parts and copying them).
    response = pb.RunResponse()
    event = response.event
    event.run_id = run_id
    event.seq = seq
    if isinstance(value, ev.Text):
        text = event.text
        text.text = value.text
        text.sentence_end = value.sentence_end
        text.attempt = value.attempt
        for m in value.mentions:
            # The wire counts UTF-8 bytes (proto/sidecar/v1/agent_service.proto, EntityMention).
            start = len(value.text[: m.start].encode())
            length = len(value.text[m.start : m.start + m.length].encode())
            text.mentions.add(entity_id=m.entity_id, start=start, length=length)
    elif isinstance(value, ev.Started):
        started = event.started
        started.session_id = value.session_id
        started.actor_id = value.actor_id
        started.profile = value.profile
        started.model = value.model
        started.revision = value.revision
        started.seed = value.seed
    elif isinstance(value, ev.AttemptRejected):
        event.rejected.attempt = value.attempt
        event.rejected.reason = value.reason
    elif isinstance(value, ev.ActionChosen):
        c, action = value.chosen, event.action
        action.action_id = c.action_id
        action.index = c.index
        action.message = c.message
        action.mentioned_ids.extend(c.mentioned_ids)
        action.parameters.update(c.parameters)
    elif isinstance(value, ev.NotesChanged):
        event.notes.notes = value.notes
    elif isinstance(value, ev.UsageReport):
        usage = event.usage
        usage.prompt_tokens = value.prompt_tokens
        usage.completion_tokens = value.completion_tokens
        usage.cached_tokens = value.cached_tokens
        usage.cost_usd = value.cost_usd
    elif isinstance(value, ev.Finished):
        t, finished = value.timings, event.finished
        finished.finish_reason = _FINISH.get(value.finish_reason, pb.FINISH_REASON_UNSPECIFIED)
        finished.timings.queued_ms = t.queued_ms
        finished.timings.prompt_build_ms = t.prompt_build_ms
        finished.timings.first_token_ms = t.first_token_ms
        finished.timings.total_ms = t.total_ms
        finished.attempts = value.attempts
        finished.transcript_unsaved = value.transcript_unsaved
    else:  # pragma: no cover - a new event type without a mapping is a bug
        raise TypeError(f"no wire form for {type(value).__name__}")
    return response


# The base is Any to mypy: grpc and the generated *_grpc.py ship no type stubs.
class AgentServicer(agent_service_pb2_grpc.AgentServiceServicer):  # type: ignore[misc]
    def __init__(self, app: App) -> None:
        self.app = app

    async def Run(self, request: pb.RunRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[pb.RunResponse]:
        runtrace.mark("servicer")
        if len(request.run_id) > 128:
            raise InvalidRequest("run_id is longer than 128 characters")
        spec = run_spec_from_proto(request, request.run_id)
        options = run_options_from_proto(request, context.time_remaining())
        handle = self.app.runs.submit(spec, options)
        run_id = handle.run_id
        runtrace.mark("submitted")
        tracing = runtrace.enabled()
        seq = 0
        try:
            async for value in handle.events():
                seq += 1
                response = event_to_proto(run_id, seq, value)
                if tracing and isinstance(value, ev.Text):
                    runtrace.mark("proto")
                    yield response
                    runtrace.mark("written")
                else:
                    yield response
        finally:
            # Client cancelled or the deadline passed: stop the model now.
            handle.cancel(RunCancelled(f"run {run_id!r}: the client went away"))
            runtrace.finish(run_id)

    async def CancelRun(self, request: pb.CancelRunRequest, context: grpc.aio.ServicerContext) -> pb.CancelRunResponse:
        if not request.run_id:
            raise InvalidRequest("run_id is empty")
        await self.app.runs.cancel(request.run_id)
        return pb.CancelRunResponse()

    async def PreviewPrompt(
        self, request: pb.PreviewPromptRequest, context: grpc.aio.ServicerContext
    ) -> pb.PreviewPromptResponse:
        from sidecar.servicers import agent_context

        return await agent_context.preview_prompt(self.app, request, context)

    async def ReadTranscript(
        self, request: pb.ReadTranscriptRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReadTranscriptResponse:
        from sidecar.servicers import agent_context

        return await agent_context.read_transcript(self.app, request, context)
