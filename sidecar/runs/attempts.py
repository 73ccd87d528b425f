"""One run's model work: decision attempts (a rejected reply is retried with
the context's retry messages), and under each attempt the calls: retries with
backoff before the first token, then the plan's fallback chain. Text goes out
coalesced and de-aliased; the verdict and usage follow.

After the first token nothing is retried: text already reached the game, so a
failure ends the run with its status and the text stays valid. This module
keeps enough `Progress` for the scheduler to record partial text when the run
is cut short.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from sidecar import runtrace
from sidecar.context.contract import Accepted, DecisionInput, DialogueInput, Rejected, RunInput
from sidecar.context.prepared import Prepared
from sidecar.context.retry import retry_messages
from sidecar.errors import InvalidChoice, PrivacyLeakBlocked, ProviderTimeout, SidecarError
from sidecar.llm.coalesce import MAX_CHUNK_CHARS, Coalescer, TextChunk
from sidecar.llm.faults import is_retryable
from sidecar.llm.screen import ScreenText, screened
from sidecar.llm.types import Completion, ModelRequest, ModelTarget, ReplyShape, TextPiece
from sidecar.projection.dealias import Dealiaser, Mention, Piece
from sidecar.prompts.decisions import SpokenStream
from sidecar.runs import replay_log
from sidecar.runs.events import ActionChosen, AttemptRejected, NotesChanged, RunEventValue, Text, UsageReport
from sidecar.runs.plan import RunPlan

if TYPE_CHECKING:
    from sidecar.context.context_engine import ContextEngine
    from sidecar.llm.gateway import ModelGateway

__all__ = ["Progress", "run_attempts", "model_reply", "bounded_pieces"]

log = logging.getLogger("sidecar.runs")
#: Backoff never waits longer than this between two calls.
MAX_BACKOFF_S = 4.0


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
    #: Milliseconds its model calls waited for the model to begin (the embedded model's turns).
    queued_ms: float = 0.0
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
        self.queued_ms += done.queued_ms
        self.finish_reason = done.finish_reason
        self.profile, self.model = done.profile, done.model


class _Outbox:
    """One attempt's text on its way to the game: screened, coalesced, then de-aliased.

    What any model writes around its answer (markup, labels, a next turn) is screened
    out (sidecar/llm/screen.py). After the model boundary the game gets its own names,
    never an alias (docs/privacy.md). The coalescer cuts where its timing says; the
    de-aliaser holds back an alias the cut split, until the rest arrives."""

    def __init__(
        self, coalesce_s: float, dealias: Dealiaser, emit: Callable[[RunEventValue], None], attempt: int, spoken: bool
    ) -> None:
        self._dealias = dealias
        self._emit = emit
        self._attempt = attempt
        self._screen = ScreenText(spoken)
        self.coalescer = Coalescer(coalesce_s, self._send)

    def feed(self, text: str) -> str:
        """Model text in; returns what of it the screen lets through (sent on, coalesced)."""
        shown = self._screen.feed(text)
        self.coalescer.feed(shown)
        return shown

    def _send(self, chunk: TextChunk) -> None:
        self._hand_out(self._dealias.feed(chunk.text, chunk.sentence_end))

    def _hand_out(self, piece: Piece | None) -> None:
        if piece is None:
            return
        runtrace.mark("emitted")
        for part in bounded_pieces(piece, MAX_CHUNK_CHARS):
            self._emit(Text(part.text, part.sentence_end, self._attempt, part.mentions))

    def flush(self, cut: bool = False) -> str:
        """The reply ended; `cut`: by the output limit, so its last words end no sentence
        (unless the screen ended the reply before the cut, at a next turn). Returns what
        the screen still held and let through."""
        tail = self._screen.flush()
        self.coalescer.feed(tail)
        self.coalescer.flush(cut and not self._screen.ended)
        self._hand_out(self._dealias.flush())
        return tail


def bounded_pieces(piece: Piece, max_chars: int) -> list[Piece]:
    """`piece` as pieces of at most `max_chars` characters, never cut inside a mention
    (a name longer than that is a piece of its own); the sentence end on the last.
    De-aliasing lengthens text (an alias becomes a name of up to max_string_length),
    so the coalescer's bound is applied again to what the game receives."""
    text = piece.text
    if len(text) <= max_chars:
        return [piece]
    out: list[Piece] = []
    mentions = list(piece.mentions)
    start = 0
    while start < len(text):
        cut = min(start + max_chars, len(text))
        for m in mentions:
            if m.start < cut < m.start + m.length:
                cut = m.start if m.start > start else m.start + m.length
                break
        inside = tuple(
            Mention(m.entity_id, m.start - start, m.length) for m in mentions if start <= m.start < cut
        )
        out.append(Piece(text[start:cut], piece.sentence_end and cut == len(text), inside))
        start = cut
    return out


