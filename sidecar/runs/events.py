"""What a run streams to the game, as domain values (the agent servicer turns
each into a `RunEvent` with the run ID and its sequence number)."""

from __future__ import annotations

import msgspec

from sidecar.context.contract import Chosen
from sidecar.projection.dealias import Mention

__all__ = [
    "Started",
    "Text",
    "AttemptRejected",
    "ActionChosen",
    "NotesChanged",
    "UsageReport",
    "Timings",
    "Finished",
    "RunEventValue",
]


class Started(msgspec.Struct, frozen=True, tag="started"):
    session_id: str
    actor_id: str
    profile: str
    model: str
    revision: int
    #: The sampling seed (RunRequest.seed, or the one the plan drew).
    seed: int = 0


class Text(msgspec.Struct, frozen=True, tag="text"):
    #: With the game's names for the entities, not the model's aliases (Dealiaser).
    text: str
    sentence_end: bool
    #: Decision attempt (1-based); always 1 for other inputs.
    attempt: int = 1
    #: The entities `text` names; spans in code points of `text`.
    mentions: tuple[Mention, ...] = ()


class AttemptRejected(msgspec.Struct, frozen=True, tag="rejected"):
    attempt: int
    reason: str


class ActionChosen(msgspec.Struct, frozen=True, tag="action"):
    chosen: Chosen


class NotesChanged(msgspec.Struct, frozen=True, tag="notes"):
    notes: str


class UsageReport(msgspec.Struct, frozen=True, tag="usage"):
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float


class Timings(msgspec.Struct, frozen=True):
    queued_ms: float
    prompt_build_ms: float
    first_token_ms: float
    total_ms: float


class Finished(msgspec.Struct, frozen=True, tag="finished"):
    #: "stop" or "length".
    finish_reason: str
    timings: Timings
    attempts: int
    #: The run's transcript entries and notes could not be journaled (the disk is
    #: full): they are in memory only until a later write of the session succeeds.
    transcript_unsaved: bool = False


RunEventValue = Started | Text | AttemptRejected | ActionChosen | NotesChanged | UsageReport | Finished
