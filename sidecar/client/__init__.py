"""The Python client: what a Python game (and our tests, tools and demo) imports to
start a sidecar and talk to it. This face is the whole public surface; the modules
behind it are private and may change.

    async with await SidecarProcess.launch() as sidecar:
        client = sidecar.client
        info = await client.get_info()

Behind it:
- `_client.py`: `SidecarClient`, the calls (the same operations as the C# and C++
  clients) and their typed keyword arguments;
- `_connection.py`: the channel to one process, swappable under the stubs, and the
  `Connection` seam through which a supervised restart swaps it;
- `_metadata.py`: the bearer token on every call, and a failed call's stable reason;
- `_supervisor.py`, `_launcher.py`, `_liveness.py`: `SidecarProcess`, launching,
  watching, stopping and restarting the process;
- `_launch_errors.py`: the ways a launch fails before the handshake;
- `_exits.py`: an exit, the status, `SidecarGone` and the write outcomes;
- `_tracked.py`: `TrackedSession`, writes kept across a restart.

The process contract the client shares with the sidecar (environment, exit codes,
the handshake line) is sidecar/process_contract.py.
"""

from sidecar.client._client import CHUNK_BYTES, RunFields, SessionOptionFields, SidecarClient
from sidecar.client._exits import (
    ResentBatch,
    RestartOutcome,
    RestartPolicy,
    SidecarExit,
    SidecarGone,
    SidecarStatus,
    WriteKept,
    WriteNotApplied,
)
from sidecar.client._launch_errors import (
    ExitedBeforeHandshake,
    HandshakeTimeout,
    LaunchError,
    MalformedHandshake,
    SpawnFailed,
    StateDirLocked,
)
from sidecar.client._metadata import RETRYABLE_REASONS, auth_interceptors, error_reason, is_retryable
from sidecar.client._supervisor import SidecarProcess
from sidecar.client._tracked import MAX_HELD_WRITES, SessionLost, TrackedSession
from sidecar.process_contract import Handshake

__all__ = [
    "LaunchError",
    "ExitedBeforeHandshake",
    "StateDirLocked",
    "SpawnFailed",
    "MalformedHandshake",
    "HandshakeTimeout",
    "Handshake",
    "SidecarProcess",
    "SidecarClient",
    "SidecarExit",
    "SidecarStatus",
    "SidecarGone",
    "WriteKept",
    "WriteNotApplied",
    "MAX_HELD_WRITES",
    "RestartPolicy",
    "RestartOutcome",
    "ResentBatch",
    "TrackedSession",
    "SessionLost",
    "error_reason",
    "is_retryable",
    "RETRYABLE_REASONS",
    "auth_interceptors",
    "SessionOptionFields",
    "RunFields",
    "CHUNK_BYTES",
]
