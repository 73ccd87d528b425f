"""What a client knows about a sidecar that ended (issue 20; docs/protocol.md §1,
"When the sidecar exits"): the exit record, the status, the typed "sidecar gone"
error, the restart policy and what a restart did.

The same names exist in the C# and C++ clients (SidecarExit, SidecarStatus,
SidecarGone(Exception), RestartPolicy, RestartOutcome).
"""

from __future__ import annotations

import asyncio
import enum
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from sidecar.process_contract import REASON_KEY

__all__ = ["SidecarExit", "SidecarStatus", "SidecarGone", "WriteKept", "WriteNotApplied", "RestartPolicy",
           "RestartOutcome", "ResentBatch"]

#: The stable reasons a client sets (proto ErrorReason); never sent by the sidecar.
SIDECAR_GONE = "SIDECAR_GONE"
WRITE_KEPT = "WRITE_KEPT"
WRITE_NOT_APPLIED = "WRITE_NOT_APPLIED"


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
                         grpc.aio.Metadata((REASON_KEY, self.reason)), message)

    def __str__(self) -> str:
        return str(self.details())


class WriteKept(SidecarGone):
    """A tracked write the sidecar has not acknowledged, kept by its TrackedSession: the
    sidecar died with it in flight, or it was written while the sidecar was gone or
    restarting (docs/protocol.md §1, "Tracked writes across a restart").

    The handle sends it, under its delta ID and in order, once the restart re-opens the
    session: do not send it again. `landed` resolves with its ApplyDeltasResponse when it
    is in the session (once), or raises why not: `WriteNotApplied`, or the sidecar's
    refusal (an AioRpcError, as a refused apply). Reason WRITE_KEPT; `will_restart` is
    always true. C++: Status::write_kept(); C#: a later phase.
    """

    reason = WRITE_KEPT

    def __init__(self, gone: SidecarGone, session_id: str, delta_id: str, landed: asyncio.Future[Any]) -> None:
        self.session_id = session_id
        self.delta_id = delta_id
        self.landed = landed
        super().__init__(gone.endpoint, gone.exit, f"batch {delta_id!r} of session {session_id!r} is kept and "
                         "sent once the session is re-opened: do not send it again", will_restart=True)


class WriteNotApplied(grpc.aio.AioRpcError):  # type: ignore[misc]  # grpc: no stubs
    """A tracked write that is not in the session and that its handle will not send: the
    sidecar is gone with no restart to follow (no policy, the policy used up, or stopped),
    the restart lost the session, or the held queue was full. Nothing before it was
    dropped. The game decides: apply it again (a new batch), or resync. Code ABORTED,
    reason WRITE_NOT_APPLIED; never a SidecarGone, so a handler that carries on after
    SidecarGone does not swallow it."""

    reason = WRITE_NOT_APPLIED

    def __init__(self, session_id: str, delta_id: str, why: str, exit: SidecarExit | None = None) -> None:
        self.session_id = session_id
        self.delta_id = delta_id
        self.why = why
        self.exit = exit
        message = f"batch {delta_id!r} of session {session_id!r} was not applied: {why}"
        super().__init__(grpc.StatusCode.ABORTED, grpc.aio.Metadata(),
                         grpc.aio.Metadata((REASON_KEY, self.reason)), message)

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
    """A tracked batch the restart sent: the one in flight at the exit (resent under its
    delta ID), or one written while the sidecar was gone; and what sending it did."""

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
