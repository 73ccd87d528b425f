"""A submitted run as its scheduler and its caller see it: the plan, where it
is in the queue, its task, its events, how far it got."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sidecar.context.contract import RunSpec
from sidecar.context.prepared import Prepared
from sidecar.errors import SidecarError
from sidecar.runs.attempts import Progress
from sidecar.runs.events import RunEventValue
from sidecar.runs.plan import RunPlan

__all__ = ["RunHandle", "END"]

#: Ends a run's event queue.
END = object()


@dataclass(eq=False)
class RunHandle:
    """One submitted run. Iterate `events()` to receive what it streams."""

    plan: RunPlan
    order: int
    arrived: float = field(default_factory=time.monotonic)
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    slot: asyncio.Future[None] | None = None
    running: bool = False
    done: bool = False
    cancel_error: SidecarError | None = None
    progress: Progress = field(default_factory=Progress)
    prepared: Prepared | None = None

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    @property
    def spec(self) -> RunSpec:
        return self.plan.spec

    @property
    def key(self) -> tuple[str, str]:
        return (self.plan.spec.session_id, self.plan.spec.actor_id)

    async def events(self) -> AsyncIterator[RunEventValue]:
        """The run's events in order; raises the run's SidecarError at the end."""
        while True:
            item = await self.queue.get()
            if item is END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def cancel(self, error: SidecarError) -> None:
        if not self.done and self.task is not None:
            self.cancel_error = self.cancel_error or error
            self.task.cancel()