def reply_shape(inp: RunInput, prepared: Prepared | None = None) -> ReplyShape:
    """What the reply to `inp` must look like (a grammar holds the embedded model to it)."""
    if isinstance(inp, DecisionInput):
        params = prepared.parameter_schemas() if prepared is not None else ()
        return ReplyShape("decision", len(inp.options), params)
    if isinstance(inp, DialogueInput):
        return ReplyShape("line")
    return ReplyShape("prose")


async def run_attempts(
    plan: RunPlan,
    prepared: Prepared,
    *,
    gateway: ModelGateway,
    context: ContextEngine,
    coalesce_s: float,
    emit: Callable[[RunEventValue], None],
    progress: Progress,
    room: Callable[[], Awaitable[None]] | None = None,
    offload: Callable[[Callable[[], list[dict[str, str]]]], Awaitable[list[dict[str, str]]]] | None = None,
) -> str:
    """Run attempts until one is accepted; returns the accepted reply.

    `room` is awaited after each piece of reply: it returns once the game has read
    enough of what was emitted (backpressure: while it waits, nothing more is read
    from the model, so a slow reader holds a bounded amount of text).

    `offload(work)` runs a decision's retry prompt (which may rebuild the prompt
    smaller: seconds over a big world) off the event loop, as the first prompt was
    built (the scheduler passes a worker thread inside the session's gate); None
    runs it here.

    Raises InvalidChoice after `plan.attempts` rejections, or the mapped
    provider error. Emits Text, AttemptRejected, ActionChosen, NotesChanged
    and finally UsageReport. The plan's first profile must be prepared.
    """
    limits = plan.limits
    if limits.stop:
        # Stop sequences are game text bound for the model: projected like the prompt
        # (an engine ID in one becomes the alias the model would write; one naming what
        # the actor cannot perceive is dropped: docs/privacy.md, The leak guard).
        limits = msgspec.structs.replace(limits, stop=prepared.stop_sequences(limits.stop))
    request = ModelRequest(
        plan.target,
        prepared.prompt.messages,
        limits,
        prepared.engine_ids,
        prepared.guard_moment,
        prepared.aliases,
        reply_shape(plan.spec.input, prepared),
        plan.seed,
    )
    for attempt in range(1, plan.attempts + 1):
        progress.attempt = attempt
        progress.parts = []

        kind = request.shape.kind if request.shape is not None else "prose"
        outbox = _Outbox(coalesce_s, prepared.dealiaser(), emit, attempt, spoken=kind != "prose")
        # A decision's text on screen is what the NPC says, never its JSON (every model).
        spoken = SpokenStream() if kind == "decision" else None
        completion: Completion | None = None
        try:
            async for piece in model_reply(gateway, plan.chain, request):
                if isinstance(piece, TextPiece):
                    if progress.first_text_at is None:
                        progress.first_text_at = time.monotonic()
                    shown = outbox.feed(piece.text if spoken is None else spoken.feed(piece.text))
                    # The history keeps what the game saw (a decision: its JSON, which is parsed).
                    progress.parts.append(piece.text if spoken is not None else shown)
                    if room is not None:
                        await room()
                else:
                    completion = piece
        except Exception:
            outbox.flush()  # text received before a failure is valid: send it
            raise
        except BaseException:
            outbox.coalescer.discard()  # cancelled: nobody needs the held text
            raise
        tail = outbox.flush(cut=completion is not None and completion.finish_reason == "length")
        if spoken is None:
            progress.parts.append(tail)
        if completion is not None:
            progress.add(completion)
        reply = progress.text
        if replay_log.enabled():
            model = completion.model if completion is not None else ""
            revision = prepared.session.revision
            replay_log.record(
                request, run_id=plan.run_id, session_id=plan.spec.session_id, revision=revision,
                attempt=attempt, model=model, text=reply,
            )  # fmt: skip
        verdict = prepared.evaluate(reply, attempt)
        if isinstance(verdict, Rejected) and progress.finish_reason == "length":
            # The format was not the model's fault alone: say what cut it (our words).
            limit = f" of {limits.max_output_tokens} tokens" if limits.max_output_tokens else ""
            cut = f"the reply was cut at the output limit{limit} before it ended; keep it shorter"
            verdict = Rejected(f"{verdict.reason} ({cut})", verdict.reply)
        if isinstance(verdict, Accepted):
            # What the game shows names entities its way too (the session keeps the
            # notes as the model wrote them: they go back into later prompts).
            if verdict.action is not None or verdict.notes is not None:  # (decisions: built only then)
                names = prepared.dealiaser()
                if verdict.action is not None:
                    message = names.whole(screened(verdict.action.message, spoken=True)).text
                    emit(ActionChosen(msgspec.structs.replace(verdict.action, message=message)))
                if verdict.notes is not None:
                    emit(NotesChanged(names.whole(verdict.notes).text))
            emit(
                UsageReport(
                    progress.prompt_tokens, progress.completion_tokens, progress.cached_tokens, progress.cost_usd
                )
            )
            return reply
        if attempt >= plan.attempts:
            raise InvalidChoice(
                f"no usable choice after {attempt} attempt(s): {verdict.reason}",
                metadata={"attempts": str(attempt), "last_reason": verdict.reason[:200]},
            )
        # Only when another attempt follows: the last rejection ends as INVALID_CHOICE.
        next_messages = functools.partial(retry_messages, context, prepared, verdict)
        messages = await offload(next_messages) if offload is not None else next_messages()
        emit(AttemptRejected(attempt, verdict.reason))
        # A new seed per attempt: the same one would draw the rejected reply's tokens again.
        request = msgspec.structs.replace(request, messages=messages, seed=(plan.seed + attempt) % 2**31 or 1)
    raise AssertionError("unreachable")


