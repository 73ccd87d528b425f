"""Where the sidecar differs by operating system, chosen in one place.

Five branches, each a field of `Platform`:

- the default transport: a Unix socket where this Python has AF_UNIX, else TCP
  loopback (CPython on Windows has no AF_UNIX, even where Windows itself does);
- the parent watch: pidfds on Linux (the loop wakes once, at the exit), a process
  handle waited on in a thread on Windows, a poll elsewhere (sidecar/host_watch.py);
- the state-folder lock: `flock`, or `msvcrt.locking` on Windows (sidecar/state/dirlock.py);
- the stop signals: SIGTERM and SIGINT through the event loop on POSIX; on Windows,
  whose loops have no `add_signal_handler`, SIGINT and SIGBREAK (a console's
  Ctrl+Break, what a launcher can send) through `signal.signal`;
- the socket's temp folder: under the temp dir unless the path would not fit
  `sun_path` (104 bytes on macOS, whose $TMPDIR is long), then under /tmp.

`current()` is the only place the running platform is read; the code that branches
takes a `Platform`, so tests run every branch on this machine by passing another one
(tests/test_platforms.py). What runs only on a real Windows: docs/shipping.md.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sidecar.process_contract import SOCKET_DIR_PREFIX

__all__ = ["Platform", "current", "for_name", "socket_dir", "hold_stop_signals", "install_stop_signals", "SOCKET_NAME"]

SOCKET_NAME = "sidecar.sock"


@dataclass(frozen=True)
class Platform:
    name: str  # sys.platform's value: "linux", "darwin", "win32", ...
    unix_sockets: bool
    parent_watch: str  # "pidfd" | "handle" | "poll"
    lock: str  # "flock" | "msvcrt"
    signals: str  # "loop" | "handler"
    #: sun_path's size, terminating NUL included.
    socket_path_max: int

    @property
    def default_transport(self) -> str:
        return "unix" if self.unix_sockets else "tcp"


def for_name(name: str, *, unix_sockets: bool | None = None) -> Platform:
    """The branches of the platform `name` (a sys.platform value). `unix_sockets`
    defaults to what that platform's CPython has (none on Windows)."""
    windows = name == "win32"
    return Platform(
        name=name,
        unix_sockets=(not windows) if unix_sockets is None else unix_sockets,
        parent_watch="handle" if windows else "pidfd" if name.startswith("linux") else "poll",
        lock="msvcrt" if windows else "flock",
        signals="handler" if windows else "loop",
        socket_path_max=108 if name.startswith("linux") else 104,
    )


@cache
def current() -> Platform:
    return for_name(sys.platform, unix_sockets=hasattr(socket, "AF_UNIX"))


def socket_dir(platform: Platform, temp_root: str | None = None) -> Path:
    """A fresh 0700 folder for the socket. Under the temp dir (`temp_root`, default
    tempfile's) unless the socket's path would not fit sun_path; then under /tmp,
    which every POSIX system has and keeps short."""
    root = temp_root or tempfile.gettempdir()
    # mkdtemp's suffix is 8 characters: "game-sidecar-XXXXXXXX"
    if len(os.fsencode(os.path.join(root, f"{SOCKET_DIR_PREFIX}XXXXXXXX", SOCKET_NAME))) >= platform.socket_path_max:
        root = "/tmp"
    directory = Path(tempfile.mkdtemp(prefix=SOCKET_DIR_PREFIX, dir=root))  # mkdtemp makes it 0700
    os.chmod(directory, 0o700)
    return directory


def _stop_signals(platform: Platform) -> list[signal.Signals]:
    """The signals that stop the sidecar on `platform` (SIGBREAK: Windows only)."""
    names = ("SIGTERM", "SIGINT") if platform.signals == "loop" else ("SIGINT", "SIGBREAK")
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


def hold_stop_signals(platform: Platform) -> list[str]:
    """From now until `install_stop_signals`, a stop signal is noted (its name appended to
    the returned list) instead of killing the process by its default action: a game may
    send one at any moment of start-up, and a killed sidecar leaves its socket folder."""
    held: list[str] = []

    def note(number: int, _frame: object) -> None:
        held.append(signal.Signals(number).name)

    for sig in _stop_signals(platform):
        signal.signal(sig, note)
    return held


def install_stop_signals(platform: Platform, loop: asyncio.AbstractEventLoop, stop: Callable[[str], None]) -> list[str]:
    """Call `stop(signal name)` on the platform's stop signals; returns their names."""
    signals = _stop_signals(platform)
    if platform.signals == "loop":
        for sig in signals:
            loop.add_signal_handler(sig, stop, sig.name)
        return [sig.name for sig in signals]

    # Windows: a handler runs on the main thread between bytecodes, so it hands the
    # stop to the loop, which may be inside select() at that moment.
    def handler(number: int, _frame: object) -> None:
        loop.call_soon_threadsafe(stop, signal.Signals(number).name)

    for sig in signals:
        signal.signal(sig, handler)
    return [sig.name for sig in signals]
