"""Generations on the embedded model take turns: one step each, round robin.

llama.cpp's context is one, and only one thread may touch it; run whole, one after
another, eight sessions narrating at once had the last wait behind seven replies
(issue 30, item 4). Here each generation is a Python generator that does one step of
work per `next()`: a slice of its prompt, or one token. The worker thread steps every
admitted generation in turn, so a run arriving while others speak starts within one
round, and each speaking NPC slows by the share of the model the others take.

A generation paused for another's turn is parked: its tokens' KV cells stay in the one
buffer under a sequence of their own (`host.park`), and its llama-cpp-python state
(tokens, sampler) is put aside until its next step (`host.unpark`). Pausing only ever
happens between steps, where llama-cpp-python's generator has just handed out a token
it has not yet evaluated, so nothing is evaluated twice.

A generation admitted takes its first step before the others' next ones (in order of
admission among the new), then joins the round: a run waits for one step of the others,
not a round of them. At most `slots` generations take turns, and only while the tokens
they may hold (prompt + output limit each) fit in the buffer's cells; the rest wait in
arrival order. A generation alone is admitted whatever it needs (llama.cpp says so if it
cannot).

Background turns (warm-ups) run only while no generation is admitted or waiting, one at
a time, and are never parked: they end themselves at their next step when one arrives.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, Protocol

__all__ = ["Host", "Steps", "Turn", "Turns", "TurnsClosed"]

log = logging.getLogger("sidecar.llm.turns")

#: A generation's steps: the first `yield` gives the KV cells it may need (or None for a
#: background turn); each later one ends a step. Its return value is the turn's result.
Steps = Generator[int | None, None, Any]


class TurnsClosed(RuntimeError):
    """The model's worker closed before the turn ended."""


class Host(Protocol):
    """What the turns need of the model that owns the context."""

    def capacity(self) -> tuple[int, int]:
        """(generations that can be parked at once + 1, KV cells in all); (1, 0) = no parking."""

    def park(self, turn: Turn) -> None:
        """Put the live generation's state aside (in `turn.parked`) under `turn.slot`."""

    def unpark(self, turn: Turn) -> None:
        """Make `turn`'s parked state the live one again."""

    def release(self, turn: Turn) -> None:
        """`turn` ended: free what its parking held."""


class Turn:
    """One generation (or warm-up) on the model's worker."""

    def __init__(self, steps: Steps, background: bool) -> None:
        self.steps = steps
        self.background = background
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        #: When the model first worked on it after admission (None: not yet).
        self.began: float | None = None
        #: KV cells it may hold (prompt + output limit), from its first step.
        self.need = 0
        #: Its parking sequence (0 = none) and what was put aside when it was parked.
        self.slot = 0
        self.parked: Any = None


