"""Every error the sidecar raises on purpose, and how each reaches the game.

The tree (one root; servicers turn each into a gRPC status, a stable reason
string and google.rpc.ErrorInfo metadata; see `sidecar.servicers.status`)::

    SidecarError                       INTERNAL          INTERNAL
    ├── Unauthenticated                UNAUTHENTICATED   UNAUTHENTICATED
    ├── InvalidRequest                 INVALID_ARGUMENT  INVALID_REQUEST
    │   ├── InvalidDelta               INVALID_ARGUMENT  INVALID_DELTA
    │   ├── UnknownEntity              INVALID_ARGUMENT  UNKNOWN_ENTITY
    │   ├── InvalidBlob                INVALID_ARGUMENT  INVALID_BLOB
    │   └── InvalidCursor              INVALID_ARGUMENT  INVALID_CURSOR
    ├── LimitExceeded                  INVALID_ARGUMENT  LIMIT_EXCEEDED
    │   └── CapacityExceeded           RESOURCE_EXHAUSTED LIMIT_EXCEEDED
    ├── SessionNotFound                NOT_FOUND         SESSION_NOT_FOUND
    ├── SessionExists                  ALREADY_EXISTS    SESSION_EXISTS
    ├── StaleRevision                  ABORTED           STALE_REVISION
    ├── DeltaIdReused                  ALREADY_EXISTS    DELTA_ID_REUSED
    ├── RevisionNotReached             FAILED_PRECONDITION REVISION_NOT_REACHED
    ├── RunNotFound                    NOT_FOUND         RUN_NOT_FOUND
    ├── RunCancelled                   CANCELLED         RUN_CANCELLED
    ├── QueueFull                      RESOURCE_EXHAUSTED QUEUE_FULL
    ├── ProfileNotFound                NOT_FOUND         PROFILE_NOT_FOUND
    ├── InvalidChoice                  FAILED_PRECONDITION INVALID_CHOICE
    ├── PrivacyLeakBlocked             INTERNAL          PRIVACY_LEAK_BLOCKED
    ├── ShuttingDown                   UNAVAILABLE       SHUTTING_DOWN
    ├── StorageFull                    RESOURCE_EXHAUSTED STORAGE_FULL
    ├── ModelUnavailable               UNAVAILABLE       MODEL_UNAVAILABLE
    │   └── ModelNotInstalled          FAILED_PRECONDITION MODEL_NOT_INSTALLED
    └── ProviderError                  INTERNAL          PROVIDER_ERROR
        ├── ProviderTimeout            DEADLINE_EXCEEDED PROVIDER_TIMEOUT
        ├── ProviderRateLimited        RESOURCE_EXHAUSTED PROVIDER_RATE_LIMITED
        ├── ProviderUnavailable        UNAVAILABLE       PROVIDER_UNAVAILABLE
        ├── ProviderAuth               PERMISSION_DENIED PROVIDER_AUTH
        ├── ProviderBadRequest         INVALID_ARGUMENT  PROVIDER_BAD_REQUEST
        ├── ContextWindowExceeded      INVALID_ARGUMENT  CONTEXT_WINDOW_EXCEEDED
        └── ContentFiltered            FAILED_PRECONDITION CONTENT_FILTERED

Set by the clients, never raised by the sidecar (it is gone when these apply;
the first two carry the exit: code or signal, last stderr lines, and whether the
game asked for the stop; sidecar/client/_exits.py, docs/protocol.md §1)::

    SidecarGone                        UNAVAILABLE       SIDECAR_GONE
    └── WriteKept                      UNAVAILABLE       WRITE_KEPT
    WriteNotApplied                    ABORTED           WRITE_NOT_APPLIED

This module imports neither grpc nor generated code: domain code raises these.
`code` is the name of a `grpc.StatusCode` member; `reason` is the name of an
`ErrorReason` value in proto/sidecar/v1/errors.proto without its prefix.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "SidecarError",
    "Unauthenticated",
    "InvalidRequest",
    "InvalidDelta",
    "UnknownEntity",
    "InvalidBlob",
    "InvalidCursor",
    "LimitExceeded",
    "CapacityExceeded",
    "SessionNotFound",
    "SessionExists",
    "StaleRevision",
    "DeltaIdReused",
    "RevisionNotReached",
    "RunNotFound",
    "RunCancelled",
    "QueueFull",
    "ProfileNotFound",
    "InvalidChoice",
    "PrivacyLeakBlocked",
    "ShuttingDown",
    "StorageFull",
    "ModelUnavailable",
    "ModelNotInstalled",
    "ProviderError",
    "ProviderTimeout",
    "ProviderRateLimited",
    "ProviderUnavailable",
    "ProviderAuth",
    "ProviderBadRequest",
    "ContextWindowExceeded",
    "ContentFiltered",
]


class SidecarError(Exception):
    """Root of every deliberate error. Unexpected exceptions become INTERNAL too."""

    code = "INTERNAL"
    reason = "INTERNAL"

    def __init__(self, message: str, *, metadata: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: Extra machine-readable facts, sent as google.rpc.ErrorInfo metadata.
        self.metadata: dict[str, str] = dict(metadata or {})


class Unauthenticated(SidecarError):
    """Missing or wrong `authorization: Bearer <token>` metadata (nothing was touched)."""

    code = "UNAUTHENTICATED"
    reason = "UNAUTHENTICATED"


class InvalidRequest(SidecarError):
    """A request field is missing or malformed."""

    code = "INVALID_ARGUMENT"
    reason = "INVALID_REQUEST"


class InvalidDelta(InvalidRequest):
    """A delta op is malformed; the message names the op index and the problem."""

    reason = "INVALID_DELTA"


class UnknownEntity(InvalidRequest):
    """An op, field reference or run input names an entity the session does not hold."""

    reason = "UNKNOWN_ENTITY"


class InvalidBlob(InvalidRequest):
    """An ImportSession blob is garbage, truncated, or from a newer format version."""

    reason = "INVALID_BLOB"


class InvalidCursor(InvalidRequest):
    """A ReadTranscript cursor is stale or belongs to another transcript."""

    reason = "INVALID_CURSOR"


class LimitExceeded(SidecarError):
    """A request is over a configured size limit (metadata "limit" names it)."""

    code = "INVALID_ARGUMENT"
    reason = "LIMIT_EXCEEDED"


class CapacityExceeded(LimitExceeded):
    """The session is full (entity count and the like); the request itself was fine."""

    code = "RESOURCE_EXHAUSTED"


class SessionNotFound(SidecarError):
    """No session with that ID (it was never opened, was closed, or was lost in a restart)."""

    code = "NOT_FOUND"
    reason = "SESSION_NOT_FOUND"


class SessionExists(SidecarError):
    """ImportSession into an existing session without `overwrite`."""

    code = "ALREADY_EXISTS"
    reason = "SESSION_EXISTS"


class StaleRevision(SidecarError):
    """base_revision is not the session's revision (metadata "current_revision")."""

    code = "ABORTED"
    reason = "STALE_REVISION"

    def __init__(self, message: str, *, current_revision: int) -> None:
        super().__init__(message, metadata={"current_revision": str(current_revision)})
        self.current_revision = current_revision


