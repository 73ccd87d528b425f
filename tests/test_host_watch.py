"""The parent watchdog (sidecar/host_watch.py) in process: a watched process that
exits (killed, left a zombie, or already gone) ends the wait with its reason, on
Linux through a pidfd with nothing polling, and through the poll where pidfds are
not to be had. The whole-process behaviour (a sidecar whose parent is SIGKILLed
exits) is tests/e2e/test_lifecycle.py."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest
from waits import eventually

from sidecar import host_watch

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def _polling() -> bool:
    return any(t.get_name() == "parent-watch" for t in asyncio.all_tasks())


@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "poll"])
async def test_a_watched_process_that_dies_ends_the_wait(pidfds: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not pidfds:
        monkeypatch.delattr(host_watch.os, "pidfd_open", raising=False)
    elif not hasattr(os, "pidfd_open"):
        pytest.skip("no pidfds on this platform")
    proc = _sleeper()
    seen: list[str] = []
    host_watch.watch_host(asyncio.get_running_loop(), seen.append, proc.pid, watch_stdin=False)
    assert _polling() is not pidfds  # with pidfds, no task wakes the loop to look
    await asyncio.sleep(0.3)
    assert seen == []
    proc.send_signal(signal.SIGKILL)  # not reaped yet: a zombie counts as gone
    await eventually(lambda: seen == ["parent exited"], 5, what="the watchdog sees the exit")
    proc.wait()
    await asyncio.sleep(0.2)
    assert seen == ["parent exited"]  # once


async def test_a_parent_gone_before_the_watch_starts_ends_it_at_once() -> None:
    proc = _sleeper()
    proc.kill()
    proc.wait()  # reaped: no pidfd can be opened for it
    seen: list[str] = []
    host_watch.watch_host(asyncio.get_running_loop(), seen.append, proc.pid, watch_stdin=False)
    await eventually(lambda: seen == ["parent exited"], 5, what="the watchdog reports it")
