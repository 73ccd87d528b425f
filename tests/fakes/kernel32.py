"""Windows' process-handle calls, done for real on Linux over pidfds: what the
sidecar's Windows parent watch (sidecar/host_watch.py) asks of kernel32, so its
code runs here against real processes that really exit. A handle is a pidfd
(signalled, i.e. readable, once the process has exited, a zombie included)."""

from __future__ import annotations

import os
import select
from typing import Any

ERROR_ACCESS_DENIED = 5
ERROR_INVALID_PARAMETER = 87
STILL_ACTIVE = 259
WAIT_FAILED = 0xFFFFFFFF


class FakeKernel32:
    def __init__(self, deny: set[int] | None = None, fail_wait: bool = False) -> None:
        self.deny = deny or set()  # PIDs OpenProcess refuses with access denied
        self.fail_wait = fail_wait  # WaitForMultipleObjects returns WAIT_FAILED
        self.last_error = 0
        self.handles: dict[int, int] = {}  # handle -> pidfd
        self.opened: list[tuple[int, int]] = []  # (access, pid) asked for

    def OpenProcess(self, access: int, inherit: bool, pid: int) -> int:  # noqa: N802 - Windows' names
        self.opened.append((access, pid))
        if pid in self.deny:
            self.last_error = ERROR_ACCESS_DENIED
            return 0
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.last_error = ERROR_INVALID_PARAMETER
            return 0
        handle = 0x1000 + fd
        self.handles[handle] = fd
        return handle

    def GetLastError(self) -> int:  # noqa: N802
        return self.last_error

    def CloseHandle(self, handle: int) -> int:  # noqa: N802
        os.close(self.handles.pop(handle))
        return 1

    def WaitForMultipleObjects(self, count: int, array: Any, wait_all: bool, timeout: int) -> int:  # noqa: N802
        assert not wait_all and timeout == 0xFFFFFFFF
        if self.fail_wait:
            return WAIT_FAILED
        fds = [self.handles[array[i]] for i in range(count)]
        ready, _, _ = select.select(fds, [], [])
        return fds.index(ready[0])

    def GetExitCodeProcess(self, handle: int, code: Any) -> int:  # noqa: N802
        ready, _, _ = select.select([self.handles[handle]], [], [], 0)
        code._obj.value = 0 if ready else STILL_ACTIVE
        return 1

    @property
    def open_handles(self) -> int:
        return len(self.handles)