class Turns:
    """The model's worker thread and the order in which it steps generations."""

    def __init__(self, host: Host, name: str = "local-llm") -> None:
        self._host = host
        self._cond = threading.Condition()
        self._new: deque[Turn] = deque()  # submitted, first step not yet run
        self._calls: deque[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = deque()
        self._closing = False
        # Only the worker thread touches these:
        self._queued: deque[Turn] = deque()  # first step run, waiting for admission
        self._active: list[Turn] = []
        self._live: Turn | None = None
        self._free_slots: list[int] = []
        self._slots_known = False
        #: Generations submitted and not yet ended (read from any thread).
        self.foreground = 0
        #: The most generations that took turns at once.
        self.most_at_once = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- any thread ---------------------------------------------------------

    def submit(self, steps: Steps, background: bool = False) -> Turn:
        turn = Turn(steps, background)
        with self._cond:
            if self._closing:
                steps.close()
                raise RuntimeError("the model's worker is closed")
            if not background:
                self.foreground += 1
            self._new.append(turn)
            self._cond.notify()
        return turn

    def close(self, last: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """End every turn at its current step, then run `last` and stop the worker."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._cond:
            if self._closing:
                future.set_result(None)
                return future
            self._closing = True
            self._calls.append((last, future))
            self._cond.notify()
        return future

    # -- the worker ---------------------------------------------------------

    def _loop(self) -> None:
        try:
            self._serve()
        except BaseException as exc:  # a bug here must not leave callers waiting for ever
            log.exception("the model's worker failed")
            with self._cond:
                self._closing = True
                stranded = [*self._new, *self._queued, *self._active]
                self._new.clear()
                calls = list(self._calls)
                self._calls.clear()
            self._end_all(stranded, TurnsClosed(f"the model's worker failed: {exc!r}"))
            for _, future in calls:
                future.set_exception(TurnsClosed("the model's worker failed"))

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not (self._new or self._calls or self._active or self._queued or self._closing):
                    self._cond.wait()
                new = list(self._new)
                self._new.clear()
                calls = list(self._calls)
                self._calls.clear()
                closing = self._closing
            if closing:
                self._end_all([*new, *self._queued, *self._active])
            for fn, future in calls:
                _settle(future, fn)
            if closing:
                return
            for turn in new:
                self._first_step(turn)
            self._admit()
            self._round()

    def _first_step(self, turn: Turn) -> None:
        """Run a new turn up to its first yield (no KV work: it says what it needs)."""
        try:
            need = next(turn.steps)
        except StopIteration as stop:
            self._ended(turn, result=stop.value)
            return
        except BaseException as exc:  # noqa: BLE001 - the submitter's to raise
            self._ended(turn, error=exc)
            return
        turn.need = int(need or 0)
        self._queued.append(turn)

    def _admit(self) -> None:
        if not self._queued:  # (every step passes here: ask the host only when there is one to admit)
            return
        slots, cells = self._host.capacity()
        if not self._slots_known and slots > 1:  # known once the model is loaded (a first step loads it)
            self._free_slots = list(range(slots - 1, 0, -1))
            self._slots_known = True
        while self._queued:
            turn = self._queued[0]
            if turn.background:
                if self._active or any(not t.background for t in self._queued):
                    # Never while a generation waits: drop it (a warm-up is only ever a bonus).
                    self._queued.popleft()
                    turn.steps.close()
                    self._ended(turn, result=0)
                    continue
            elif self._active:
                # Beside others only if each can be parked, and the cells hold them all.
                parkable = all(t.slot for t in self._active) and self._free_slots
                if not parkable or sum(t.need for t in self._active) + turn.need > cells:
                    return
                turn.slot = self._free_slots.pop()
            elif self._free_slots:
                turn.slot = self._free_slots.pop()
            self._queued.popleft()
            # Its first step comes next, after those of turns admitted before it that have not had one.
            first = next((i for i, t in enumerate(self._active) if t.began is not None), len(self._active))
            self._active.insert(first, turn)
            self.most_at_once = max(self.most_at_once, len(self._active))

    def _round(self) -> None:
        """One step of every admitted turn. The list rotates (the turn just stepped goes
        last), so a round cut short by an arrival resumes where it stopped."""
        for _ in range(len(self._active)):
            turn = self._active[0]
            try:
                self._make_live(turn)
                if turn.began is None:
                    turn.began = time.monotonic()
                next(turn.steps)
            except StopIteration as stop:
                self._retire(turn, result=stop.value)
            except BaseException as exc:  # noqa: BLE001 - the submitter's to raise
                self._retire(turn, error=exc)
            else:
                self._active.append(self._active.pop(0))
            if self._new or self._calls:
                return  # take them in before the next step: a round can be long

    def _make_live(self, turn: Turn) -> None:
        if self._live is turn:
            return
        live, self._live = self._live, None
        if live is not None and live in self._active:
            try:
                self._host.park(live)
            except BaseException as exc:  # noqa: BLE001 - that generation cannot go on; others can
                self._retire(live, error=exc)
        if turn.parked is not None:
            self._host.unpark(turn)
        self._live = turn

    def _retire(self, turn: Turn, result: Any = None, error: BaseException | None = None) -> None:
        self._active.remove(turn)
        if turn.slot:
            self._host.release(turn)
            self._free_slots.append(turn.slot)
            turn.slot = 0
        self._ended(turn, result, error)

    def _ended(self, turn: Turn, result: Any = None, error: BaseException | None = None) -> None:
        if not turn.background:
            with self._cond:
                self.foreground -= 1
        if error is not None:
            turn.future.set_exception(error)
        else:
            turn.future.set_result(result)

    def _end_all(self, turns: list[Turn], error: BaseException | None = None) -> None:
        """Closing: each generation ends where it is (its own `finally` runs; it tells its
        caller the model is going away)."""
        for turn in turns:
            try:
                turn.steps.close()
            except BaseException as exc:  # noqa: BLE001 - closing regardless
                log.debug("a turn failed to close", extra={"fields": {"error": repr(exc)}})
            if not turn.future.done():
                self._ended(turn, error=error or TurnsClosed("the model is closing"))
        self._queued.clear()
        self._active.clear()


def _settle(future: concurrent.futures.Future[Any], fn: Callable[[], Any]) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - the caller's to raise
        future.set_exception(exc)
