"""The Python launcher: start a sidecar the way a game does and stop it the way
docs/protocol.md §1 says.

    async with await SidecarProcess.launch() as sidecar:
        info = await sidecar.client.get_info()

`launch` spawns `python -m sidecar serve` (or a frozen build) with stdin/stdout
pipes and the magic variable, reads the one handshake line with a timeout and
forwards stderr; `close` closes stdin (the sidecar exits on EOF), waits, then
terminates, then kills. The C# (SidecarProcess.cs) and C++ (sidecar_process)
launchers do the same. `sidecar.client` re-exports everything here.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.lifecycle import EXIT_STATE_DIR_BUSY, MAGIC_ENV, MAGIC_VALUE, TOKEN_ENV

if TYPE_CHECKING:
    from sidecar.client import SidecarClient

__all__ = [
    "LaunchError",
    "ExitedBeforeHandshake",
    "StateDirBusy",
    "MalformedHandshake",
    "HandshakeTimeout",
    "Handshake",
    "SidecarProcess",
]

STDERR_TAIL_LINES = 40


class LaunchError(Exception):
    """The sidecar could not be started. `stderr_tail` holds its last stderr lines."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(f"{message}\n--- sidecar stderr (tail) ---\n{stderr_tail}" if stderr_tail else message)
        self.stderr_tail = stderr_tail


class ExitedBeforeHandshake(LaunchError):
    """The process ended before writing its handshake line (`returncode` says how)."""

    def __init__(self, returncode: int | None, stderr_tail: str) -> None:
        super().__init__(f"sidecar exited before handshake (exit code {returncode})", stderr_tail)
        self.returncode = returncode


class StateDirBusy(ExitedBeforeHandshake):
    """Another sidecar holds the `--state-dir` lock (exit code 3): one is already
    serving that journal. Stop it, reuse it, or pick another directory."""


class MalformedHandshake(LaunchError):
    """The first stdout line was not a protocol-1 game-sidecar handshake (`line` holds it)."""

    def __init__(self, line: str, why: str, stderr_tail: str) -> None:
        super().__init__(f"malformed handshake ({why}): {line[:200]!r}", stderr_tail)
        self.line = line


class HandshakeTimeout(LaunchError):
    """No handshake within the timeout; the process was stopped."""


@dataclass(frozen=True)
class Handshake:
    transport: str
    address: str
    pid: int
    version: str
    protocol: int
    #: Present only when the sidecar generated the token.
    token: str | None = None

    @property
    def target(self) -> str:
        return f"unix:{self.address}" if self.transport == "unix" else self.address

    @classmethod
    def parse(cls, line: str) -> Handshake:
        """Raises ValueError saying what is wrong."""
        doc = json.loads(line)
        if not isinstance(doc, dict) or doc.get("sidecar") != "game-sidecar":
            raise ValueError('not a game-sidecar handshake (no "sidecar":"game-sidecar")')
        if doc.get("protocol") != 1:
            raise ValueError(f"unsupported protocol {doc.get('protocol')!r} (this client speaks 1)")
        if doc.get("transport") not in ("unix", "tcp") or not isinstance(doc.get("address"), str):
            raise ValueError("transport must be unix or tcp, with an address")
        return cls(doc["transport"], doc["address"], int(doc.get("pid", 0)), str(doc.get("version", "")), 1,
                   doc.get("token"))


class SidecarProcess:
    """A sidecar child process, launched the way a game launches it."""

    def __init__(self, proc: asyncio.subprocess.Process, handshake: Handshake, token: str,
                 stderr_task: asyncio.Task[None], tail: collections.deque[str]) -> None:
        self.proc = proc
        self.handshake = handshake
        self.token = token
        self._stderr_task = stderr_task
        self._tail = tail
        # Here, not at the top: sidecar.client imports this module to re-export it.
        from sidecar.client import SidecarClient

        self.client: SidecarClient = SidecarClient(handshake.target, token)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self) -> str:
        return "\n".join(self._tail)

    @classmethod
    async def launch(
        cls,
        args: Sequence[str] = (),
        *,
        command: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        on_stderr: Callable[[str], None] | None = None,
    ) -> SidecarProcess:
        """Spawn `command` (default: this Python's `-m sidecar serve`) plus `args`.

        `token`: sent as GAME_SIDECAR_TOKEN; None lets the sidecar generate one.
        Raises ExitedBeforeHandshake (StateDirBusy when another sidecar holds
        `--state-dir`), MalformedHandshake or HandshakeTimeout.
        """
        argv = [*(command or (sys.executable, "-m", "sidecar", "serve")), *args]
        child_env = dict(os.environ if env is None else env)
        child_env.setdefault(MAGIC_ENV, MAGIC_VALUE)
        child_env.pop(TOKEN_ENV, None)
        if token is not None:
            child_env[TOKEN_ENV] = token
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=child_env,
        )
        tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        stderr_task = asyncio.create_task(_drain(proc.stderr, tail, on_stderr))
        assert proc.stdout is not None
        try:
            line_bytes = await asyncio.wait_for(proc.stdout.readline(), timeout)
        except TimeoutError:
            await _stop(proc, 1.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            raise HandshakeTimeout(f"no handshake within {timeout:.1f} s", "\n".join(tail)) from None
        if not line_bytes:
            returncode = await _wait(proc, 2.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            if returncode == EXIT_STATE_DIR_BUSY:
                raise StateDirBusy(returncode, "\n".join(tail))
            raise ExitedBeforeHandshake(returncode, "\n".join(tail))
        line = line_bytes.decode("utf-8", "replace").strip()
        try:
            handshake = Handshake.parse(line)
        except (ValueError, TypeError) as exc:
            await _stop(proc, 1.0)
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
            raise MalformedHandshake(line, str(exc), "\n".join(tail)) from None
        effective = token if token is not None else handshake.token
        if effective is None:
            await _stop(proc, 1.0)
            raise MalformedHandshake(line, "no token in handshake although none was given", "\n".join(tail))
        return cls(proc, handshake, effective, stderr_task, tail)

    async def close(self, timeout: float = 3.0) -> int | None:
        """Close stdin (the sidecar exits on EOF), wait, then terminate, then kill."""
        await self.client.close()
        code = await _stop(self.proc, timeout)
        try:
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
        except TimeoutError:
            self._stderr_task.cancel()
        return code

    async def __aenter__(self) -> SidecarProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _drain(stream: asyncio.StreamReader | None, tail: collections.deque[str],
                 on_line: Callable[[str], None] | None) -> None:
    if stream is None:
        return
    while line := await stream.readline():
        text = line.decode("utf-8", "replace").rstrip("\n")
        tail.append(text)
        if on_line is not None:
            on_line(text)


async def _wait(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        return None


async def _stop(proc: asyncio.subprocess.Process, timeout: float) -> int | None:
    if proc.returncode is not None:
        return proc.returncode
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    code = await _wait(proc, timeout)
    if code is None:
        proc.terminate()
        code = await _wait(proc, timeout)
    if code is None:
        proc.kill()
        code = await proc.wait()
    return code