class DeltaIdReused(SidecarError):
    """A delta_id already applied to the session with a different batch (metadata "revision").

    A retry of the same batch is a replay (OK, `replayed`); the same ID over other
    ops is a game that restarted its delta counter, and applying nothing in silence
    would lose its batch.
    """

    code = "ALREADY_EXISTS"
    reason = "DELTA_ID_REUSED"

    def __init__(self, message: str, *, revision: int) -> None:
        super().__init__(message, metadata={"revision": str(revision)})
        self.revision = revision


class RevisionNotReached(SidecarError):
    """Run.min_revision was not reached within the wait."""

    code = "FAILED_PRECONDITION"
    reason = "REVISION_NOT_REACHED"


class RunNotFound(SidecarError):
    """CancelRun named a run that is not queued or running."""

    code = "NOT_FOUND"
    reason = "RUN_NOT_FOUND"


class RunCancelled(SidecarError):
    """The run was cancelled by CancelRun, by the client, or by its session closing."""

    code = "CANCELLED"
    reason = "RUN_CANCELLED"


class QueueFull(SidecarError):
    """The run queue is full (metadata "queue_length")."""

    code = "RESOURCE_EXHAUSTED"
    reason = "QUEUE_FULL"


class ProfileNotFound(SidecarError):
    """A run or session names a model profile the config does not define."""

    code = "NOT_FOUND"
    reason = "PROFILE_NOT_FOUND"


