"""The prompt of a planned run, as Run sends it and PreviewPrompt shows it.

Shared by both so they wait for the same revision and count with the same
tokenizer and budget (the model's; the context engine applies overrides under
it). The model is made ready here, once per run: its tokenizer and window are
what the budget is read from.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.context.prepared import Prepared
from sidecar.runs.plan import RunPlan
from sidecar.session_gate import SessionGate
from sidecar.state.model import Session

if TYPE_CHECKING:
    from sidecar.context.context_engine import ContextEngine
    from sidecar.llm.gateway import ModelGateway
    from sidecar.state.store import SessionStore

__all__ = ["RunPrompt", "prepare_prompt"]


@dataclass(frozen=True)
class RunPrompt:
    session: Session
    prepared: Prepared
    #: Milliseconds the context engine took (RunFinished.timings.prompt_build_ms).
    build_ms: float
    #: The session's revision the prompt was built at (the session may have moved on since).
    revision: int


async def prepare_prompt(
    plan: RunPlan,
    *,
    store: SessionStore,
    gateway: ModelGateway,
    context: ContextEngine,
    gate: SessionGate,
    min_revision_wait_s: float,
    preview: bool = False,
) -> RunPrompt:
    """Wait for `plan.min_revision`, make the plan's model ready, build the prompt.

    Raises RevisionTimeout, SessionNotFound, ModelNotInstalled, ModelUnavailable and
    the context engine's errors (UnknownEntity, ContextWindowExceeded...)."""
    spec, target = plan.spec, plan.target
    if plan.min_revision:
        await store.wait_for_revision(spec.session_id, plan.min_revision, min_revision_wait_s)
    await gateway.prepare_profile(target.name)
    count_tokens = gateway.token_counter(target.name)
    budget_tokens = gateway.budget_tokens(target.name)
    framing = gateway.framing_text(target.name)
    t0 = time.monotonic()

    async def build() -> RunPrompt:
        session = store.get(spec.session_id)  # once no writer is in: the session as it now is
        prepared = await asyncio.to_thread(
            context.prepare,
            session,
            spec,
            count_tokens=count_tokens,
            budget_tokens=budget_tokens,
            preview=preview,
            framing=framing,
        )
        # Still held by the gate here: no write came between the build and this.
        return RunPrompt(session, prepared, (time.monotonic() - t0) * 1000, session.revision)

    # In a worker thread: a prompt over a big world takes seconds of CPU (selection,
    # projection, counting, rendering), and on the loop it held every other call.
    # The gate keeps this session's writers out until the thread is done.
    return await gate.read(spec.session_id, build)
