"""tests/waits.py: the condition waits every test uses must wait for the condition,
return what it gave, and fail (not hang, not pass) when it never holds."""

from __future__ import annotations

import asyncio
import threading

import pytest
from waits import eventually, eventually_blocking


async def test_eventually_returns_once_work_on_the_loop_makes_it_hold() -> None:
    box: list[str] = []

    async def later() -> None:
        for _ in range(3):
            await asyncio.sleep(0)  # a few loop turns: the first look must not be the last
        box.append("ready")

    task = asyncio.create_task(later())
    assert await eventually(lambda: box and box[0]) == "ready"
    await task


async def test_eventually_awaits_an_async_condition() -> None:
    calls = 0

    async def third_time() -> int:
        nonlocal calls
        calls += 1
        return calls if calls >= 3 else 0

    assert await eventually(third_time) == 3


async def test_eventually_fails_saying_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match="never held within 0.01 s: the door opens"):
        await eventually(lambda: False, timeout=0.01, what="the door opens")


def test_eventually_blocking_sees_another_thread() -> None:
    go, done = threading.Event(), threading.Event()
    worker = threading.Thread(target=lambda: go.wait(5) and done.set())
    worker.start()
    go.set()
    assert eventually_blocking(done.is_set) is True
    worker.join(5)
    with pytest.raises(AssertionError, match="never held"):
        eventually_blocking(lambda: 0, timeout=0.01)
