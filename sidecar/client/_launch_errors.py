"""The ways a launch fails before the handshake (docs/protocol.md §1, "The
handshake"): the launch errors `sidecar.client` exports, and the count of what a
launcher skipped while it looked for the line.

The line itself (its text, its parse, its bounds) is the process contract's
(sidecar/process_contract.py); sidecar/client/_launcher.py starts and stops the process.
"""

from __future__ import annotations

from sidecar.process_contract import HANDSHAKE_SKIP_BYTES, HANDSHAKE_SKIP_LINES

__all__ = [
    "ExitedBeforeHandshake",
    "HandshakeTimeout",
    "LaunchError",
    "MalformedHandshake",
    "Skipped",
    "SpawnFailed",
    "StateDirLocked",
]

class LaunchError(Exception):
    """The sidecar could not be started. `stderr_tail` holds its last stderr lines."""

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        super().__init__(f"{message}\n--- sidecar stderr (tail) ---\n{stderr_tail}" if stderr_tail else message)
        self.stderr_tail = stderr_tail


class SpawnFailed(LaunchError):
    """The program could not be started at all (not found, not executable): `command`
    is what was run, the OSError is the cause. C++: `LaunchError::Kind::kSpawnFailed`."""

    def __init__(self, command: str, error: OSError) -> None:
        super().__init__(f"could not start {command}: {error.strerror or error}")
        self.command = command
        self.errno = error.errno


class ExitedBeforeHandshake(LaunchError):
    """The process ended before writing its handshake line (`returncode` says how)."""

    def __init__(self, returncode: int | None, stderr_tail: str) -> None:
        super().__init__(f"sidecar exited before handshake (exit code {returncode})", stderr_tail)
        self.returncode = returncode


class StateDirLocked(ExitedBeforeHandshake):
    """Another sidecar holds the `--state-dir` lock (exit code 3): one is already
    serving that journal. Stop it, reuse it, or pick another directory."""


class MalformedHandshake(LaunchError):
    """The handshake line was not a protocol-1 game-sidecar handshake, or no handshake
    line came within the bound of skipped lines (`line` holds the last line read)."""

    def __init__(self, line: str, why: str, stderr_tail: str) -> None:
        super().__init__(f"malformed handshake ({why}): {line[:200]!r}", stderr_tail)
        self.line = line


class HandshakeTimeout(LaunchError):
    """No handshake within the timeout; the process was stopped."""


class Skipped:
    """What came on stdout before the handshake."""

    def __init__(self) -> None:
        self.lines = 0
        self.bytes = 0
        self.last = ""

    def add(self, line: str, size: int) -> bool:
        """Counts one skipped line; False once past the bound."""
        self.lines += 1
        self.bytes += size
        self.last = line
        return self.lines <= HANDSHAKE_SKIP_LINES and self.bytes <= HANDSHAKE_SKIP_BYTES

    def describe(self) -> str:
        if not self.lines:
            return ""
        were = "line was" if self.lines == 1 else "lines were"
        return f"; {self.lines} stdout {were} not a handshake, the last: {self.last[:200]!r}"
