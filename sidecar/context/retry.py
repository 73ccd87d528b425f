"""The messages for a decision's next attempt after a rejected reply
(docs/context.md, Decisions and notes).

The run asks for them (sidecar/runs/attempts.py), only when another attempt
follows: the prompt, the rejected reply and the reason, within the same budget.
The reply keeps its end (where the JSON was expected), shortened or left out,
and the prompt is rebuilt smaller by the context engine when needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from sidecar.context.contract import Rejected
from sidecar.context.prepared import Prepared
from sidecar.context.tokens import MESSAGE_OVERHEAD
from sidecar.errors import ContextWindowExceeded
from sidecar.prompts.system import DECISION_FORMAT

if TYPE_CHECKING:
    from sidecar.context.context_engine import ContextEngine

__all__ = ["retry_messages"]


def retry_messages(context: ContextEngine, prepared: Prepared, rejected: Rejected) -> list[dict[str, str]]:
    """The next attempt's messages. The reason and the reply are already projected:
    they are cut below, and a cut ID is one no search finds. ContextWindowExceeded
    when not even the prompt's fixed part and the reason fit."""
    note = (
        f"Your reply was rejected: {rejected.reason}. Reply again and end with one JSON object "
        f"{DECISION_FORMAT} naming one of the numbered options."
    )
    count, budget = prepared.count_tokens, prepared.budget_tokens
    failure: ContextWindowExceeded | None = None
    for share in (4, 16, 0):
        shown_reply = _tail(rejected.reply, budget // share, count) if share else ""
        extra = count(note) + MESSAGE_OVERHEAD
        if shown_reply:
            extra += count(shown_reply) + MESSAGE_OVERHEAD
        prompt = prepared.prompt
        if prompt.prompt_tokens + extra > budget:
            try:
                prompt = context.prepare(
                    prepared.session,
                    msgspec.structs.replace(prepared.spec, budget_tokens=max(1, budget - extra)),
                    count_tokens=count,
                    budget_tokens=budget - extra,
                    preview=True,
                    framing=prepared.framing,
                ).prompt
            except ContextWindowExceeded as exc:
                failure = exc
                continue
        turns = [{"role": "assistant", "content": shown_reply}] if shown_reply else []
        return [*(dict(m) for m in prompt.messages), *turns, {"role": "user", "content": note}]
    assert failure is not None
    raise failure


def _tail(text: str, limit: int, count: Callable[[str], int]) -> str:
    """The end of `text` within `limit` tokens, marked with a leading ellipsis when cut."""
    if limit <= 0:
        return ""
    while count(text) > limit:
        if len(text) <= 2:
            return ""
        text = "…" + text[len(text) // 4 + 1 :]
    return text
