"""A submitted run as its scheduler and its caller see it: the plan, where it
is in the queue, its task, its events, how far it got.

The events wait in a queue for the caller (the agent servicer, which writes each to
the game as gRPC's flow control lets it). The text in it is bounded: past
`MAX_QUEUED_CHARS` the run waits in `room()` before it reads more of the model's
reply, so a game that reads slowly slows the model's stream down instead of the
sidecar buffering it (docs/runs.md, "The event stream")."""

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
from sidecar.runs.events import RunEventValue, Text
from sidecar.runs.plan import RunPlan

__all__ = ["RunHandle", "END", "MAX_QUEUED_CHARS"]

#: Ends a run's event queue.
END = object()
#: Characters of text queued for the caller beyond which the run stops reading its model.
MAX_QUEUED_CHARS = 16_384


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
    #: Characters of Text events in `queue`.
    queued_chars: int = 0
    _room: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    @property
    def spec(self) -> RunSpec:
        return self.plan.spec

    @property
    def key(self) -> tuple[str, str]:
        return (self.plan.spec.session_id, self.plan.spec.actor_id)

    def put(self, item: Any) -> None:
        """Queue an event (or END, or the run's error) for the caller."""
        if isinstance(item, Text):
            self.queued_chars += len(item.text)
        self.queue.put_nowait(item)

    async def room(self) -> None:
        """Return once the caller has taken the queued text below MAX_QUEUED_CHARS."""
        while self.queued_chars > MAX_QUEUED_CHARS:
            self._room.clear()
            await self._room.wait()

    async def events(self) -> AsyncIterator[RunEventValue]:
        """The run's events in order; raises the run's SidecarError at the end."""
        while True:
            item = await self.queue.get()
            if isinstance(item, Text):
                self.queued_chars -= len(item.text)
                if self.queued_chars <= MAX_QUEUED_CHARS:
                    self._room.set()
            if item is END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def cancel(self, error: SidecarError) -> None:
        if not self.done and self.task is not None:
            self.cancel_error = self.cancel_error or error
            self.task.cancel()
