"""Closing a session: the one place that knows what a session leaves behind.

A closed session's runs are cancelled, its store slot (and journal rows) go, and
the context engine forgets its caches. Servicers call `close_session` and
convert; they never sequence these steps themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the servicers import this module; the engines load when the app is built
    from sidecar.context import ContextEngine
    from sidecar.state.store import SessionStore

__all__ = ["close_session"]


class _Runs(Protocol):
    async def cancel_session(self, session_id: str) -> int: ...


async def close_session(session_id: str, store: SessionStore, runs: _Runs, context: ContextEngine) -> int:
    """Close `session_id`; returns how many queued or running runs were cancelled.

    Raises SessionNotFound before anything changes when there is no such session.
    Runs go first, so none of them records into a slot that is already closed;
    the caches go last, after the store no longer serves the session, so no new
    prompt can refill them."""
    store.get(session_id)
    cancelled = await runs.cancel_session(session_id)
    await store.close(session_id)
    context.forget_session(session_id)
    return cancelled
