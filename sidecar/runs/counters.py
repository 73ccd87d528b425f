"""Per-session run counters (runs, tokens, cost, errors by reason; transcript summaries apart): kept in the
session (`usage`, `errors_by_reason`, persisted with it) and reported by
GetInfo(include_stats). Best effort: a session closed meanwhile counts nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sidecar.errors import SessionNotFound, SidecarError
from sidecar.llm.types import Completion
from sidecar.runs.attempts import Progress
from sidecar.state.model import ActorUsage, Session

if TYPE_CHECKING:
    from sidecar.state.store import SessionStore

__all__ = ["RunCounters"]

log = logging.getLogger("sidecar.runs")


class RunCounters:
    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def _session(self, session_id: str) -> Session | None:
        try:
            return self._store.get(session_id)
        except SidecarError:
            return None

    def _usage(self, session_id: str, actor_id: str) -> ActorUsage | None:
        session = self._session(session_id)
        return None if session is None else session.usage.setdefault(actor_id, ActorUsage())

    def usage(self, session_id: str, actor_id: str, progress: Progress) -> None:
        """One run that reached the model, with what it used."""
        usage = self._usage(session_id, actor_id)
        if usage is None:
            return
        usage.runs += 1
        usage.prompt_tokens += progress.prompt_tokens
        usage.completion_tokens += progress.completion_tokens
        usage.cached_tokens += progress.cached_tokens
        usage.cost_usd += progress.cost_usd

    def summary(self, session_id: str, actor_id: str, done: Completion) -> None:
        """One transcript summary request (compaction), counted apart from the runs: it is
        journaled with the session's next write (the compaction's own, when one lands)."""
        usage = self._usage(session_id, actor_id)
        if usage is None:
            return
        usage.summaries += 1
        usage.summary_prompt_tokens += done.prompt_tokens
        usage.summary_completion_tokens += done.completion_tokens
        usage.summary_cost_usd += done.cost_usd

    def error(self, session_id: str, reason: str) -> None:
        session = self._session(session_id)
        if session is not None:
            session.errors_by_reason[reason] = session.errors_by_reason.get(reason, 0) + 1

    async def persist(self, session_id: str) -> bool:
        """Write the counters and transcripts through (the store's journal, when it
        has one). True when that failed (a full disk, a closing store): what runs
        changed is held in memory only, and the run that ends says so
        (RunFinished.transcript_unsaved). A session closed meanwhile has nothing to save."""
        if self._session(session_id) is None:
            return False
        try:
            await self._store.persist_extras(session_id)
        except SessionNotFound:
            return False
        except Exception as exc:  # noqa: BLE001 - the run is done either way; its outcome tells
            log.warning(
                "transcripts and counters not journaled",
                exc_info=True,
                extra={"fields": {"session_id": session_id, "reason": getattr(exc, "reason", type(exc).__name__)}},
            )
            return True
        return False

    def stats(self, live: Iterable[tuple[str, bool]]) -> list[dict[str, Any]]:
        """Per session: runs, tokens, cost, errors by reason (GetInfo). `live`: (session
        ID, running) of every queued or running run."""
        live = list(live)
        out = []
        for session_id in self._store.session_ids():
            session = self._session(session_id)
            if session is None:
                continue
            usage = list(session.usage.values())
            out.append(
                {
                    "session_id": session_id,
                    "revision": session.revision,
                    "runs": sum(u.runs for u in usage),
                    "prompt_tokens": sum(u.prompt_tokens for u in usage),
                    "completion_tokens": sum(u.completion_tokens for u in usage),
                    "cached_tokens": sum(u.cached_tokens for u in usage),
                    "cost_usd": sum(u.cost_usd for u in usage),
                    "summaries": sum(u.summaries for u in usage),
                    "summary_prompt_tokens": sum(u.summary_prompt_tokens for u in usage),
                    "summary_completion_tokens": sum(u.summary_completion_tokens for u in usage),
                    "summary_cost_usd": sum(u.summary_cost_usd for u in usage),
                    "errors_by_reason": dict(session.errors_by_reason),
                    "queued": sum(1 for sid, running in live if not running and sid == session_id),
                    "running": sum(1 for sid, running in live if running and sid == session_id),
                }
            )
        return out
