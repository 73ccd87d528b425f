"""The leak guard on a big request runs off the event loop (issue 24, item 3): it
reads every string of the request, and a heavy prompt's check held every other
call. The check here waits for the loop to release it, which only a check in a
worker thread lets happen; a small request is checked on the loop (a thread hop
would cost more than the check)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from sidecar.llm.guard import GUARD_THREAD_CHARS, run_check


def _body(chars: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": "x" * (chars // 2)},
                                       {"role": "user", "content": "y" * (chars - chars // 2)}]}


async def test_a_big_request_is_checked_in_a_worker_thread() -> None:
    release = threading.Event()
    seen: list[tuple[str, bool]] = []

    def check(body: Mapping[str, Any]) -> None:
        # On the loop, nothing could set `release`: the wait would time out.
        seen.append((threading.current_thread().name, release.wait(5.0)))

    checking = asyncio.create_task(run_check(check, _body(GUARD_THREAD_CHARS + 1)))
    await asyncio.sleep(0)  # the task starts the check (on the loop, it would block here)
    release.set()
    await checking
    assert seen and seen[0][1] and seen[0][0] != threading.main_thread().name


async def test_a_small_request_is_checked_on_the_loop_and_errors_pass_through() -> None:
    where: list[str] = []

    def check(body: Mapping[str, Any]) -> None:
        where.append(threading.current_thread().name)
        raise ValueError("found")

    for size in (100, GUARD_THREAD_CHARS + 1):
        try:
            await run_check(check, _body(size))
        except ValueError as exc:
            assert str(exc) == "found"
        else:
            raise AssertionError("the check's error was lost")
    assert where[0] == threading.main_thread().name and where[1] != where[0]
