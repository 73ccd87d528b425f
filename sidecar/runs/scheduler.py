"""Run scheduling: per-actor order, a global concurrency limit with a bounded
queue (urgent runs first), cancellation (CancelRun, client gone, session
closed, shutdown), and the run's life around the model work: the plan's
deadline, the prompt, recording, usage counters.

A run reads one way: `submit` plans it (sidecar/runs/plan.py) and queues it;
its task waits for a slot, builds the prompt (sidecar/runs/prompt.py, through
the context engine), runs the attempts (sidecar/runs/attempts.py, through the
model gateway), records the reply and emits `Finished`. Each run is its own
task feeding a queue of domain events (sidecar/runs/events.py) that the agent
servicer drains; cancelling the task closes the model stream upstream.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from sidecar import runtrace
from sidecar.config import Config
from sidecar.context.contract import RunSpec
from sidecar.errors import (
    InvalidRequest,
    ProviderTimeout,
    QueueFull,
    RunCancelled,
    RunNotFound,
    ShuttingDown,
    SidecarError,
)
from sidecar.runs.attempts import run_attempts
from sidecar.runs.compaction import Compactor
from sidecar.runs.counters import RunCounters
from sidecar.runs.events import Finished, Started, Timings
from sidecar.runs.handle import END, RunHandle
from sidecar.runs.plan import RunOptions, RunPlan, RunPlanner
from sidecar.runs.prompt import RunPrompt, prepare_prompt
from sidecar.runs.warm_up import WarmUp, any_local
from sidecar.session_gate import SessionGate

if TYPE_CHECKING:
    from sidecar.context.context_engine import ContextEngine
    from sidecar.llm.gateway import ModelGateway
    from sidecar.state.store import SessionStore

__all__ = ["RunScheduler"]

log = logging.getLogger("sidecar.runs")

class RunScheduler:
    """Admits, orders and runs runs. One per App."""

    def __init__(
        self,
        config: Config,
        store: SessionStore,
        gateway: ModelGateway,
        context: ContextEngine,
        *,
        draining: Callable[[], bool] = lambda: False,
        gate: SessionGate | None = None,
    ) -> None:
        """`draining`: whether the sidecar stopped taking new work (App.shutting_down);
        `gate`: the App's (prompts are built in threads; recording waits for them)."""
        self.gate = gate or SessionGate()
        self.config = config.runs
        self.store = store
        self.gateway = gateway
        self.context = context
        self.planner = RunPlanner(config, store, gateway)
        self.counters = RunCounters(store)
        #: Transcript compaction after runs, in the background (sidecar.runs.compaction).
        self.compactor = Compactor(config, store, gateway, self.counters)
        #: The embedded model prefills recent actors' next prompts while idle (sidecar.runs.warm_up).
        actor_profiles = config.runs.actor_profiles.values()
        self.warm_up = WarmUp(
            gateway,
            functools.partial(self.planner.plan, preview=True),
            functools.partial(self._prompt, preview=True),
            lambda: bool(self._running or self._queued),
            # Only where the default or an actor's profile is the embedded model: nothing else is warmed.
            enabled=config.local_model.warm_up and any_local(gateway, config.default_profile, *actor_profiles),
        )
        store.on_change.append(self.warm_up.touch)
        self._draining = draining
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
        """Plan and admit a run, or raise at once (nothing changes): ShuttingDown,
        InvalidRequest (run_id in use), SessionNotFound, ProfileNotFound, QueueFull."""
        if self._closing or self._draining():
            raise ShuttingDown("the sidecar is shutting down")
        if spec.run_id in self._runs:
            raise InvalidRequest(
                f"run_id {spec.run_id!r} is already queued or running", metadata={"run_id": spec.run_id}
            )
        plan = self.planner.plan(spec, options or RunOptions())
        if self._queued >= self.config.max_queue:
            self.counters.error(spec.session_id, QueueFull.reason)
            raise QueueFull(
                f"run queue is full ({self._queued} waiting, limit {self.config.max_queue})",
                metadata={"queue_length": str(self._queued), "max_queue": str(self.config.max_queue)},
            )
        self._order += 1
        self.warm_up.ran(spec, (options or RunOptions()).profile)
        handle = RunHandle(plan=plan, order=self._order)
        run_id = plan.run_id
        self._runs[run_id] = handle
        self._lines.setdefault(handle.key, deque()).append(handle)
        self._queued += 1
        handle.slot = asyncio.get_running_loop().create_future()
        handle.task = asyncio.create_task(self._life(handle), name=f"run-{run_id}")
        handle.task.add_done_callback(functools.partial(self._cancelled_before_start, handle))
        self._dispatch()
        return handle

    async def preview(self, spec: RunSpec, options: RunOptions) -> tuple[RunPlan, RunPrompt]:
        """The prompt a run of `spec` would send now, planned as a run is; nothing is
        queued, sent or recorded (PreviewPrompt)."""
        plan = self.planner.plan(spec, options, preview=True)
        return plan, await self._prompt(plan, preview=True)

    async def _prompt(self, plan: RunPlan, *, preview: bool = False) -> RunPrompt:
        return await prepare_prompt(
            plan,
            store=self.store,
            gateway=self.gateway,
            context=self.context,
            gate=self.gate,
            min_revision_wait_s=self.config.min_revision_wait_s,
            preview=preview,
        )

    def _dispatch(self) -> None:
        """Start waiting runs while slots are free: urgent first, then arrival.
        Only the head of an idle actor's line may start (per-actor order)."""
        while self._running < self.config.max_concurrent and self._queued:
            heads = [line[0] for key, line in self._lines.items() if line and key not in self._busy]
            if not heads:
                return
            chosen = min(heads, key=lambda h: (not h.plan.urgent, h.order))
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
        self.warm_up.forget(session_id)
        handles = [h for h in self._runs.values() if h.spec.session_id == session_id and not h.done]
        for handle in handles:
            handle.cancel(RunCancelled(f"session {session_id!r} was closed"))
        return len(handles)

    async def aclose(self) -> None:
        self._closing = True
        await self.warm_up.aclose()
        await self.compactor.aclose()
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
        self.counters.error(handle.spec.session_id, error.reason)
        handle.put(error)
        self._release(handle)

    async def _life(self, handle: RunHandle) -> None:
        emit = handle.put
        deadline = handle.plan.deadline_s
        session_id = handle.spec.session_id
        persisted = False
        try:
            try:
                async with asyncio.timeout(deadline):
                    finished = await self._serve(handle, emit)
            except TimeoutError:
                raise ProviderTimeout(f"run {handle.run_id!r} did not finish within {deadline:g} s") from None
        except asyncio.CancelledError:
            cancelled = handle.cancel_error or RunCancelled(f"run {handle.run_id!r} was cancelled")
            await self._ended_early(handle, cancelled)
            emit(cancelled)
        except SidecarError as failed:
            await self._ended_early(handle, failed)
            emit(failed)
        except Exception as exc:  # noqa: BLE001 - a bug: INTERNAL, logged, never a hang
            log.exception("run failed", extra={"fields": {"run_id": handle.run_id}})
            bug = SidecarError(f"internal error in run: {type(exc).__name__}")
            await self._ended_early(handle, bug)
            emit(bug)
        else:
            # The reply is recorded: too late to cancel. Journal it before RunFinished, which
            # tells the game whether that worked (outside the deadline: the model was in time).
            handle.done = True
            unsaved = True
            try:
                unsaved = await self.counters.persist(session_id)
                persisted = True
            finally:
                emit(msgspec.structs.replace(finished, transcript_unsaved=unsaved))
                emit(END)
        finally:
            handle.done = True
            self._release(handle)
            if not persisted:
                await self.counters.persist(session_id)
            self.compactor.after_run(session_id, handle.spec.actor_id)
            self.warm_up.touch(session_id)  # the reply is in the others' history now

    async def _serve(self, handle: RunHandle, emit: Callable[[Any], None]) -> Finished:
        """Run the model and record its reply; the run's Finished, for `_life` to send."""
        plan = handle.plan
        assert handle.slot is not None
        await handle.slot
        runtrace.mark("slot")
        started = time.monotonic()
        self.compactor.make_way(plan.target.name)
        prompt = await self._prompt(plan)
        runtrace.mark("prompt")
        prepared = handle.prepared = prompt.prepared
        spec, target = plan.spec, plan.target
        pending = [
            Started(spec.session_id, spec.actor_id, target.name, target.profile.model, prompt.revision, plan.seed)
        ]

        def flush_started() -> None:
            if pending:
                emit(pending.pop())

        def emit_after_started(event: Any) -> None:
            flush_started()
            emit(event)

        # `started` goes out on the next loop turn, so this one starts the model request
        # first: written now, the event's gRPC write ran ahead of the request and delayed
        # every first token (docs/benchmarks.md, time to the first token). Any other event,
        # and the end of this method, send it first: it is always a run's first event.
        asyncio.get_running_loop().call_soon(flush_started)
        progress = handle.progress
        try:
            reply = await run_attempts(
                plan,
                prepared,
                gateway=self.gateway,
                context=self.context,
                coalesce_s=self.config.coalesce_ms / 1000,
                emit=emit_after_started,
                progress=progress,
                room=handle.room,
                offload=lambda work: self.gate.read(spec.session_id, lambda: asyncio.to_thread(work)),
            )
        finally:
            flush_started()
        async with self.gate.write(spec.session_id):
            prepared.record(reply, interrupted=False, run_id=handle.run_id)
        self.counters.usage(spec.session_id, spec.actor_id, progress)
        end = time.monotonic()
        first = (progress.first_text_at - started) * 1000 if progress.first_text_at else 0.0
        timings = Timings(
            queued_ms=(started - handle.arrived) * 1000 + progress.queued_ms,  # a slot, then the model
            prompt_build_ms=prompt.build_ms,
            first_token_ms=first,
            total_ms=(end - handle.arrived) * 1000,
        )
        return Finished(progress.finish_reason, timings, progress.attempt)

    # -- bookkeeping --------------------------------------------------------

    async def _ended_early(self, handle: RunHandle, error: SidecarError) -> None:
        """Record what was streamed as interrupted, and count the error."""
        text = handle.progress.text
        if handle.prepared is not None and text:
            try:
                async with self.gate.write(handle.spec.session_id):
                    handle.prepared.record(text, interrupted=True, run_id=handle.run_id)
            except Exception:  # noqa: BLE001 - the session may have closed meanwhile
                log.debug("could not record interrupted text", exc_info=True)
        if handle.progress.attempt:
            self.counters.usage(handle.spec.session_id, handle.spec.actor_id, handle.progress)
        self.counters.error(handle.spec.session_id, error.reason)

    def stats(self) -> list[dict[str, Any]]:
        """Per session: runs, tokens, cost, errors by reason, queued and running (GetInfo)."""
        return self.counters.stats((h.spec.session_id, h.running) for h in self._runs.values())