class InvalidChoice(SidecarError):
    """A decision got no usable choice within its attempts."""

    code = "FAILED_PRECONDITION"
    reason = "INVALID_CHOICE"


class PrivacyLeakBlocked(SidecarError):
    """An outgoing model request contained an engine ID; it was not sent. A bug, logged."""

    code = "INTERNAL"
    reason = "PRIVACY_LEAK_BLOCKED"


class ShuttingDown(SidecarError):
    """The sidecar is draining and takes no new work."""

    code = "UNAVAILABLE"
    reason = "SHUTTING_DOWN"


class StorageFull(SidecarError):
    """The disk holding the state dir is full: the write was not journaled, so it
    was neither applied nor acknowledged. Retrying after space is freed works."""

    code = "RESOURCE_EXHAUSTED"
    reason = "STORAGE_FULL"


class ModelUnavailable(SidecarError):
    """The model could not be loaded (e.g. the `local` extra is not installed)."""

    code = "UNAVAILABLE"
    reason = "MODEL_UNAVAILABLE"


class ModelNotInstalled(ModelUnavailable):
    """The embedded model's runtime or weights are not on this machine: retrying
    will not help until they are installed (or another profile is used)."""

    code = "FAILED_PRECONDITION"
    reason = "MODEL_NOT_INSTALLED"


class ProviderError(SidecarError):
    """The provider answered with something unusable (malformed chunk, unknown failure)."""

    code = "INTERNAL"
    reason = "PROVIDER_ERROR"


class ProviderTimeout(ProviderError):
    """No first token, or no end, within the run's timeouts or the gRPC deadline."""

    code = "DEADLINE_EXCEEDED"
    reason = "PROVIDER_TIMEOUT"


class ProviderRateLimited(ProviderError):
    """The provider rate-limited the call (HTTP 429) after retries."""

    code = "RESOURCE_EXHAUSTED"
    reason = "PROVIDER_RATE_LIMITED"


class ProviderUnavailable(ProviderError):
    """The provider is down (5xx) or the connection dropped, after retries and fallbacks."""

    code = "UNAVAILABLE"
    reason = "PROVIDER_UNAVAILABLE"


class ProviderAuth(ProviderError):
    """The provider refused the credentials (HTTP 401/403)."""

    code = "PERMISSION_DENIED"
    reason = "PROVIDER_AUTH"


class ProviderBadRequest(ProviderError):
    """The provider refused the request itself (unknown model, bad parameters)."""

    code = "INVALID_ARGUMENT"
    reason = "PROVIDER_BAD_REQUEST"


class ContextWindowExceeded(ProviderError):
    """The prompt does not fit the model's context window."""

    code = "INVALID_ARGUMENT"
    reason = "CONTEXT_WINDOW_EXCEEDED"


class ContentFiltered(ProviderError):
    """The provider's content filter blocked the request or the reply."""

    code = "FAILED_PRECONDITION"
    reason = "CONTENT_FILTERED"
