"""The watchdog that ends the sidecar with the game (docs/protocol.md §1, Exit):
stdin's EOF (the lifeline pipe closes when the game exits, however it exits) and
the parent process going away (the game killed before it could close anything).

On Linux the parent is watched with pidfds: the event loop is woken once, when the
process exits, instead of polling `/proc` ten times a second on the loop thread
(~0.15 ms each here: idle CPU, and a pause that could land in a run's first token).
Elsewhere, or where pidfds are refused (old kernels, seccomp), it is polled every
PARENT_POLL_S.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable

__all__ = ["PARENT_POLL_S", "watch_host", "process_alive"]

#: How often the parent is polled where pidfds are not available; exit must follow
#: parent death within 1 s.
PARENT_POLL_S = 0.1

log = logging.getLogger("sidecar.lifecycle")


def watch_host(
    loop: asyncio.AbstractEventLoop, on_gone: Callable[[str], None], parent_pid: int | None, watch_stdin: bool = True
) -> None:
    """Call `on_gone(why)` when stdin reaches EOF or the parent process goes away:
    the process that spawned the sidecar (its parent changes: "parent changed") or
    `parent_pid` ("parent exited").

    stdin is read in a daemon thread (a blocking read is the portable way to
    see EOF on a pipe); the parents are watched with pidfds on Linux, else polled
    every PARENT_POLL_S.
    """

    done = False

    def trigger(why: str) -> None:
        nonlocal done
        if not done:
            done = True
            log.info("host gone, shutting down", extra={"fields": {"why": why}})
            on_gone(why)

    if watch_stdin:

        def read_stdin() -> None:
            try:
                while os.read(0, 4096):
                    pass  # the game may write; we only care about EOF
            except OSError:
                pass
            loop.call_soon_threadsafe(trigger, "stdin closed")

        threading.Thread(target=read_stdin, name="stdin-watch", daemon=True).start()

    original_ppid = os.getppid()

    def gone() -> str:
        """Why the host is gone, or "" while it is not."""
        if os.getppid() != original_ppid:
            return "parent changed"
        if parent_pid is not None and not process_alive(parent_pid):
            return "parent exited"
        return ""

    watched = {original_ppid: "parent changed"}
    if parent_pid is not None:
        watched.setdefault(parent_pid, "parent exited")
    if _watch_exits(loop, watched, trigger):
        # Gone before its pidfd was opened, and the PID already reused: the poll's check, once.
        if why := gone():
            trigger(why)
        return

    async def poll_parent() -> None:
        while not done:
            if why := gone():
                trigger(why)
                return
            await asyncio.sleep(PARENT_POLL_S)

    loop.create_task(poll_parent(), name="parent-watch")


def _watch_exits(loop: asyncio.AbstractEventLoop, watched: dict[int, str], trigger: Callable[[str], None]) -> bool:
    """Watch each PID with a pidfd, readable once the process has exited (a zombie
    included); `trigger(why)` then. False (nothing watched) where pidfds are not to be had."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None or not hasattr(loop, "add_reader"):
        return False
    fds: dict[int, str] = {}
    gone = ""
    try:
        for pid, why in watched.items():
            try:
                fds[pidfd_open(pid)] = why
            except ProcessLookupError:
                gone = gone or why  # exited and reaped already
    except OSError as exc:  # ENOSYS (kernel < 5.3), EPERM (a sandbox): poll instead
        for fd in fds:
            os.close(fd)
        log.debug("pidfd_open unavailable, polling the parent", extra={"fields": {"error": str(exc)}})
        return False

    def fired(why: str) -> None:
        for fd in fds:
            loop.remove_reader(fd)
            os.close(fd)
        fds.clear()
        trigger(why)

    if gone:
        fired(gone)
        return True
    for fd, why in fds.items():
        loop.add_reader(fd, fired, why)
    return True


def process_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    if sys.platform == "win32":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return True


def _windows_process_alive(pid: int) -> bool:
    # Not os.kill(pid, 0): on Windows that is TerminateProcess, and would kill the game.
    import ctypes

    if sys.platform != "win32":  # process_alive calls this on Windows only; ctypes.windll is Windows'
        raise OSError("Windows only")
    kernel32 = ctypes.windll.kernel32
    process_query_limited_information, still_active = 0x1000, 259
    handle = kernel32.OpenProcess(process_query_limited_information, False, pid)
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)
