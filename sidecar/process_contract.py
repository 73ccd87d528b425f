"""The process contract between a game and its sidecar (docs/protocol.md §1, §2 and
§4), in one place: the server (sidecar/lifecycle.py, sidecar/cli.py,
sidecar/servicers/status.py) and the Python client (sidecar/client/) both import
it, and the C++ and C# clients mirror it (docs/protocol.md names their files).

It holds what crosses the process boundary outside the protos: the environment a
game sets, the exit codes it reads, the one handshake line (written and parsed
here), the bearer-token header, and where a failed call's stable reason travels.
It imports nothing else of the sidecar, so either side can use it alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = [
    "AUTH_HEADER",
    "CONFIG_ENV",
    "ERROR_DOMAIN",
    "EXIT_CANNOT_START",
    "EXIT_OK",
    "EXIT_STATE_DIR_LOCKED",
    "EXIT_USAGE",
    "HANDSHAKE_SKIP_BYTES",
    "HANDSHAKE_SKIP_LINES",
    "Handshake",
    "MAGIC_ENV",
    "MAGIC_VALUE",
    "PROTOCOL_VERSION",
    "REASON_KEY",
    "SIDECAR_NAME",
    "SOCKET_DIR_PREFIX",
    "TOKEN_ENV",
    "is_handshake_line",
]

#: The protocol this sidecar and its clients speak: the handshake's `protocol`,
#: GetInfo's `protocol_versions`.
PROTOCOL_VERSION = 1
#: The handshake's `sidecar` value, and what tells a handshake from other lines.
SIDECAR_NAME = "game-sidecar"

# -- the environment a game sets (docs/protocol.md §1) ----------------------------
MAGIC_ENV = "GAME_SIDECAR_MAGIC"
MAGIC_VALUE = "game-sidecar-v1"
TOKEN_ENV = "GAME_SIDECAR_TOKEN"
CONFIG_ENV = "GAME_SIDECAR_CONFIG"

# -- exit codes of `serve` (docs/protocol.md §1, "Exit codes"); launchers tell them apart
EXIT_OK = 0
EXIT_CANNOT_START = 1
EXIT_USAGE = 2  # bad flags or config, or no magic variable
EXIT_STATE_DIR_LOCKED = 3  # another sidecar holds the --state-dir lock

#: The prefix of the fresh 0700 folder a sidecar makes for its Unix socket: the
#: launcher removes a folder so named when the process left it behind.
SOCKET_DIR_PREFIX = "game-sidecar-"

# -- every call (docs/protocol.md §2 and §4) -------------------------------------
#: The metadata key of `Bearer <token>` on every call but the health check.
AUTH_HEADER = "authorization"
#: The trailing-metadata key carrying a failed call's stable reason, for clients that
#: do not parse status details.
REASON_KEY = "sidecar-reason"
#: The `google.rpc.ErrorInfo` domain of every sidecar error.
ERROR_DOMAIN = "game-sidecar"

# -- the handshake (docs/protocol.md §1, "The handshake") -------------------------
#: Before the handshake, at most this many stdout lines and bytes are skipped: a
#: launcher that merges stderr into stdout sees log lines first, and a program that
#: is no sidecar must not keep it reading for ever.
HANDSHAKE_SKIP_LINES = 200
HANDSHAKE_SKIP_BYTES = 64 * 1024


@dataclass(frozen=True)
class Handshake:
    """The one line a sidecar writes on stdout once it serves."""

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

    def line(self) -> str:
        """The line as the sidecar writes it, newline included (keys in the documented order)."""
        doc: dict[str, object] = {
            "sidecar": SIDECAR_NAME,
            "protocol": self.protocol,
            "transport": self.transport,
            "address": self.address,
        }
        if self.token is not None:
            doc["token"] = self.token
        doc["pid"] = self.pid
        doc["version"] = self.version
        return json.dumps(doc, separators=(",", ":")) + "\n"

    @classmethod
    def parse(cls, line: str) -> Handshake:
        """Raises ValueError saying what is wrong."""
        doc = json.loads(line)
        if not isinstance(doc, dict) or doc.get("sidecar") != SIDECAR_NAME:
            raise ValueError(f'not a game-sidecar handshake (no "sidecar":"{SIDECAR_NAME}")')
        if doc.get("protocol") != PROTOCOL_VERSION:
            raise ValueError(f"unsupported protocol {doc.get('protocol')!r} (this client speaks {PROTOCOL_VERSION})")
        if doc.get("transport") not in ("unix", "tcp") or not isinstance(doc.get("address"), str):
            raise ValueError("transport must be unix or tcp, with an address")
        return cls(doc["transport"], doc["address"], int(doc.get("pid", 0)), str(doc.get("version", "")),
                   PROTOCOL_VERSION, doc.get("token"))


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
