"""Run scheduling: per-actor order, a global concurrency limit with a bounded
queue (urgent runs first), cancellation (CancelRun, client gone, session
closed, shutdown), and the run's life around the model call: revision wait,
prompt, recording, usage counters.

Each run is its own task feeding a queue of domain events that the agent
servicer drains; cancelling the task closes the model stream upstream.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from sidecar import runtrace
from sidecar.config import Config
from sidecar.context.contract import DecisionInput, PreparedRun, RunSpec
from sidecar.errors import (
    InvalidRequest,
    ProviderTimeout,
    QueueFull,
    RunCancelled,
    RunNotFound,
    ShuttingDown,
    SidecarError,
)
from sidecar.llm.events import Finished, RunEventValue, Started, Timings
from sidecar.llm.execute import Progress, execute
from sidecar.llm.types import Limits
from sidecar.state.model import ActorUsage, Session

if TYPE_CHECKING:
    from sidecar.app import App

__all__ = ["RunScheduler", "RunHandle", "RunOptions", "resolve_profile", "prepare_prompt"]

log = logging.getLogger("sidecar.runs")

_END = object()


@dataclass(frozen=True)
class RunOptions:
    """How to run a spec (the request's non-prompt parts)."""

    #: Profile name; "" = the session's, then the config default.
    profile: str = ""
    limits: Limits = field(default_factory=Limits)
    urgent: bool = False
    min_revision: int = 0
    #: Seconds left on the client's deadline (None = no deadline).
    deadline_s: float | None = None


@dataclass(eq=False)
class RunHandle:
    """One submitted run. Iterate `events()` to receive what it streams."""

    run_id: str
    spec: RunSpec
    profile: str
    options: RunOptions
    order: int
    arrived: float = field(default_factory=time.monotonic)
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    task: asyncio.Task | None = None
    slot: asyncio.Future | None = None
    running: bool = False
    done: bool = False
    cancel_error: SidecarError | None = None
    progress: Progress = field(default_factory=Progress)
    prepared: PreparedRun | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.spec.session_id, self.spec.actor_id)

    async def events(self) -> AsyncIterator[RunEventValue]:
        """The run's events in order; raises the run's SidecarError at the end."""
        while True:
            item = await self.queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def cancel(self, error: SidecarError) -> None:
        if not self.done and self.task is not None:
            self.cancel_error = self.cancel_error or error
            self.task.cancel()


def resolve_profile(config: Config, session: Session, actor_id: str, requested: str = "") -> str:
    """The profile serving a run: the run's own, then the actor's, then the session's, then the default."""
    return (
        requested
        or config.runs.actor_profiles.get(actor_id, "")
        or session.options.profile
        or config.default_profile
    )


async def prepare_prompt(
    app: App, spec: RunSpec, profile: str, min_revision: int = 0, *, preview: bool = False
) -> tuple[Session, PreparedRun, float]:
    """The prompt a run of `spec` on `profile` sends: (session, prepared, build ms).

    Shared by Run and PreviewPrompt so both wait for the same revision and use the
    same tokenizer and budget (the model's; the engine applies overrides under it).
    """
    if min_revision:
        await app.store.wait_for_revision(  # type: ignore[attr-defined]
            spec.session_id, min_revision, app.config.runs.min_revision_wait_s
        )
    gateway = app.gateway
    await gateway.prepare_profile(profile)  # type: ignore[attr-defined]
    session = app.store.get(spec.session_id)  # type: ignore[attr-defined]
    t0 = time.monotonic()
    prepared = app.context.prepare(  # type: ignore[attr-defined]
        session,
        spec,
        count_tokens=gateway.token_counter(profile),  # type: ignore[attr-defined]
        budget_tokens=gateway.budget_tokens(profile),  # type: ignore[attr-defined]
        preview=preview,
        framing=gateway.framing_text(profile),  # type: ignore[attr-defined]
    )
    return session, prepared, (time.monotonic() - t0) * 1000


