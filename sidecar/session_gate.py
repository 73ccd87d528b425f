"""Who may touch a session while a worker thread reads it.

A prompt is built off the event loop (sidecar/runs/prompt.py: one heavy prompt must
not hold every other session's calls), by code that reads the live session: its
world, aliases, transcripts and notes, which the loop mutates in place (deltas,
resyncs, imports, a run recording its reply). So, per session, reads in threads and
writes on the loop exclude each other: a writer waits until no thread reads the
session, and once a writer waits, no new read starts (so reads cannot starve it).
Writers do not exclude each other (the store orders them as before; pipelined
batches still share a commit); readers do not either. Other sessions never wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

__all__ = ["SessionGate"]

T = TypeVar("T")


class _State:
    __slots__ = ("readers", "writers", "waiting", "changed")

    def __init__(self) -> None:
        self.readers = 0
        self.writers = 0
        self.waiting = 0
        self.changed = asyncio.Event()


class SessionGate:
    """One per App; used on the event loop only."""

    def __init__(self) -> None:
        self._states: dict[str, _State] = {}

    def busy(self, session_id: str) -> tuple[int, int]:
        """(threads reading, writers in or waiting) for the session (tests read it)."""
        state = self._states.get(session_id)
        return (state.readers, state.writers) if state is not None else (0, 0)

    async def read(self, session_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Await `work()` (a thread reading the session) once no writer is in or waiting.
        The read lasts until the work is done, even when the caller is cancelled
        first: a thread cannot be stopped, so writers wait for it to end."""
        state = self._state(session_id)
        await self._until(state, lambda: state.writers == 0)
        state.readers += 1
        task = asyncio.ensure_future(work())

        def done(finished: asyncio.Future[T]) -> None:
            state.readers -= 1
            self._changed(session_id, state)
            if not finished.cancelled():
                finished.exception()  # seen here: a cancelled caller no longer awaits it

        task.add_done_callback(done)
        return await asyncio.shield(task)

    @asynccontextmanager
    async def write(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session against reading threads while the block mutates it."""
        state = self._state(session_id)
        state.writers += 1
        try:
            await self._until(state, lambda: state.readers == 0)
            yield
        finally:
            state.writers -= 1
            self._changed(session_id, state)

    def _state(self, session_id: str) -> _State:
        state = self._states.get(session_id)
        if state is None:
            state = self._states[session_id] = _State()
        return state

    async def _until(self, state: _State, ready: Callable[[], bool]) -> None:
        state.waiting += 1
        try:
            while not ready():
                state.changed.clear()
                await state.changed.wait()
        finally:
            state.waiting -= 1

    def _changed(self, session_id: str, state: _State) -> None:
        state.changed.set()
        if not (state.readers or state.writers or state.waiting) and self._states.get(session_id) is state:
            del self._states[session_id]
