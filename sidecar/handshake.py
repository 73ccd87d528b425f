"""The handshake line a sidecar writes on stdout once it serves (docs/protocol.md
§1, "The handshake"), how a launcher finds it among other lines, and the ways a
launch fails before one: the launch errors `sidecar.client` re-exports.

Kept apart from sidecar/launcher.py, which starts and stops the process: this is
the protocol's text and the errors a game sees, with no process in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = [
    "ExitedBeforeHandshake",
    "HANDSHAKE_SKIP_BYTES",
    "HANDSHAKE_SKIP_LINES",
    "Handshake",
    "HandshakeTimeout",
    "LaunchError",
    "MalformedHandshake",
    "Skipped",
    "StateDirBusy",
    "is_handshake_line",
]

#: Before the handshake, at most this many stdout lines and bytes are skipped
#: (docs/protocol.md §1, "The handshake"): a launcher that merges stderr into
#: stdout sees log lines first, and a program that is no sidecar must not keep
#: it reading for ever.
HANDSHAKE_SKIP_LINES = 200
HANDSHAKE_SKIP_BYTES = 64 * 1024


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
    """The handshake line was not a protocol-1 game-sidecar handshake, or no handshake
    line came within the bound of skipped lines (`line` holds the last line read)."""

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


def is_handshake_line(line: str) -> bool:
    """True for a JSON object with a "sidecar" key: the handshake (Handshake.parse
    then says whether it is a good one). Anything else before it is skipped."""
    if not line.startswith("{"):
        return False
    try:
        doc = json.loads(line)
    except ValueError:
        return False
    return isinstance(doc, dict) and "sidecar" in doc


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
