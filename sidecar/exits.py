"""What a client knows about a sidecar that ended (issue 20; docs/protocol.md §1,
"When the sidecar exits"): the exit record, the status, the typed "sidecar gone"
error, the restart policy and what a restart did.

The same names exist in the C# and C++ clients (SidecarExit, SidecarStatus,
SidecarGone(Exception), RestartPolicy, RestartOutcome).
"""

from __future__ import annotations

import enum
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc

__all__ = ["SidecarExit", "SidecarStatus", "SidecarGone", "RestartPolicy", "RestartOutcome", "ResentBatch"]

#: The stable reason a client sets (proto ErrorReason.SIDECAR_GONE); never sent by the sidecar.
SIDECAR_GONE = "SIDECAR_GONE"


@dataclass(frozen=True)
class SidecarExit:
    """How one sidecar process ended."""

    #: The exit code; None when a signal ended it.
    code: int | None
    #: The signal that ended it (POSIX), else None.
    signal: int | None
    #: Its last stderr lines (at most 20), oldest first.
    stderr_tail: tuple[str, ...] = ()
    #: The game asked for the stop (stop()/close()/`async with` exit).
    requested: bool = False
    #: The liveness check declared it hung and the client killed it.
    hung: bool = False
    pid: int = 0

    @classmethod
    def from_returncode(cls, returncode: int, tail: Sequence[str], *, requested: bool, hung: bool,
                        pid: int) -> SidecarExit:
        """asyncio reports "killed by signal N" as returncode -N."""
        if returncode < 0:
            return cls(None, -returncode, tuple(tail), requested, hung, pid)
        return cls(returncode, None, tuple(tail), requested, hung, pid)

    @property
    def orderly(self) -> bool:
        """Exited with code 0 because the game asked: the only exit that is not a failure."""
        return self.requested and self.code == 0

    def describe(self) -> str:
        """One line, e.g. "killed by signal 9 (SIGKILL), not requested; last stderr: ..."."""
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = "?"
            how = f"killed by signal {self.signal} ({name})"
        else:
            how = f"exited with code {self.code}"
        parts = [how, "requested" if self.requested else "not requested"]
        if self.hung:
            parts.append("declared hung (no answer to the liveness check)")
        text = ", ".join(parts)
        if self.stderr_tail:
            text += f"; last stderr: {self.stderr_tail[-1][:300]}"
        return text


class SidecarStatus(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    STOPPED = "stopped"
    FAILED = "failed"


class SidecarGone(grpc.aio.AioRpcError):  # type: ignore[misc]  # grpc: no stubs
    """The sidecar process has exited (or was declared hung and killed).

    Raised by every call in flight when it ends and by every new call until a
    restart is READY. It is an `AioRpcError` with code UNAVAILABLE and the reason
    SIDECAR_GONE (`error_reason(e) == "SIDECAR_GONE"`), so handlers written for gRPC
    errors see it too; it is distinct from PROVIDER_UNAVAILABLE, which the sidecar
    sends about a model. `exit` is None only while the exit is being recorded.
    `will_restart`: a RestartPolicy is relaunching it (wait for READY, then call
    again); False when the game stopped it, without a policy, or once the policy
    is used up (status FAILED). C#'s `SidecarGoneException.WillRestart`.
    """

    reason = SIDECAR_GONE

    def __init__(self, endpoint: str, exit: SidecarExit | None, detail: str = "", will_restart: bool = False) -> None:
        self.endpoint = endpoint
        self.exit = exit
        self.will_restart = will_restart
        what = exit.describe() if exit is not None else "the process is gone"
        message = f"sidecar at {endpoint} is gone: {what}" + (f" ({detail})" if detail else "")
        super().__init__(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
                         grpc.aio.Metadata(("sidecar-reason", SIDECAR_GONE)), message)

    def __str__(self) -> str:
        return str(self.details())


@dataclass(frozen=True)
class RestartPolicy:
    """Opt-in supervised restart: at most `max_restarts` within `window_s`, waiting
    `backoff_initial_s` before the first and doubling up to `backoff_max_s`."""

    max_restarts: int = 3
    window_s: float = 60.0
    backoff_initial_s: float = 0.25
    backoff_max_s: float = 5.0

    def backoff(self, attempt: int) -> float:
        """The wait before restart number `attempt` (1-based) in the current window."""
        return float(min(self.backoff_max_s, self.backoff_initial_s * 2 ** max(0, attempt - 1)))


@dataclass(frozen=True)
class ResentBatch:
    """A tracked batch sent without an acknowledgement before the exit, and what
    resending it under its delta ID did."""

    session_id: str
    delta_id: str
    #: True: the batch is in the session now (once); `revision` is where it landed.
    applied: bool
    #: The sidecar had applied it before the exit (the resend was a replay).
    replayed: bool = False
    revision: int = 0
    #: Why it was not applied (the session was lost, or the sidecar refused it).
    error: str = ""


@dataclass(frozen=True)
class RestartOutcome:
    """What a restart did; given to `SidecarProcess.on_restart` callbacks."""

    #: The exit that caused the restart.
    exit: SidecarExit
    #: Restarts within the policy's window, this one included.
    attempt: int
    #: True when tracked sessions are gone (no --state-dir, or not found after the
    #: restart): the game resyncs each of `lost` with ReplaceState.
    sessions_lost: bool
    lost: tuple[str, ...] = ()
    resumed: tuple[str, ...] = ()
    resent: tuple[ResentBatch, ...] = field(default=())
