"""The store's checks of a write, besides the batch's own (`validate_batch`):
session IDs and capacity, a delta ID's replay (the idempotency of ApplyDelta,
by the digest of the batch it was applied with), and the revision a write
moves the session to.

Kept apart from sidecar/state/store.py so each write there reads as its order
(check -> journal -> memory) in a few lines; every function here only reads
and raises, so calling one before the journal changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from sidecar.config import StateLimits
from sidecar.errors import CapacityExceeded, DeltaIdReused, InvalidRequest, LimitExceeded
from sidecar.state.model import MAX_REVISION, Session, World
from sidecar.state.ops import Op, world_to_ops
from sidecar.state.validate import validate_batch

__all__ = [
    "check_capacity",
    "check_id",
    "next_revision",
    "replayed",
    "resync_ops",
    "snapshot_limits",
    "target_revision",
]


def check_id(session_id: str, limits: StateLimits) -> None:
    if len(session_id) > limits.max_id_length:
        raise LimitExceeded(
            f"session_id has {len(session_id)} characters, over max_id_length={limits.max_id_length}",
            metadata={"limit": "max_id_length"},
        )


def check_capacity(open_sessions: int, limits: StateLimits) -> None:
    if open_sessions >= limits.max_sessions:
        raise CapacityExceeded(
            f"{open_sessions} sessions open, max_sessions={limits.max_sessions}",
            metadata={"limit": "max_sessions"},
        )


def replayed(s: Session, delta_id: str, digest: bytes, limits: StateLimits) -> int | None:
    """The revision a remembered `delta_id` was applied at (the batch is a replay), or
    None for a delta ID fit to be remembered; DeltaIdReused when it was remembered
    with other ops (why: `SessionStore.apply`)."""
    done = s.recent_deltas.get(delta_id)
    if done is not None:
        # No stored digest: remembered before digests were kept; a replay as before.
        if s.delta_digests.get(delta_id, digest) != digest:
            raise DeltaIdReused(
                f"delta_id {delta_id!r} was applied at revision {done} with other ops; "
                "nothing was applied: a retry must resend the same batch, a new batch "
                f"needs a delta_id not among the session's last {limits.delta_id_window}",
                revision=done,
            )
        return done
    if len(delta_id) > limits.max_id_length:
        raise LimitExceeded(
            f"delta_id has {len(delta_id)} characters, over max_id_length={limits.max_id_length}",
            metadata={"limit": "max_id_length"},
        )
    return None


def next_revision(s: Session) -> int:
    """The revision a delta moves the session to."""
    revision = s.revision + 1
    if revision > MAX_REVISION:
        raise LimitExceeded(
            f"the session is at revision {s.revision}, the highest there is (MAX_REVISION = 2^53-1); "
            "ReplaceState with allow_rewind to go on",
            metadata={"limit": "max_revision", "current_revision": str(s.revision)},
        )
    return revision


def target_revision(current: int, wanted: int, allow_rewind: bool) -> int:
    """The revision a resync (ReplaceState) moves the session to; `wanted` 0 = current + 1."""
    if not 0 <= wanted <= MAX_REVISION:
        raise InvalidRequest(f"revision {wanted} is outside 0..{MAX_REVISION} (2^53-1)")
    if wanted == 0:
        if current + 1 > MAX_REVISION:
            raise InvalidRequest(
                f"the session is at revision {current}, the highest there is; set a revision with allow_rewind",
                metadata={"current_revision": str(current)},
            )
        return current + 1
    if wanted <= current and not allow_rewind:
        raise InvalidRequest(
            f"revision {wanted} does not move past the current revision {current}; set allow_rewind to go back",
            metadata={"current_revision": str(current)},
        )
    return wanted


def resync_ops(world: World, limits: StateLimits) -> list[Op]:
    """`world` as the one batch a resync journals and applies, checked whole."""
    ops = world_to_ops(world)
    validate_batch(World(), ops, snapshot_limits(limits, ops), fresh_ids=world.entities, history_refs=False)
    return ops


def snapshot_limits(limits: StateLimits, ops: Sequence[Op]) -> StateLimits:
    """A snapshot is one batch, but the batch-size limit is for deltas; the
    entity and collection limits still apply."""
    return msgspec.structs.replace(limits, max_ops_per_batch=max(limits.max_ops_per_batch, len(ops)))
