"""Planning a run, once, when it is submitted (and for PreviewPrompt, the same way).

A `RunPlan` holds every decision about a run that does not depend on the model
being loaded: its ID, the profile that serves it and its fallback chain (each
resolved to a route by `ModelGateway.target`), how many decision attempts it
gets, its deadline and the request's limits. Everything after admission reads
the plan; nothing resolves a profile or makes up a run ID again.

The token budget and tokenizer are the one part read later, once, when the
model is ready (sidecar/runs/prompt.py): on the litellm route they come from
litellm's model info, which may still be loading when the run is submitted.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from sidecar.config import Config
from sidecar.context.contract import DecisionInput, RunSpec
from sidecar.llm.types import Limits, ModelTarget
from sidecar.state.model import Session

if TYPE_CHECKING:
    from sidecar.llm.gateway import ModelGateway
    from sidecar.state.store import SessionStore

__all__ = ["RunOptions", "RunPlan", "RunPlanner", "fallback_chain", "resolve_profile", "new_run_id"]

#: What PreviewPrompt's prompt is built as when the request names no run ID (nothing is recorded).
PREVIEW_RUN_ID = "preview"


@dataclass(frozen=True)
class RunOptions:
    """How to run a spec (the request's non-prompt parts)."""

    #: Profile name; "" = the actor's, then the session's, then the config default.
    profile: str = ""
    limits: Limits = field(default_factory=Limits)
    urgent: bool = False
    min_revision: int = 0
    #: Seconds left on the client's deadline (None = no deadline).
    deadline_s: float | None = None
    #: The sampling seed (0 = draw one).
    seed: int = 0


@dataclass(frozen=True)
class RunPlan:
    """One run, decided. Built by `RunPlanner.plan`, read by everything after."""

    run_id: str
    #: The request, with `run_id` set.
    spec: RunSpec
    #: The profile serving the run, then its fallbacks depth-first, each once.
    chain: tuple[ModelTarget, ...]
    #: Decision attempts before INVALID_CHOICE (1 for other inputs).
    attempts: int
    #: Seconds the whole run may take (the profile's, the request's, the gRPC deadline: the smallest).
    deadline_s: float
    limits: Limits
    urgent: bool
    min_revision: int
    #: The sampling seed: the request's, else drawn here (RunStarted.seed reports it, so any
    #: run can be replayed: docs/runs.md).
    seed: int = 1

    @property
    def target(self) -> ModelTarget:
        """The profile the run asks for (its fallbacks serve only when it fails)."""
        return self.chain[0]


def resolve_profile(config: Config, session: Session, actor_id: str, requested: str = "") -> str:
    """The profile serving a run: the run's own, then the actor's, then the session's, then the default."""
    return (
        requested
        or config.runs.actor_profiles.get(actor_id, "")
        or session.options.profile
        or config.default_profile
    )


def draw_seed() -> int:
    """A seed for a run that names none: 1 to 2**31 - 1 (0 means "draw one" on the wire)."""
    return random.SystemRandom().randrange(1, 2**31)


def new_run_id() -> str:
    """A run ID for a request that names none."""
    return uuid.uuid4().hex


class RunPlanner:
    """Plans runs against the configuration, the sessions and the models."""

    def __init__(self, config: Config, store: SessionStore, gateway: ModelGateway) -> None:
        self._config = config
        self._store = store
        self._gateway = gateway

    def plan(self, spec: RunSpec, options: RunOptions, *, preview: bool = False) -> RunPlan:
        """Raises SessionNotFound, ProfileNotFound; changes nothing.

        `preview`: for PreviewPrompt, which records nothing and so makes up no ID."""
        session = self._store.get(spec.session_id)
        name = resolve_profile(self._config, session, spec.actor_id, options.profile)
        chain = fallback_chain(self._gateway, name)
        run_id = spec.run_id or (PREVIEW_RUN_ID if preview else new_run_id())
        if spec.run_id != run_id:
            spec = msgspec.structs.replace(spec, run_id=run_id)
        return RunPlan(
            run_id=run_id,
            spec=spec,
            chain=chain,
            attempts=self._attempts(spec),
            deadline_s=_deadline(chain[0], options),
            limits=options.limits,
            urgent=options.urgent,
            min_revision=options.min_revision,
            seed=options.seed or draw_seed(),
        )

    def _attempts(self, spec: RunSpec) -> int:
        inp = spec.input
        if not isinstance(inp, DecisionInput):
            return 1
        return max(1, inp.max_attempts or self._config.runs.decision_attempts)


def fallback_chain(gateway: ModelGateway, name: str) -> tuple[ModelTarget, ...]:
    """`name`, then its fallbacks depth-first, each once, each resolved once
    (ProfileNotFound; the config checked that fallbacks exist)."""
    chain: list[ModelTarget] = []
    todo = [name]
    while todo:
        current = todo.pop(0)
        if any(t.name == current for t in chain):
            continue
        target = gateway.target(current)
        chain.append(target)
        todo = list(target.profile.fallbacks) + todo
    return tuple(chain)


def _deadline(target: ModelTarget, options: RunOptions) -> float:
    candidates = [target.profile.total_timeout_s]
    if options.limits.total_timeout_s:
        candidates.append(options.limits.total_timeout_s)
    if options.deadline_s is not None:
        candidates.append(options.deadline_s)
    return max(0.001, min(candidates))
