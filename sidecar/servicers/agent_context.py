"""PreviewPrompt and ReadTranscript: thin adapters from proto to the context
engine (AgentServicer delegates both here). Nothing is sent to a model and
nothing is recorded."""

from __future__ import annotations

from typing import Any

import grpc

from sidecar.app import App
from sidecar.context.transcripts import Shown, read_page
from sidecar.errors import InvalidRequest
from sidecar.projection.dealias import Piece
from sidecar.runs import RunOptions
from sidecar.servicers.convert_run import run_spec_from_proto
from sidecar.v1 import agent_service_pb2 as pb

__all__ = ["preview_prompt", "read_transcript"]


async def preview_prompt(
    app: App, request: pb.PreviewPromptRequest, context: grpc.aio.ServicerContext
) -> pb.PreviewPromptResponse:
    run = request.run
    spec = run_spec_from_proto(run, run_id=run.run_id)
    options = RunOptions(profile=run.profile, min_revision=run.min_revision)
    plan, built = await app.runs.preview(spec, options)
    prompt = built.prepared.prompt
    return pb.PreviewPromptResponse(
        messages=[pb.PromptMessage(role=m["role"], content=m["content"]) for m in prompt.messages],
        sections=[
            pb.PromptSection(
                name=s.name,
                tokens=s.tokens,
                message_index=s.message_index,
                trimmed=s.trimmed,
                dropped=s.dropped,
                reason=s.reason,
                tier=s.tier,
            )
            for s in prompt.sections
        ],
        budget_tokens=prompt.budget_tokens,
        prompt_tokens=prompt.prompt_tokens,
        model=plan.target.profile.model,
        revision=built.revision,
        left_out=[
            pb.LeftOut(section=x.section, kind=x.kind, count=x.count, reason=x.reason) for x in prompt.left_out
        ],
    )


async def read_transcript(
    app: App, request: pb.ReadTranscriptRequest, context: grpc.aio.ServicerContext
) -> pb.ReadTranscriptResponse:
    if not request.session_id:
        raise InvalidRequest("session_id is empty")
    session = app.store.get(request.session_id)
    page = read_page(session, request.actor_id, request.page_size, request.cursor)
    debug = request.include_model_text
    shown = Shown(session, request.actor_id)
    reply = pb.ReadTranscriptResponse(next_cursor=page.next_cursor, total=page.total, first_index=page.first_index)
    for i, e in page.entries:
        piece = shown.entry(e)
        out = reply.entries.add(
            index=i,
            role=e.role,
            speaker_id=e.speaker_id,
            text=piece.text,
            interrupted=e.interrupted,
            run_id=e.run_id,
            unix_ms=e.unix_ms,
            model_text=e.text if debug else "",
        )
        _mentions(out.mentions, piece)
    summary = session.summaries.get(request.actor_id)
    if summary is not None and summary.text:
        piece = shown.text(summary.text)
        reply.summary = piece.text
        _mentions(reply.summary_mentions, piece)
        if debug:
            reply.summary_model_text = summary.text
    return reply


def _mentions(into: Any, piece: Piece) -> None:
    """Mentions with their spans in UTF-8 bytes, as the run stream sends them."""
    for m in piece.mentions:
        start = len(piece.text[: m.start].encode())
        length = len(piece.text[m.start : m.start + m.length].encode())
        into.add(entity_id=m.entity_id, start=start, length=length)
