"""Generations on the embedded model take turns: all of them in one decode a step.

llama.cpp's context is one, and only one thread may touch it; run whole, one after
another, eight sessions narrating at once had the last wait behind seven replies
(issue 30, item 4). Here each generation is a Python generator that asks, a step at a
time, for tokens to be evaluated into its own sequence of the one KV buffer (`Work`): its
prompt's new tokens, then each token it drew. The worker thread gathers what every
admitted generation asks into one llama.cpp batch, decodes it once, and sends each the
row of its logits. From four in a batch on they share the pass over the weights: eight
NPCs' tokens cost about 49 ms on two cores where eight decodes cost 109
(docs/benchmarks.md, "Before batching").

A batch holds at most `batch_tokens`. Prompts are served in order of admission, but while
any generation speaks they get `prompt_step` tokens a step in all: the longest pause a
newcomer puts in the others' replies. A generation is answered once its whole prompt is in.

At most `slots` generations take turns, each in its slot's sequence, and only while the
tokens they may hold (prompt + output limit each) fit in the buffer's cells; the rest wait
in arrival order. One alone is admitted whatever it needs (llama.cpp says so if it cannot).
With no slots (a stand-in model), one at a time. A generation's first step after admission
may use the context on its own (a decision scores its options: sidecar/llm/choose.py), so
it comes after every answered generation has read its row: logits last until the next decode.

Background turns (warm-ups) run only while no generation is admitted or waiting, one at
a time, doing their own work each step; they end at their next step when one arrives.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from sidecar.llm.turn_protocol import Host, Steps, Turn, TurnsClosed, Work

__all__ = ["Turns"]

log = logging.getLogger("sidecar.llm.turns")


class Turns:
    """The model's worker thread: who takes part in each step's decode."""

    def __init__(self, host: Host, name: str = "local-llm", batch_tokens: int = 512, prompt_step: int = 128) -> None:
        self._host = host
        self._batch_tokens = batch_tokens
        self._prompt_step = prompt_step
        self._cond = threading.Condition()
        self._new: deque[Turn] = deque()  # submitted, first step not yet run
        self._calls: deque[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = deque()
        self._closing = False
        # Only the worker thread touches these:
        self._queued: deque[Turn] = deque()  # first step run, waiting for admission
        self._active: list[Turn] = []  # in order of admission
        self._free_slots: list[int] = []
        self._slots_known = False
        #: Generations submitted and not yet ended (read from any thread).
        self.foreground = 0
        #: The most generations that took turns at once, and that shared one decode.
        self.most_at_once = 0
        self.most_in_a_decode = 0
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
            self._step()

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
        turn.need = need if isinstance(need, int) else 0
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
                # Beside others only with a slot of its own, and while the cells hold them all.
                shared = all(t.slot for t in self._active) and self._free_slots
                if not shared or sum(t.need for t in self._active) + turn.need > cells:
                    return
                turn.slot = self._free_slots.pop()
            elif self._free_slots:
                turn.slot = self._free_slots.pop()
            self._queued.popleft()
            self._active.append(turn)
            self.most_at_once = max(self.most_at_once, len(self._active))

    def _step(self) -> None:
        """Every admitted turn not waiting for its work goes on to its next request, the
        answered first (their rows are read before a first step may decode on its own);
        then one decode of what they asked."""
        for turn in sorted(self._active, key=lambda t: t.row is None):
            if turn.pending is not None or turn not in self._active:
                continue
            if turn.began is None:
                turn.began = time.monotonic()
                answer: int | None = turn.slot
            else:
                answer, turn.row = turn.row, None
            try:
                asked = turn.steps.send(answer)
            except StopIteration as stop:
                self._retire(turn, result=stop.value)
            except BaseException as exc:  # noqa: BLE001 - the submitter's to raise
                self._retire(turn, error=exc)
            else:
                turn.pending = asked if isinstance(asked, Work) else None
                if turn.pending is not None and not turn.pending.tokens:  # it would wait for ever
                    _close(turn)
                    self._retire(turn, error=ValueError("a generation asked for no tokens to be evaluated"))
        self._decode()

    def _decode(self) -> None:
        # Those speaking (a token each) first, then prompts in order of admission.
        asking = sorted((t for t in self._active if t.pending is not None), key=lambda t: t.need_tokens > 1)
        if not asking:
            return
        room = self._batch_tokens
        prompt_room = self._prompt_step if asking[0].need_tokens == 1 else room
        taken: list[tuple[Turn, Work, int]] = []
        for turn in asking:
            work = turn.pending
            assert work is not None
            n = min(len(work.tokens), room, prompt_room if len(work.tokens) > 1 else room)
            if n > 0:
                taken.append((turn, work, n))
                room -= n
                prompt_room -= n if len(work.tokens) > 1 else 0
        try:
            rows = self._host.decode([(Work(w.seq, w.pos, w.tokens[:n]), n == len(w.tokens)) for _, w, n in taken])
        except BaseException as exc:  # noqa: BLE001 - those in the batch cannot go on; others can
            for turn, _, _ in taken:
                _close(turn)  # here, on the worker: its `finally` touches the context
                self._retire(turn, error=exc)
            return
        self.most_in_a_decode = max(self.most_in_a_decode, len(taken))
        for (turn, work, n), row in zip(taken, rows, strict=True):
            if n == len(work.tokens):
                turn.pending, turn.row = None, row
            else:
                turn.pending = Work(work.seq, work.pos + n, work.tokens[n:])

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
            _close(turn)
            if not turn.future.done():
                self._ended(turn, error=error or TurnsClosed("the model is closing"))
        self._queued.clear()
        self._active.clear()


def _close(turn: Turn) -> None:
    """End a turn's generator where it is (its own `finally` runs)."""
    try:
        turn.steps.close()
    except BaseException as exc:  # noqa: BLE001 - closing regardless
        log.debug("a turn failed to close", extra={"fields": {"error": repr(exc)}})


def _settle(future: concurrent.futures.Future[Any], fn: Callable[[], Any]) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - the caller's to raise
        future.set_exception(exc)
