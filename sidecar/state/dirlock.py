"""One sidecar per `--state-dir`: an exclusive lock on `state.lock` in it,
held for the process's life (docs/protocol.md §1, exit code 3).

Two sidecars on one journal would each serve their own copy of the sessions and
let writes diverge. The lock is an OS advisory lock on an open file (`flock` on
POSIX, `msvcrt.locking` on Windows), so it goes away with the process however
it ends (SIGKILL and crashes included): a stale lock file never blocks a restart.
Taken by `SidecarServer.start` (the process), not by `SessionStore`: tests open
several stores on one directory in one process to simulate crashes.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from sidecar import platforms
from sidecar.platforms import Platform

__all__ = ["StateDirLock", "StateDirBusy", "LOCK_FILE"]

LOCK_FILE = "state.lock"


class StateDirBusy(Exception):
    """Another live process holds the state dir's lock."""

    def __init__(self, state_dir: str, holder: str) -> None:
        who = f"pid {holder}" if holder else "another process"
        super().__init__(
            f"--state-dir {state_dir} is in use by another sidecar ({who}); "
            "one sidecar per state dir: stop the other one or choose another directory"
        )
        self.state_dir = state_dir
        self.holder = holder


class StateDirLock:
    def __init__(self, state_dir: str, platform: Platform | None = None, msvcrt: ModuleType | None = None) -> None:
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, LOCK_FILE)
        self._fd: int | None = None
        self._platform = platform or platforms.current()
        self._msvcrt = msvcrt

    def acquire(self) -> None:
        """Take the lock or raise StateDirBusy (the directory must exist)."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            lock_fd(fd, self._platform, self._msvcrt)
        except OSError:
            holder = _read(fd)
            os.close(fd)
            raise StateDirBusy(self.state_dir, holder) from None
        # Our pid, for the other sidecar's message (informational only).
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the descriptor drops the lock


def _read(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        return ""


def lock_fd(fd: int, platform: Platform, msvcrt: ModuleType | None = None) -> None:
    """Take the exclusive, non-blocking lock on `fd` or raise OSError. `msvcrt` is
    the Windows module (injected by tests; imported where it exists)."""
    if platform.lock == "msvcrt":
        module = msvcrt or importlib.import_module("msvcrt")
        # Lock one byte past the pid text so reading the pid stays possible.
        os.lseek(fd, 1 << 20, os.SEEK_SET)
        module.locking(fd, module.LK_NBLCK, 1)
        os.lseek(fd, 0, os.SEEK_SET)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