async def model_reply(
    gateway: ModelGateway, chain: tuple[ModelTarget, ...], request: ModelRequest
) -> AsyncIterator[TextPiece | Completion]:
    """One reply to `request`: on `chain[0]` (already prepared), retried with backoff
    before the first token while the fault is transient, then on each fallback in
    turn. Closing the iterator closes the upstream at once."""
    failed: list[tuple[str, SidecarError]] = []  # each profile's last failure, in order
    for index, target in enumerate(chain):
        if index:
            await gateway.prepare_profile(target.name)
            request = msgspec.structs.replace(request, target=target)
        profile = target.profile
        began, tries, error = time.monotonic(), 0, None
        for retry in range(profile.max_retries + 1):
            tries = retry + 1
            if retry:
                backoff = min(MAX_BACKOFF_S, profile.retry_backoff_s * 2 ** (retry - 1))
                await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            try:
                call = await gateway.open(request)
            except PrivacyLeakBlocked:
                raise  # a bug, not a provider fault: no retry, no fallback
            except SidecarError as exc:
                error = exc
                log.info(
                    "model call failed before the first token",
                    extra={"fields": {"profile": target.name, "attempt": retry + 1, "reason": exc.reason}},
                )
                if not is_retryable(exc):
                    break
                continue
            try:
                async for piece in call:
                    yield piece
                return
            finally:
                await call.aclose()
        assert error is not None  # every try either returned or failed
        if isinstance(error, ProviderTimeout) and tries > 1:
            # "within 30 s" was all a game waiting 91 s was told: say the whole wait and its settings.
            settings = f"profile {target.name!r}'s first_token_timeout_s and max_retries set the wait"
            spent = time.monotonic() - began
            error = _restated(error, f"{error.message} ({tries} attempts, {spent:.0f} s in all: {settings})")
        failed.append((target.name, error))
    if len(failed) == 1:
        raise failed[0][1]
    # The first profile's failure leads, saying what each fallback's was too: the cause a
    # developer must fix (missing credentials) is not hidden behind the last fallback's.
    (first_name, first), rest = failed[0], failed[1:]
    also = "; ".join(f"fallback {name!r} failed too: {err.reason}: {err.message}" for name, err in rest)
    raise _restated(
        first, f"profile {first_name!r}: {first.message} ({also})", fallback_reasons=",".join(e.reason for _, e in rest)
    )


def _restated(err: SidecarError, message: str, **metadata: str) -> SidecarError:
    """`err` (its class and status, whatever its constructor takes) with a fuller message."""
    out = copy.copy(err)
    out.message, out.args, out.metadata = message, (message,), {**err.metadata, **metadata}
    return out
