"""Starting one sidecar process the way a game does, and stopping it the way
docs/protocol.md §1 says: the pieces `SidecarProcess` (sidecar/client/_supervisor.py)
is made of.

`spawn` starts `python -m sidecar serve` (or a frozen build) with stdin/stdout
pipes and the magic variable, reads the handshake line with a timeout (lines
before it, stderr merged into stdout, are skipped up to a bound) and
keeps the last stderr lines; `stop_process` closes stdin (the sidecar exits on
EOF), waits, then terminates, then kills. The C# (SidecarProcess.cs) and C++
(sidecar_process) launchers do the same. The launch errors are in
sidecar/client/_launch_errors.py; the line, the environment and the exit codes are the process
contract's (sidecar/process_contract.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.client._launch_errors import (
    ExitedBeforeHandshake,
    HandshakeTimeout,
    MalformedHandshake,
    Skipped,
    SpawnFailed,
    StateDirLocked,
)
from sidecar.process_contract import (
    EXIT_STATE_DIR_LOCKED,
    HANDSHAKE_SKIP_BYTES,
    HANDSHAKE_SKIP_LINES,
    MAGIC_ENV,
    MAGIC_VALUE,
    SOCKET_DIR_PREFIX,
    TOKEN_ENV,
    Handshake,
    is_handshake_line,
)

__all__ = [
    "Child",
    "LaunchSpec",
    "spawn",
    "stop_process",
]

#: Stderr lines kept (a ring buffer): launch errors and SidecarExit carry them.
STDERR_TAIL_LINES = 20


class Child:
    """One sidecar process that has written its handshake."""

    def __init__(self, proc: asyncio.subprocess.Process, handshake: Handshake, token: str,
                 stderr_task: asyncio.Task[None], tail: collections.deque[str], owns_dir: bool) -> None:
        self.proc = proc
        self.handshake = handshake
        self.token = token
        self.stderr_task = stderr_task
        self.tail = tail
        #: The socket is in the fresh folder the sidecar made (default `--listen`).
        self.owns_dir = owns_dir

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def drained_tail(self, wait: float = 0.05) -> list[str]:
        """The last stderr lines, once the pipe's end is read (or after `wait` s)."""
        try:
            await asyncio.wait_for(asyncio.shield(self.stderr_task), wait)
        except TimeoutError:
            pass
        return list(self.tail)

    def remove_socket(self) -> None:
        """What the sidecar removes on an orderly exit, for when it could not: its
        0700 socket folder (default listen) or the socket file (`unix:PATH`)."""
        if self.handshake.transport != "unix":
            return
        path = Path(self.handshake.address)
        if self.owns_dir and path.parent.name.startswith(SOCKET_DIR_PREFIX):
            shutil.rmtree(path.parent, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


async def spawn(
    args: Sequence[str],
    *,
    command: Sequence[str] | None,
    env: dict[str, str] | None,
    token: str | None,
    timeout: float,
    on_stderr: Callable[[str], None] | None,
) -> Child:
    """Spawn `command` (default: this Python's `-m sidecar serve`) plus `args` and read
    its handshake. Raises SpawnFailed (the program could not be started),
    ExitedBeforeHandshake (StateDirLocked when another sidecar holds `--state-dir`),
    MalformedHandshake or HandshakeTimeout."""
    argv = [*(command or (sys.executable, "-m", "sidecar", "serve")), *args]
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault(MAGIC_ENV, MAGIC_VALUE)
    child_env.pop(TOKEN_ENV, None)
    if token is not None:
        child_env[TOKEN_ENV] = token
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=child_env,
        )
    except OSError as exc:  # not found, not executable: a launch error like the others
        raise SpawnFailed(argv[0], exc) from exc
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    stderr_task = asyncio.create_task(_drain(proc.stderr, tail, on_stderr))
    assert proc.stdout is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    skipped = Skipped()
    while True:
        try:
            line_bytes = await asyncio.wait_for(proc.stdout.readline(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            await stop_process(proc, 1.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            raise HandshakeTimeout(f"no handshake within {timeout:.1f} s{skipped.describe()}",
                                   "\n".join(tail)) from None
        except ValueError:  # one line over the reader's 64 KiB limit: past the bound as well
            await stop_process(proc, 1.0)
            raise MalformedHandshake("", "not a game-sidecar: a stdout line over 64 KiB before any handshake",
                                     "\n".join(tail)) from None
        if not line_bytes:
            returncode = await _wait(proc, 2.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            if returncode == EXIT_STATE_DIR_LOCKED:
                raise StateDirLocked(returncode, "\n".join(tail))
            raise ExitedBeforeHandshake(returncode, "\n".join(tail))
        line = line_bytes.decode("utf-8", "replace").strip()
        if is_handshake_line(line):
            break
        # stderr merged into stdout: a log line, kept and passed on like one.
        tail.append(line)
        if on_stderr is not None:
            on_stderr(line)
        if not skipped.add(line, len(line_bytes)):
            await stop_process(proc, 1.0)
            raise MalformedHandshake(
                line, f"not a game-sidecar: no handshake line within the first {HANDSHAKE_SKIP_LINES} lines / "
                f"{HANDSHAKE_SKIP_BYTES} bytes of stdout{skipped.describe()}", "\n".join(tail))
    try:
        handshake = Handshake.parse(line)
    except (ValueError, TypeError) as exc:
        await stop_process(proc, 1.0)
        await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
        raise MalformedHandshake(line, str(exc), "\n".join(tail)) from None
    effective = token if token is not None else handshake.token
    if effective is None:
        await stop_process(proc, 1.0)
        raise MalformedHandshake(line, "no token in handshake although none was given", "\n".join(tail))
    # Kept read after the handshake: with stderr merged into stdout the log lines
    # go on arriving there, and an unread pipe would block the sidecar when full.
    stdout_task = asyncio.create_task(_drain(proc.stdout, tail, on_stderr))
    return Child(proc, handshake, effective, asyncio.create_task(_join(stderr_task, stdout_task)), tail,
                 _default_listen(args))


@dataclass(frozen=True)
class LaunchSpec:
    """A launch as the game asked for it: what a restart launches again."""

    args: tuple[str, ...]
    command: tuple[str, ...] | None
    env: dict[str, str] | None
    token: str | None
    timeout: float
    on_stderr: Callable[[str], None] | None

    async def spawn(self) -> Child:
        return await spawn(self.args, command=self.command, env=self.env, token=self.token,
                           timeout=self.timeout, on_stderr=self.on_stderr)

    @property
    def state_dir(self) -> bool:
        return any(a == "--state-dir" or a.startswith("--state-dir=") for a in self.args)


def _default_listen(args: Sequence[str]) -> bool:
    """True when `args` leave `--listen` at its default, or say plain "unix"."""
    value: str | None = None
    for i, arg in enumerate(args):
        if arg == "--listen" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--listen="):
            value = arg.partition("=")[2]
    return value in (None, "", "unix")


async def _drain(stream: asyncio.StreamReader | None, tail: collections.deque[str],
                 on_line: Callable[[str], None] | None) -> None:
    if stream is None:
        return
    while line := await stream.readline():
        text = line.decode("utf-8", "replace").rstrip("\n")
        tail.append(text)
        if on_line is not None:
            on_line(text)


async def _join(*tasks: asyncio.Task[None]) -> None:
    for task in tasks:
        await task


async def _wait(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        return None


async def stop_process(proc: asyncio.subprocess.Process, grace: float,
                       unresponsive: Callable[[], Awaitable[bool]] | None = None) -> int:
    """The stop sequence of every client: close stdin (the sidecar exits on EOF),
    wait `grace`, SIGTERM, wait `grace`, SIGKILL. `unresponsive` (a liveness probe)
    runs while the first wait lasts: a hung process can honour neither EOF nor
    SIGTERM, so it is killed at once instead of holding the game for 2 x grace."""
    if proc.returncode is not None:
        return proc.returncode
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    outcome = await _wait_or_hung(proc, grace, unresponsive)
    if outcome == "running":
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        await _wait_or_hung(proc, grace, None)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    return await proc.wait()


async def _wait_or_hung(proc: asyncio.subprocess.Process, grace: float,
                        unresponsive: Callable[[], Awaitable[bool]] | None) -> str:
    """"exited", "hung" (the probe said so first) or "running" (after `grace`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    waiter = asyncio.ensure_future(proc.wait())
    probe = asyncio.ensure_future(unresponsive()) if unresponsive is not None else None
    try:
        while not waiter.done():
            left = deadline - loop.time()
            if left <= 0:
                return "running"
            watched: set[asyncio.Future[Any]] = {waiter}
            if probe is not None and not probe.done():
                watched.add(probe)
            done, _ = await asyncio.wait(watched, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if probe is not None and probe in done and not waiter.done() and probe.result():
                return "hung"
        return "exited"
    finally:
        for task in (waiter, probe):
            if task is not None and not task.done():
                task.cancel()
