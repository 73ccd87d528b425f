"""Runs: one input in, a stream of run events out (docs/runs.md).

Read in this order: `plan` (a run decided once: ID, profile chain, attempts,
deadline), `scheduler` (queue, per-actor order, concurrency, cancellation, a
run's life), `prompt` (the prompt, through sidecar.context), `attempts`
(decision attempts, retries and fallbacks, through sidecar.llm), `events`
(what a run streams), `counters` (per-session usage). sidecar.llm knows
nothing of runs: it takes a request and yields pieces.
"""

from sidecar.runs.handle import RunHandle
from sidecar.runs.plan import RunOptions, RunPlan, RunPlanner, resolve_profile
from sidecar.runs.scheduler import RunScheduler

__all__ = ["RunScheduler", "RunHandle", "RunOptions", "RunPlan", "RunPlanner", "resolve_profile"]