class RunScheduler:
    """Admits, orders and runs runs. One per App."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.config = app.config.runs
        self._runs: dict[str, RunHandle] = {}
        #: Waiting runs per (session, actor), in arrival order.
        self._lines: dict[tuple[str, str], deque[RunHandle]] = {}
        self._queued = 0
        self._busy: set[tuple[str, str]] = set()
        self._running = 0
        self._order = 0
        self._closing = False
        #: High-water mark of concurrent runs (tests and benchmarks read it).
        self.max_running_seen = 0

    # -- admission ----------------------------------------------------------

    def submit(self, spec: RunSpec, options: RunOptions | None = None) -> RunHandle:
        """Admit a run or raise at once (nothing changes): ShuttingDown, SessionNotFound,
        ProfileNotFound, InvalidRequest (run_id in use), QueueFull."""
        options = options or RunOptions()
        if self._closing or self.app.shutting_down:
            raise ShuttingDown("the sidecar is shutting down")
        run_id = spec.run_id or uuid.uuid4().hex
        if run_id in self._runs:
            raise InvalidRequest(f"run_id {run_id!r} is already queued or running", metadata={"run_id": run_id})
        session = self.app.store.get(spec.session_id)  # type: ignore[attr-defined]
        profile = resolve_profile(self.app.config, session, spec.actor_id, options.profile)
        self.app.gateway.profile(profile)  # type: ignore[attr-defined]  # ProfileNotFound now, not later
        if self._queued >= self.config.max_queue:
            self._count_error(spec.session_id, QueueFull.reason)
            raise QueueFull(
                f"run queue is full ({self._queued} waiting, limit {self.config.max_queue})",
                metadata={"queue_length": str(self._queued), "max_queue": str(self.config.max_queue)},
            )
        if spec.run_id != run_id:
            spec = msgspec.structs.replace(spec, run_id=run_id)
        self._order += 1
        handle = RunHandle(run_id=run_id, spec=spec, profile=profile, options=options, order=self._order)
        self._runs[run_id] = handle
        self._lines.setdefault(handle.key, deque()).append(handle)
        self._queued += 1
        handle.slot = asyncio.get_running_loop().create_future()
        handle.task = asyncio.create_task(self._life(handle), name=f"run-{run_id}")
        handle.task.add_done_callback(functools.partial(self._cancelled_before_start, handle))
        self._dispatch()
        return handle

    def _dispatch(self) -> None:
        """Start waiting runs while slots are free: urgent first, then arrival.
        Only the head of an idle actor's line may start (per-actor order)."""
        while self._running < self.config.max_concurrent and self._queued:
            heads = [line[0] for key, line in self._lines.items() if line and key not in self._busy]
            if not heads:
                return
            chosen = min(heads, key=lambda h: (not h.options.urgent, h.order))
            self._lines[chosen.key].popleft()
            self._queued -= 1
            self._busy.add(chosen.key)
            self._running += 1
            self.max_running_seen = max(self.max_running_seen, self._running)
            chosen.running = True
            assert chosen.slot is not None
            if not chosen.slot.done():
                chosen.slot.set_result(None)

    def _release(self, handle: RunHandle) -> None:
        if handle.running:
            handle.running = False
            self._running -= 1
            self._busy.discard(handle.key)
        else:
            line = self._lines.get(handle.key)
            if line is not None and handle in line:
                line.remove(handle)
                self._queued -= 1
        line = self._lines.get(handle.key)
        if line is not None and not line and handle.key not in self._busy:
            del self._lines[handle.key]
        self._runs.pop(handle.run_id, None)
        self._dispatch()

    # -- cancellation -------------------------------------------------------

    async def cancel(self, run_id: str) -> None:
        handle = self._runs.get(run_id)
        if handle is None or handle.done:
            raise RunNotFound(f"no queued or running run {run_id!r}", metadata={"run_id": run_id})
        handle.cancel(RunCancelled(f"run {run_id!r} was cancelled by CancelRun"))

    async def cancel_session(self, session_id: str) -> int:
        handles = [h for h in self._runs.values() if h.spec.session_id == session_id and not h.done]
        for handle in handles:
            handle.cancel(RunCancelled(f"session {session_id!r} was closed"))
        return len(handles)

    async def aclose(self) -> None:
        self._closing = True
        handles = list(self._runs.values())
        for handle in handles:
            handle.cancel(ShuttingDown("the sidecar is shutting down"))
        tasks = [h.task for h in handles if h.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)

    # -- one run ------------------------------------------------------------

    def _cancelled_before_start(self, handle: RunHandle, _task: object = None) -> None:
        """A task cancelled before its first step never runs `_life` (not even its
        `finally`): end the run here so its caller and its slot are not left hanging."""
        if handle.done:
            return
        handle.done = True
        error = handle.cancel_error or RunCancelled(f"run {handle.run_id!r} was cancelled")
        self._count_error(handle.spec.session_id, error.reason)
        handle.queue.put_nowait(error)
        self._release(handle)

    def _deadline(self, handle: RunHandle) -> float:
        p = self.app.gateway.profile(handle.profile)  # type: ignore[attr-defined]
        limits = handle.options.limits
        candidates = [p.total_timeout_s]
        if limits.total_timeout_s:
            candidates.append(limits.total_timeout_s)
        if handle.options.deadline_s is not None:
            candidates.append(handle.options.deadline_s)
        return max(0.001, min(candidates))

    async def _life(self, handle: RunHandle) -> None:
        emit = handle.queue.put_nowait
        deadline = self._deadline(handle)
        try:
            try:
                async with asyncio.timeout(deadline):
                    await self._serve(handle, emit)
            except TimeoutError:
                raise ProviderTimeout(f"run {handle.run_id!r} did not finish within {deadline:g} s") from None
        except asyncio.CancelledError:
            cancelled = handle.cancel_error or RunCancelled(f"run {handle.run_id!r} was cancelled")
            self._ended_early(handle, cancelled)
            emit(cancelled)
        except SidecarError as failed:
            self._ended_early(handle, failed)
            emit(failed)
        except Exception as exc:  # noqa: BLE001 - a bug: INTERNAL, logged, never a hang
            log.exception("run failed", extra={"fields": {"run_id": handle.run_id}})
            bug = SidecarError(f"internal error in run: {type(exc).__name__}")
            self._ended_early(handle, bug)
            emit(bug)
        else:
            emit(_END)
        finally:
            handle.done = True
            self._release(handle)
            await self._persist(handle.spec.session_id)

    async def _serve(self, handle: RunHandle, emit: Any) -> None:
        app, spec, opts = self.app, handle.spec, handle.options
        assert handle.slot is not None
        await handle.slot
        runtrace.mark("slot")
        started = time.monotonic()
        gateway = app.gateway
        session, prepared, prompt_build_ms = await prepare_prompt(app, spec, handle.profile, opts.min_revision)
        handle.prepared = prepared
        runtrace.mark("prompt")
        model = gateway.profile(handle.profile).model  # type: ignore[attr-defined]
        emit(Started(spec.session_id, spec.actor_id, handle.profile, model, session.revision))
        attempts = 1
        if isinstance(spec.input, DecisionInput):
            attempts = spec.input.max_attempts or self.config.decision_attempts
        progress = handle.progress
        reply = await execute(
            gateway,  # type: ignore[arg-type]
            prepared,
            profile=handle.profile,
            limits=opts.limits,
            max_attempts=attempts,
            coalesce_s=self.config.coalesce_ms / 1000,
            emit=emit,
            progress=progress,
        )
        prepared.record(reply, interrupted=False, run_id=handle.run_id)
        self._count_usage(handle, ok=True)
        end = time.monotonic()
        first = (progress.first_text_at - started) * 1000 if progress.first_text_at else 0.0
        timings = Timings(
            queued_ms=(started - handle.arrived) * 1000,
            prompt_build_ms=prompt_build_ms,
            first_token_ms=first,
            total_ms=(end - handle.arrived) * 1000,
        )
        emit(Finished(progress.finish_reason, timings, progress.attempt))

    # -- bookkeeping --------------------------------------------------------

    def _ended_early(self, handle: RunHandle, error: SidecarError) -> None:
        """Record what was streamed as interrupted, and count the error."""
        text = handle.progress.text
        if handle.prepared is not None and text:
            try:
                handle.prepared.record(text, interrupted=True, run_id=handle.run_id)
            except Exception:  # noqa: BLE001 - the session may have closed meanwhile
                log.debug("could not record interrupted text", exc_info=True)
        if handle.progress.attempt:
            self._count_usage(handle, ok=False)
        self._count_error(handle.spec.session_id, error.reason)

    def _session(self, session_id: str) -> Any:
        try:
            return self.app.store.get(session_id)  # type: ignore[attr-defined]
        except SidecarError:
            return None

    def _count_usage(self, handle: RunHandle, *, ok: bool) -> None:
        session = self._session(handle.spec.session_id)
        if session is None:
            return
        usage = session.usage.setdefault(handle.spec.actor_id, ActorUsage())
        p = handle.progress
        usage.runs += 1
        usage.prompt_tokens += p.prompt_tokens
        usage.completion_tokens += p.completion_tokens
        usage.cached_tokens += p.cached_tokens
        usage.cost_usd += p.cost_usd

    def _count_error(self, session_id: str, reason: str) -> None:
        session = self._session(session_id)
        if session is not None:
            session.errors_by_reason[reason] = session.errors_by_reason.get(reason, 0) + 1

    async def _persist(self, session_id: str) -> None:
        persist = getattr(self.app.store, "persist_extras", None)
        if persist is None or self._session(session_id) is None:
            return
        try:
            await persist(session_id)
        except Exception:  # noqa: BLE001 - counters and transcripts are best effort here
            log.warning("persist_extras failed", exc_info=True, extra={"fields": {"session_id": session_id}})

    def stats(self) -> list[dict[str, Any]]:
        """Per session: runs, tokens, cost, errors by reason (GetInfo)."""
        out = []
        for session_id in self.app.store.session_ids():  # type: ignore[attr-defined]
            session = self._session(session_id)
            if session is None:
                continue
            usage = list(session.usage.values())
            out.append(
                {
                    "session_id": session_id,
                    "revision": session.revision,
                    "runs": sum(u.runs for u in usage),
                    "prompt_tokens": sum(u.prompt_tokens for u in usage),
                    "completion_tokens": sum(u.completion_tokens for u in usage),
                    "cached_tokens": sum(u.cached_tokens for u in usage),
                    "cost_usd": sum(u.cost_usd for u in usage),
                    "errors_by_reason": dict(session.errors_by_reason),
                    "queued": sum(1 for h in self._runs.values() if not h.running and h.spec.session_id == session_id),
                    "running": sum(1 for h in self._runs.values() if h.running and h.spec.session_id == session_id),
                }
            )
        return out
