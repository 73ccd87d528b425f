"""Waiting for a condition, never for a time (docs STYLE: "Tests").

A test that sleeps and then asserts is either slow (the sleep is generous) or flaky
(the machine is loaded and the sleep was not enough). These helpers poll the
condition itself and return as soon as it holds; `timeout` only bounds a test
whose condition never comes, and then it fails saying what it waited for.

`eventually` is for tests on the event loop (the condition may be async);
`eventually_blocking` for plain threads and subprocesses.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["eventually", "eventually_blocking"]

T = TypeVar("T")

#: Between two looks at the condition. Short: a test is never held longer than this
#: past the moment its condition holds, and a look costs microseconds.
_POLL_S = 0.002


def _failure(condition: Callable[..., object], what: str, timeout: float) -> AssertionError:
    name = what or getattr(condition, "__qualname__", repr(condition))
    return AssertionError(f"condition never held within {timeout:g} s: {name}")


async def eventually(
    condition: Callable[[], T | Awaitable[T]], timeout: float = 5.0, what: str = ""
) -> T:
    """Return the condition's first truthy value; fail the test after `timeout` s.

    The first look happens before any wait, and every later one after yielding to
    the loop, so work the test started (tasks, callbacks) gets to run in between.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise _failure(condition, what, timeout)
        await asyncio.sleep(_POLL_S)


def eventually_blocking(condition: Callable[[], T], timeout: float = 5.0, what: str = "") -> T:
    """`eventually` for code off the event loop (threads, other processes)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(condition, what, timeout)
        time.sleep(_POLL_S)
