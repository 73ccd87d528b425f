"""Where a model request leaves: its body (transport-neutral), the one send point
per route, and the leak guard run on exactly what is sent (docs/privacy.md, "The
leak guard"; the sse transport runs it on its JSON body, sidecar/llm/sse.py).

Kept apart from sidecar/llm/call.py, which holds a call's life once it is sent
(first-token timeout, relay, output ceiling, cost, closing the upstream): what
goes out, and through which door, is its own question and the privacy-critical one.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from sidecar.config import ModelProfile
from sidecar.errors import ProviderAuth
from sidecar.llm.cache_marks import mark_stable_prefix
from sidecar.llm.guard import run_check
from sidecar.llm.routes import Route
from sidecar.llm.types import Chunk, Limits

__all__ = ["DirectModel", "Send", "request_body", "send_point"]

#: Sends a request body on one transport (the leak guard runs inside, on exactly
#: what leaves) and returns its stream of Chunks, which has `aclose()`.
Send = Callable[[dict[str, Any]], Awaitable[Any]]


class DirectModel(Protocol):
    """A model called in process (the embedded and the scripted one)."""

    def astreaming(self, model: str, messages: list[Any], params: dict[str, Any]) -> AsyncIterator[Chunk]: ...


def send_point(
    route: Route, check: Callable[[Mapping[str, Any]], None], *, http: Any, litellm: Any, direct: DirectModel
) -> Send:
    """Where a request leaves, by route; each transport has its one send point and
    returns a stream of Chunks with `aclose()`. The leak guard `check` sees exactly
    what is sent: the HTTP body on sse, the whole request otherwise. `http` (the sse
    transport's client) and `litellm` (the module) are needed only on their routes."""
    if route.kind == "sse":
        from sidecar.llm.sse import open_sse

        async def via_sse(body: dict[str, Any]) -> Any:
            return await open_sse(http, route, body, check=check)

        return via_sse
    if route.kind == "litellm":
        from sidecar.llm.via_litellm import open_litellm

        async def via_litellm(body: dict[str, Any]) -> Any:
            await run_check(check, body)
            return await open_litellm(litellm, body)

        return via_litellm

    async def in_process(body: dict[str, Any]) -> Any:
        await run_check(check, body)
        return direct.astreaming(body["model"], body["messages"], body)

    return in_process


def request_body(
    profile: ModelProfile, messages: list[dict[str, str]], limits: Limits, *, mark_cache: bool = False
) -> dict[str, Any]:
    """The call, transport-neutral (litellm's kwargs; the other transports read their part).
    `mark_cache`: the stable prefix's end carries `cache_control` (litellm routes only)."""
    kwargs: dict[str, Any] = {
        "model": profile.model,
        "messages": mark_stable_prefix(messages) if mark_cache else messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": profile.temperature if limits.temperature is None else limits.temperature,
        "max_tokens": limits.max_output_tokens or profile.max_output_tokens,
        "timeout": limits.total_timeout_s or profile.total_timeout_s,
    }
    if limits.stop:
        kwargs["stop"] = list(limits.stop)
    if profile.api_base:
        kwargs["api_base"] = profile.api_base
    if profile.api_key_env:
        key = os.environ.get(profile.api_key_env, "")
        if not key:  # known before any request: say what to set, and retry nothing
            raise ProviderAuth(
                f"{profile.model}: the API key variable {profile.api_key_env} (the profile's api_key_env) is not "
                "set in the sidecar's environment: set it where the game launches the sidecar, or clear "
                "api_key_env for a server that needs no key"
            )
        kwargs["api_key"] = key
    return kwargs
