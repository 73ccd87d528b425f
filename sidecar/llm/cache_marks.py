"""Marking a request's stable prefix for providers that cache only when asked
(Anthropic's prompt caching through litellm: a `cache_control` on a content
block caches everything up to and including it).

The context engine lays a prompt out stable-first (docs/context.md, Prompt
layout): the system message (rules, persona, lore, setting, memory block), then
the history, which each turn extends, then one final user message, the volatile
block. So the stable prefix ends with the message before the last one, and the
system message ends its most stable part. Both get a breakpoint (Anthropic takes
up to four): the second turn reads the first turn's prefix from the cache, and
when the history window moves the system part still hits.
"""

from __future__ import annotations

from typing import Any

__all__ = ["mark_stable_prefix", "EPHEMERAL"]

EPHEMERAL = {"type": "ephemeral"}


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if not isinstance(content, str) or not content:
        return message  # already blocks (or empty: Anthropic refuses a marked empty block)
    return {**message, "content": [{"type": "text", "text": content, "cache_control": EPHEMERAL}]}


def mark_stable_prefix(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A copy of `messages` whose system message and last message before the final
    one carry a cache breakpoint. The messages themselves are not changed (they are
    shared with the context engine's prompt cache)."""
    if len(messages) < 2:
        return list(messages)
    out: list[dict[str, Any]] = list(messages)
    ends = {len(out) - 2}
    if out[0].get("role") == "system":
        ends.add(0)
    for i in ends:
        out[i] = _marked(out[i])
    return out
