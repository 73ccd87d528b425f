"""The litellm transport (profile transport "litellm"): any of litellm's providers,
streamed by litellm, its chunks turned into `Chunk`s. The only module that calls
litellm for a reply; the gateway imports litellm only when a profile uses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import warnings
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from sidecar.errors import ProviderError
from sidecar.llm.types import Chunk
from sidecar.logs import adopt_library_loggers

__all__ = ["LitellmStream", "open_litellm", "price", "import_litellm"]

log = logging.getLogger("sidecar.llm")

#: Modules litellm imports lazily on a first call; imported up front, off the loop.
_LAZY_MODULES = ("litellm.llms.github_copilot.authenticator", "litellm.litellm_core_utils.streaming_handler")


async def _warm_up(litellm: Any) -> None:
    """One offline streamed call down the OpenAI path (mock_response: nothing is
    sent), so the first real run does not pay litellm's lazy imports."""
    try:
        stream = await litellm.acompletion(
            model="openai/warm-up",
            api_key="none",
            mock_response="ok",
            stream=True,
            messages=[{"role": "user", "content": "warm up"}],
        )
        async for _ in stream:
            pass
    except Exception:  # noqa: BLE001 - only an optimisation
        log.debug("litellm warm-up failed", exc_info=True)


def import_litellm() -> Any:
    """Import and set up litellm (blocking: the loader thread)."""
    # Before the import: never fetch the price map from the network.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    # Its prompts stay out of every log level but debug: levels set before the
    # import (which already logs), its own handler swapped for ours right after.
    adopt_library_loggers(before_import=True)
    with warnings.catch_warnings():
        # litellm's import-time warnings (pydantic, its own) are not ours to show.
        warnings.simplefilter("ignore")
        import litellm

        adopt_library_loggers()

        for lazy in _LAZY_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(lazy)
    litellm.suppress_debug_info = True
    litellm.drop_params = True  # unknown params for a provider are dropped, not fatal
    # Per-chunk logging work is pure overhead on a streaming hot path.
    litellm.disable_streaming_logging = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asyncio.run(_warm_up(litellm))
    return litellm


def _chunk(raw: Any) -> Chunk:
    """A litellm chunk as a Chunk; ProviderError when it is not a chunk."""
    try:
        choices = raw.choices
    except AttributeError as exc:
        raise ProviderError(f"malformed chunk from the provider: {type(raw).__name__}") from exc
    text, finish = "", None
    if choices:
        choice = choices[0]
        text = getattr(getattr(choice, "delta", None), "content", None) or ""
        if not isinstance(text, str):
            raise ProviderError("malformed chunk from the provider: content is not text")
        finish = getattr(choice, "finish_reason", None)
    usage = None
    u = getattr(raw, "usage", None)
    if u:
        cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", None) or 0
        usage = (int(u.prompt_tokens or 0), int(u.completion_tokens or 0), int(cached))
    return Chunk(text, finish, usage)


class LitellmStream:
    """litellm's stream as Chunks; `aclose()` closes litellm's stream (and its connection)."""

    def __init__(self, upstream: Any) -> None:
        self._upstream = upstream
        self._iter = self._chunks()

    def __aiter__(self) -> AsyncIterator[Chunk]:
        return self._iter

    async def _chunks(self) -> AsyncGenerator[Chunk, None]:
        async for raw in self._upstream:
            yield _chunk(raw)

    async def aclose(self) -> None:
        try:
            await self._iter.aclose()
        finally:
            close = getattr(self._upstream, "aclose", None)
            if close is not None:
                await close()


async def open_litellm(litellm: Any, request: dict[str, Any]) -> LitellmStream:
    """The transport's one send point: litellm.acompletion with our kwargs.
    Retries are ours (before the first token only); never litellm's or openai's."""
    # Copies of the messages: they are shared with the context engine's prompt cache,
    # and litellm's provider adapters may rewrite a message in place.
    messages = [dict(m) for m in request["messages"]]
    upstream = await litellm.acompletion(**{**request, "messages": messages}, num_retries=0, max_retries=0)
    return LitellmStream(upstream)


def price(litellm: Any, model: str, prompt: int, completion: int, cached: int) -> float:
    """USD for one call from litellm's price map (may raise for an unpriced model)."""
    response = litellm.ModelResponse(model=model)
    response.usage = litellm.Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_tokens_details={"cached_tokens": cached} if cached else None,
    )
    return float(litellm.completion_cost(completion_response=response, model=model) or 0.0)
