"""The parts of a running sidecar, built once and handed to every servicer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sidecar.config import Config
from sidecar.session_gate import SessionGate

if TYPE_CHECKING:
    # Types only: the servicers import this module, and building the app is what
    # loads the engines (`sidecar.server.build_app`); runs also imports App back.
    from sidecar.context import ContextEngine
    from sidecar.llm import ModelGateway
    from sidecar.runs import RunScheduler
    from sidecar.state.store import SessionStore


@dataclass
class App:
    """What servicers share. Built by `sidecar.server.build_app`."""

    config: Config
    #: Sessions, deltas, journal.
    store: SessionStore
    #: Models: litellm loaded in the background, the local model, the scripted fake.
    gateway: ModelGateway
    #: Queue, concurrency, cancellation.
    runs: RunScheduler
    #: Select, project, budget, render.
    context: ContextEngine
    #: Set when draining: new work gets UNAVAILABLE / SHUTTING_DOWN.
    shutting_down: bool = False
    capabilities: list[str] = field(default_factory=list)
    #: Threads reading a session (a prompt building) and writes to it exclude each other.
    gate: SessionGate = field(default_factory=SessionGate)
