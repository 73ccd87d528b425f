"""The watchdog that ends the sidecar with the game (docs/protocol.md §1, Exit):
stdin's EOF (the lifeline pipe closes when the game exits, however it exits) and
the parent process going away (the game killed before it could close anything).

On Linux the parent is watched with pidfds: the event loop is woken once, when the
process exits, instead of polling `/proc` ten times a second on the loop thread
(~0.15 ms each here: idle CPU, and a pause that could land in a run's first token).
On Windows a thread waits on the parents' process handles (WaitForMultipleObjects)
and wakes the loop once, the same way. Elsewhere (macOS), or where pidfds or handles
are refused (old kernels, seccomp, access denied), it is polled every PARENT_POLL_S.
Which of the three: `sidecar.platforms`, injected by the tests.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from sidecar import platforms
from sidecar.platforms import Platform

__all__ = ["PARENT_POLL_S", "watch_host", "process_alive"]

#: How often the parent is polled where pidfds are not available; exit must follow
#: parent death within 1 s.
PARENT_POLL_S = 0.1

log = logging.getLogger("sidecar.lifecycle")


def watch_host(
    loop: asyncio.AbstractEventLoop,
    on_gone: Callable[[str], None],
    parent_pid: int | None,
    watch_stdin: bool = True,
    platform: Platform | None = None,
    kernel32: Any = None,
) -> None:
    """Call `on_gone(why)` when stdin reaches EOF or the parent process goes away:
    the process that spawned the sidecar (its parent changes: "parent changed") or
    `parent_pid` ("parent exited").

    stdin is read in a daemon thread (a blocking read is the portable way to
    see EOF on a pipe); the parents are watched with pidfds on Linux, process
    handles on Windows (`kernel32`: ctypes' kernel32, or a test's stand-in), else
    polled every PARENT_POLL_S.
    """
    platform = platform or platforms.current()

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
        if parent_pid is not None and not process_alive(parent_pid, platform, kernel32):
            return "parent exited"
        return ""

    watched = {original_ppid: "parent changed"}
    if parent_pid is not None:
        watched.setdefault(parent_pid, "parent exited")
    async def poll_parent() -> None:
        while not done:
            if why := gone():
                trigger(why)
                return
            await asyncio.sleep(PARENT_POLL_S)

    def start_poll() -> None:
        loop.create_task(poll_parent(), name="parent-watch")

    if platform.parent_watch == "handle":
        watching = _watch_handles(loop, watched, trigger, kernel32 or _kernel32(), start_poll)
    elif platform.parent_watch == "pidfd":
        watching = _watch_exits(loop, watched, trigger)
    else:
        watching = False
    if watching:
        # Gone before its pidfd or handle was opened, and the PID already reused: the poll's check, once.
        if why := gone():
            trigger(why)
        return

    start_poll()


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


# Windows API values (winnt.h, winbase.h, winerror.h).
_SYNCHRONIZE = 0x00100000
_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_STILL_ACTIVE = 259
_INFINITE = 0xFFFFFFFF
_WAIT_OBJECT_0 = 0
_ERROR_INVALID_PARAMETER = 87  # OpenProcess of a PID no process has


class _Kernel32:
    """kernel32 through ctypes, with GetLastError read from ctypes' saved copy: a
    direct GetLastError call could see a value set by the interpreter in between."""

    def __init__(self) -> None:
        import ctypes

        self._dll = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]  # Windows only

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dll, name)

    def GetLastError(self) -> int:  # noqa: N802 - the Windows API's name, as the stand-ins have it
        import ctypes

        return int(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]  # Windows only


def _kernel32() -> Any:
    return _Kernel32()


def _watch_handles(
    loop: asyncio.AbstractEventLoop,
    watched: dict[int, str],
    trigger: Callable[[str], None],
    kernel32: Any,
    fallback: Callable[[], None],
) -> bool:
    """Wait on each PID's process handle in one thread (WaitForMultipleObjects returns
    when the first is signalled, i.e. has exited); `trigger(why)` on the loop then.
    False (nothing watched) where a handle cannot be opened for another reason than
    the process being gone (access denied): the caller polls instead."""
    import ctypes

    handles: list[int] = []
    whys: list[str] = []
    gone = ""
    for pid, why in watched.items():
        handle = kernel32.OpenProcess(_SYNCHRONIZE | _PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
        if handle:
            handles.append(handle)
            whys.append(why)
        elif kernel32.GetLastError() == _ERROR_INVALID_PARAMETER:
            gone = gone or why  # no such process: exited already
        else:
            for h in handles:
                kernel32.CloseHandle(h)
            log.debug("process handle refused, polling the parent", extra={"fields": {"pid": pid}})
            return False
    if gone or not handles:
        for h in handles:
            kernel32.CloseHandle(h)
        if gone:
            trigger(gone)
        return bool(gone)
    array = (ctypes.c_void_p * len(handles))(*handles)

    def wait() -> None:
        index = kernel32.WaitForMultipleObjects(len(handles), array, False, _INFINITE) - _WAIT_OBJECT_0
        for h in handles:
            kernel32.CloseHandle(h)
        if 0 <= index < len(handles):
            loop.call_soon_threadsafe(trigger, whys[index])
        else:  # WAIT_FAILED: keep watching the slow way rather than stop a healthy sidecar
            log.warning("waiting on the parent's handle failed, polling", extra={"fields": {"result": index}})
            loop.call_soon_threadsafe(fallback)

    threading.Thread(target=wait, name="parent-watch-handles", daemon=True).start()
    return True


def process_alive(pid: int, platform: Platform | None = None, kernel32: Any = None) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    if (platform or platforms.current()).parent_watch == "handle":
        return _windows_process_alive(pid, kernel32 or _kernel32())
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


def _windows_process_alive(pid: int, kernel32: Any) -> bool:
    # Not os.kill(pid, 0): on Windows that is TerminateProcess, and would kill the game.
    import ctypes

    handle = kernel32.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return bool(kernel32.GetLastError() != _ERROR_INVALID_PARAMETER)  # access denied: it exists
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return bool(code.value == _STILL_ACTIVE)
    finally:
        kernel32.CloseHandle(handle)
