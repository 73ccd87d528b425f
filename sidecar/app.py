"""The parts of a running sidecar, built once and handed to every servicer."""

from __future__ import annotations

from dataclasses import dataclass, field

from sidecar.config import Config


@dataclass
class App:
    """What servicers share. Built by `sidecar.server.build_app`.

    - `store`: `sidecar.state.store.SessionStore` (sessions, deltas, journal)
    - `gateway`: `sidecar.llm.ModelGateway` (litellm, loaded in the background)
    - `runs`: `sidecar.runs.RunScheduler` (planning, queue, concurrency, cancellation)
    - `context`: `sidecar.context.ContextEngine` (select, project, budget, render)
    """

    config: Config
    store: object
    gateway: object
    runs: object
    context: object
    #: Set when draining: new work gets UNAVAILABLE / SHUTTING_DOWN.
    shutting_down: bool = False
    capabilities: list[str] = field(default_factory=list)
