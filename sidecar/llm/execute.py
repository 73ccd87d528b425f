"""One run's model work: attempts (decisions may be rejected and retried with
the context engine's retry messages), coalesced text, the verdict, usage.

Scheduling, prompts and recording live in `sidecar.runs`; this module only
turns a PreparedRun into events, keeping enough progress for the caller to
record partial text when the run is cut short.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from sidecar import runtrace
from sidecar.context.contract import Accepted, PreparedRun
from sidecar.errors import InvalidChoice
from sidecar.llm.coalesce import Coalescer, TextChunk
from sidecar.llm.events import ActionChosen, AttemptRejected, NotesChanged, RunEventValue, Text, UsageReport
from sidecar.llm.gateway import ModelGateway
from sidecar.llm.types import Completion, Limits, TextPiece
from sidecar.projection.dealias import Dealiaser, Piece

__all__ = ["Progress", "execute"]


@dataclass
class Progress:
    """How far a run got; read by the scheduler when it ends early."""

    attempt: int = 0
    #: Text of the current attempt as received (sent, or about to be).
    parts: list[str] = field(default_factory=list)
    #: Monotonic time of the first text of the run (None: none yet).
    first_text_at: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    finish_reason: str = "stop"
    profile: str = ""
    model: str = ""

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, done: Completion) -> None:
        self.prompt_tokens += done.prompt_tokens
        self.completion_tokens += done.completion_tokens
        self.cached_tokens += done.cached_tokens
        self.cost_usd += done.cost_usd
        self.finish_reason = done.finish_reason
        self.profile, self.model = done.profile, done.model


class _Outbox:
    """One attempt's text on its way to the game: coalesced, then de-aliased.

    After the model boundary the game gets its own names, never an alias
    (docs/privacy.md). The coalescer cuts where its timing says; the de-aliaser
    holds back an alias the cut split, until the rest arrives."""

    def __init__(self, coalesce_s: float, dealias: Dealiaser, emit: Callable[[RunEventValue], None], attempt: int):
        self._dealias = dealias
        self._emit = emit
        self._attempt = attempt
        self.coalescer = Coalescer(coalesce_s, self._send)

    def _send(self, chunk: TextChunk) -> None:
        self._hand_out(self._dealias.feed(chunk.text, chunk.sentence_end))

    def _hand_out(self, piece: Piece | None) -> None:
        if piece is not None:
            runtrace.mark("emitted")
            self._emit(Text(piece.text, piece.sentence_end, self._attempt, piece.mentions))

    def flush(self) -> None:
        self.coalescer.flush()
        self._hand_out(self._dealias.flush())


async def execute(
    gateway: ModelGateway,
    prepared: PreparedRun,
    *,
    profile: str,
    limits: Limits,
    max_attempts: int,
    coalesce_s: float,
    emit: Callable[[RunEventValue], None],
    progress: Progress,
) -> str:
    """Run attempts until one is accepted; returns the accepted reply.

    Raises InvalidChoice after `max_attempts` rejections, or the mapped
    provider error. Emits Text, AttemptRejected, ActionChosen, NotesChanged
    and finally UsageReport.
    """
    messages = prepared.prompt.messages
    moment = prepared.guard_moment
    if limits.stop:
        # Stop sequences are game text bound for the model: projected like the prompt
        # (an engine ID in one becomes the alias the model would write).
        limits = msgspec.structs.replace(limits, stop=tuple(prepared.model_text(s) for s in limits.stop))
    for attempt in range(1, max(1, max_attempts) + 1):
        progress.attempt = attempt
        progress.parts = []

        outbox = _Outbox(coalesce_s, prepared.dealiaser(), emit, attempt)
        completion: Completion | None = None
        try:
            async for piece in gateway.stream(profile, messages, prepared.engine_ids, limits, moment=moment):
                if isinstance(piece, TextPiece):
                    if progress.first_text_at is None:
                        progress.first_text_at = time.monotonic()
                    progress.parts.append(piece.text)
                    outbox.coalescer.feed(piece.text)
                else:
                    completion = piece
        except Exception:
            outbox.flush()  # text received before a failure is valid: send it
            raise
        except BaseException:
            outbox.coalescer.discard()  # cancelled: nobody needs the held text
            raise
        outbox.flush()
        if completion is not None:
            progress.add(completion)
        reply = progress.text
        verdict = prepared.evaluate(reply, attempt)
        if isinstance(verdict, Accepted):
            # What the game shows names entities its way too (the session keeps the
            # notes as the model wrote them: they go back into later prompts).
            if verdict.action is not None or verdict.notes is not None:  # (decisions: built only then)
                names = prepared.dealiaser()
                if verdict.action is not None:
                    message = names.whole(verdict.action.message).text
                    emit(ActionChosen(msgspec.structs.replace(verdict.action, message=message)))
                if verdict.notes is not None:
                    emit(NotesChanged(names.whole(verdict.notes).text))
            emit(
                UsageReport(
                    progress.prompt_tokens, progress.completion_tokens, progress.cached_tokens, progress.cost_usd
                )
            )
            return reply
        if attempt >= max_attempts:
            raise InvalidChoice(
                f"no usable choice after {attempt} attempt(s): {verdict.reason}",
                metadata={"attempts": str(attempt), "last_reason": verdict.reason[:200]},
            )
        emit(AttemptRejected(attempt, verdict.reason))
        messages = verdict.retry_messages
    raise AssertionError("unreachable")
