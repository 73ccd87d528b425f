"""A clock a test moves by hand, with timers (the coalescer's `Clock`).

Time stands still until `advance`; due timers then fire in deadline order, each
with `now` set to its own deadline, so a test asserts exact flush points. Use
times that are binary fractions (0.25, 0.125, ...) so the sums stay exact.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class FakeTimer:
    def __init__(self, due: float, callback: Callable[[], None]) -> None:
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    def __init__(self, start: float = 100.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, FakeTimer]] = []
        self._order = itertools.count()  # same deadline: first armed fires first

    def now(self) -> float:
        return self._now

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(self._now + delay_s, callback)
        heapq.heappush(self._timers, (timer.due, next(self._order), timer))
        return timer

    @property
    def armed(self) -> list[float]:
        """Deadlines of the timers still due to fire."""
        return sorted(t.due for _, _, t in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer due by then (and any they arm)."""
        until = self._now + seconds
        while self._timers and self._timers[0][0] <= until:
            due, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, due)
            timer.callback()
        self._now = until
