"""Every platform branch of the sidecar (sidecar/platforms.py) run on this machine
by injecting the platform: the default transport, the parent watch (Windows'
process handles over a kernel32 stand-in that waits on real processes), the
state-folder lock (Windows' msvcrt.locking through a stand-in), the stop signals
and the socket's temp folder. The Windows sidecar itself cannot run here (no
Windows CPython): docs/shipping.md, "What is tested where"."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest
from fakes.kernel32 import FakeKernel32
from waits import eventually

from sidecar import host_watch, lifecycle, platforms
from sidecar.state.dirlock import StateDirBusy, StateDirLock

WINDOWS = platforms.for_name("win32")
LINUX = platforms.for_name("linux")
MACOS = platforms.for_name("darwin")

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="the stand-ins wait on Linux pidfds")


def test_each_platform_picks_its_branches() -> None:
    assert (LINUX.default_transport, LINUX.parent_watch, LINUX.lock, LINUX.signals) == (
        "unix", "pidfd", "flock", "loop")
    assert (WINDOWS.default_transport, WINDOWS.parent_watch, WINDOWS.lock, WINDOWS.signals) == (
        "tcp", "handle", "msvcrt", "handler")
    assert (MACOS.default_transport, MACOS.parent_watch, MACOS.lock, MACOS.signals) == ("unix", "poll", "flock", "loop")
    assert (LINUX.socket_path_max, MACOS.socket_path_max) == (108, 104)
    assert platforms.current() == platforms.for_name(sys.platform, unix_sockets=True)


def test_windows_listens_on_tcp_loopback_and_refuses_unix() -> None:
    spec = lifecycle.parse_listen(None, WINDOWS)
    assert (spec.transport, spec.address, spec.port, spec.owned_dir) == ("tcp", "127.0.0.1", 0, None)
    with pytest.raises(ValueError, match="no Unix sockets"):
        lifecycle.parse_listen("unix", WINDOWS)
    assert lifecycle.default_transport(WINDOWS) == "tcp"
    linux = lifecycle.parse_listen(None, LINUX)
    try:
        assert linux.transport == "unix" and linux.owned_dir is not None
        assert oct(linux.owned_dir.stat().st_mode & 0o777) == "0o700"
    finally:
        linux.cleanup()
    assert linux.owned_dir is not None and not linux.owned_dir.exists()


def test_a_socket_path_too_long_for_sun_path_moves_to_tmp() -> None:
    # A root whose socket path is 105 bytes: over macOS' sun_path (104; its $TMPDIR
    # is long), within Linux' 108.
    long_root = Path(tempfile.mkdtemp(prefix="gs-", dir="/tmp"))
    long_root = long_root.rename(Path(str(long_root).ljust(70, "t")))
    assert len(str(long_root / "game-sidecar-XXXXXXXX" / "sidecar.sock")) == 105
    mac = platforms.socket_dir(MACOS, str(long_root))
    linux = platforms.socket_dir(LINUX, str(long_root))
    try:
        assert mac.parent == Path("/tmp") and mac.name.startswith("game-sidecar-")
        assert linux.parent == long_root
        assert len(os.fsencode(mac / "sidecar.sock")) < MACOS.socket_path_max
    finally:
        mac.rmdir()
        linux.rmdir()
        long_root.rmdir()


async def test_windows_stop_signals_go_through_a_handler_to_the_loop() -> None:
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    before = signal.getsignal(signal.SIGINT)
    try:
        names = platforms.install_stop_signals(WINDOWS, loop, seen.append)
        assert names == ["SIGINT"]  # SIGBREAK exists on Windows alone
        os.kill(os.getpid(), signal.SIGINT)
        await eventually(lambda: seen == ["SIGINT"], 5, what="the handler hands the stop to the loop")
    finally:
        signal.signal(signal.SIGINT, before)


async def test_posix_stop_signals_go_through_the_loop() -> None:
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    try:
        assert platforms.install_stop_signals(LINUX, loop, seen.append) == ["SIGTERM", "SIGINT"]
        os.kill(os.getpid(), signal.SIGTERM)
        await eventually(lambda: seen == ["SIGTERM"], 5, what="the loop's handler runs")
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        loop.remove_signal_handler(signal.SIGINT)


class _Msvcrt(types.ModuleType):
    """msvcrt.locking's contract: lock `n` bytes from the file position, or OSError
    when another descriptor holds them (kept per file here, as Windows does)."""

    LK_NBLCK = 2
    held: dict[tuple[int, int, int], int] = {}

    def __init__(self) -> None:
        super().__init__("msvcrt")

    def locking(self, fd: int, mode: int, n: int) -> None:
        assert mode == self.LK_NBLCK and n == 1
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, os.lseek(fd, 0, os.SEEK_CUR))
        if self.held.get(key, fd) != fd:
            raise OSError(13, "Permission denied")
        self.held[key] = fd


def test_windows_state_dir_lock_is_one_byte_past_the_pid(tmp_path: Path) -> None:
    msvcrt = _Msvcrt()
    first = StateDirLock(str(tmp_path), WINDOWS, msvcrt)
    first.acquire()
    try:
        assert list(msvcrt.held)[0][2] == 1 << 20  # past the pid text, so the pid stays readable
        with pytest.raises(StateDirBusy, match=f"pid {os.getpid()}"):
            StateDirLock(str(tmp_path), WINDOWS, msvcrt).acquire()
    finally:
        first.release()


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def _polling() -> bool:
    return any(t.get_name() == "parent-watch" for t in asyncio.all_tasks())


async def test_windows_parent_watch_waits_on_the_process_handle() -> None:
    kernel32 = FakeKernel32()
    proc = _sleeper()
    seen: list[str] = []
    host_watch.watch_host(asyncio.get_running_loop(), seen.append, proc.pid, False, WINDOWS, kernel32)
    assert not _polling()  # a thread waits on the handles; nothing wakes the loop to look
    watched = kernel32.opened[:2]
    assert {pid for _, pid in watched} == {os.getppid(), proc.pid}
    assert all(access & 0x00100000 for access, _ in watched)  # SYNCHRONIZE: the handle can be waited on
    await asyncio.sleep(0.2)
    assert seen == []
    proc.kill()  # not reaped: a zombie has exited too
    await eventually(lambda: seen == ["parent exited"], 5, what="the handle wait sees the exit")
    await eventually(lambda: kernel32.open_handles == 0, 5, what="the handles are closed")
    proc.wait()


async def test_windows_parent_watch_of_a_gone_pid_ends_at_once_and_falls_back_to_a_poll_when_refused() -> None:
    gone = _sleeper()
    gone.kill()
    gone.wait()
    seen: list[str] = []
    host_watch.watch_host(asyncio.get_running_loop(), seen.append, gone.pid, False, WINDOWS, FakeKernel32())
    assert seen == ["parent exited"]

    proc = _sleeper()
    kernel32 = FakeKernel32(deny={proc.pid})
    refused: list[str] = []
    host_watch.watch_host(asyncio.get_running_loop(), refused.append, proc.pid, False, WINDOWS, kernel32)
    assert _polling() and kernel32.open_handles == 0
    proc.kill()
    proc.wait()
    # The poll asks process_alive, which asks OpenProcess again: now "no such process".
    kernel32.deny.clear()
    await eventually(lambda: refused == ["parent exited"], 5, what="the poll sees the exit")


async def test_windows_parent_watch_whose_wait_fails_keeps_watching_by_polling() -> None:
    proc = _sleeper()
    seen: list[str] = []
    kernel32 = FakeKernel32(fail_wait=True)
    host_watch.watch_host(asyncio.get_running_loop(), seen.append, proc.pid, False, WINDOWS, kernel32)
    await eventually(_polling, 5, what="a failed wait falls back to the poll")
    assert seen == []  # a failed wait never stops a healthy sidecar
    proc.kill()
    proc.wait()
    await eventually(lambda: seen == ["parent exited"], 5, what="the poll sees the exit")


def test_windows_process_alive_reads_the_exit_code_through_a_handle() -> None:
    kernel32 = FakeKernel32()
    proc = _sleeper()
    assert host_watch.process_alive(proc.pid, WINDOWS, kernel32)
    proc.kill()
    proc.wait()
    assert not host_watch.process_alive(proc.pid, WINDOWS, kernel32)
    assert host_watch.process_alive(1, WINDOWS, FakeKernel32(deny={1}))  # access denied: it exists
    assert kernel32.open_handles == 0
