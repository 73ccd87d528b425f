"""One streamed reply through litellm: the leak guard, first-token timeout,
retries with backoff before the first token, the fallback chain, usage and
cost, and the upstream closed at once however the stream ends.

After the first token nothing is retried: text already reached the game, so
a failure ends the stream with its status and the text stays valid.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sidecar.errors import PrivacyLeakBlocked, ProviderError, ProviderTimeout, SidecarError
from sidecar.llm.faults import is_retryable, map_exception
from sidecar.llm.types import Completion, Limits, TextPiece
from sidecar.state.model import Moment

if TYPE_CHECKING:
    from sidecar.config import ModelProfile
    from sidecar.llm.gateway import ModelGateway

__all__ = ["stream_reply", "fallback_chain"]

log = logging.getLogger("sidecar.llm")
#: Backoff never waits longer than this between two attempts.
MAX_BACKOFF_S = 4.0


def fallback_chain(gateway: ModelGateway, name: str) -> list[str]:
    """The profile, then its fallbacks depth-first, each once."""
    seen: list[str] = []
    todo = [name]
    while todo:
        current = todo.pop(0)
        if current in seen:
            continue
        seen.append(current)
        todo = list(gateway.profile(current).fallbacks) + todo
    return seen


def _request(profile: ModelProfile, messages: list[dict[str, str]], limits: Limits) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": profile.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": profile.temperature if limits.temperature is None else limits.temperature,
        "max_tokens": limits.max_output_tokens or profile.max_output_tokens,
        # Retries are ours (before the first token only); never litellm's or openai's.
        "num_retries": 0,
        "max_retries": 0,
        "timeout": limits.total_timeout_s or profile.total_timeout_s,
    }
    if limits.stop:
        kwargs["stop"] = list(limits.stop)
    if profile.api_base:
        kwargs["api_base"] = profile.api_base
    if profile.api_key_env:
        kwargs["api_key"] = os.environ.get(profile.api_key_env, "")
    return kwargs


def _delta_text(chunk: Any) -> tuple[str, str | None]:
    """(text, finish_reason) of one litellm chunk; ProviderError when it is not a chunk."""
    try:
        choices = chunk.choices
    except AttributeError as exc:
        raise ProviderError(f"malformed chunk from the provider: {type(chunk).__name__}") from exc
    if not choices:
        return "", None
    choice = choices[0]
    delta = getattr(choice, "delta", None)
    text = getattr(delta, "content", None) or ""
    if not isinstance(text, str):
        raise ProviderError("malformed chunk from the provider: content is not text")
    return text, getattr(choice, "finish_reason", None)


def _usage(chunk: Any) -> tuple[int, int, int] | None:
    usage = getattr(chunk, "usage", None)
    if not usage:
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0), int(cached)


#: model -> USD per (prompt, completion, cached) token, from litellm.completion_cost
#: on unit counts: litellm's cost path costs milliseconds a call, and prices are linear.
_RATES: dict[str, tuple[float, float, float]] = {}
_UNIT = 1_000_000


def _price(litellm: Any, model: str, prompt: int, completion: int, cached: int) -> float:
    response = litellm.ModelResponse(model=model)
    response.usage = litellm.Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        prompt_tokens_details={"cached_tokens": cached} if cached else None,
    )
    return float(litellm.completion_cost(completion_response=response, model=model) or 0.0)


def _cost(litellm: Any, model: str, prompt: int, completion: int, cached: int) -> float:
    """USD from litellm's price map; 0.0 for a model it cannot price (never an error)."""
    rates = _RATES.get(model)
    if rates is None:
        try:
            p = _price(litellm, model, _UNIT, 0, 0) / _UNIT
            c = _price(litellm, model, 0, _UNIT, 0) / _UNIT
            # A cached prompt token's price: all-cached prompt minus nothing.
            k = _price(litellm, model, _UNIT, 0, _UNIT) / _UNIT
        except Exception:  # noqa: BLE001 - unpriced or unknown model
            p = c = k = 0.0
        rates = _RATES[model] = (p, c, k)
    p, c, k = rates
    return (prompt - cached) * p + cached * k + completion * c


async def _aclose(upstream: Any) -> None:
    if upstream is not None and hasattr(upstream, "aclose"):
        try:
            await upstream.aclose()
        except Exception:  # noqa: BLE001 - the connection is being dropped anyway
            log.debug("upstream close failed", exc_info=True)


def _close_if_opened(call: asyncio.Future[Any]) -> None:
    """Done-callback for an abandoned request: close the stream if it opened anyway."""
    if not call.cancelled() and call.exception() is None:
        asyncio.ensure_future(_aclose(call.result()))


async def _open(
    gateway: ModelGateway,
    profile: ModelProfile,
    messages: list[dict[str, str]],
    limits: Limits,
    check: Callable[[Mapping[str, Any]], None],
) -> tuple[Any, str, str | None]:
    """Send the request and wait for the first text (or the end). Closes on failure.

    `check` is the leak guard, called by each transport on the object it sends."""
    litellm = gateway.litellm
    timeout = limits.first_token_timeout_s or profile.first_token_timeout_s
    upstream = None
    # Its own task: when we give up on it mid-flight, a stream it still returns is closed,
    # never left holding a pooled connection.
    request = _request(profile, messages, limits)
    if profile.transport == "sse":
        from sidecar.llm.sse import open_sse

        call = asyncio.ensure_future(open_sse(gateway.http(), litellm, request, check=check))
    else:
        check(request)  # the leak guard, on exactly what litellm is handed
        call = asyncio.ensure_future(litellm.acompletion(**request))
    try:
        async with asyncio.timeout(timeout):
            upstream = await asyncio.shield(call)
            async for chunk in upstream:
                text, finish = _delta_text(chunk)
                if text or finish:
                    return upstream, text, finish
                if _usage(chunk):
                    return upstream, "", "stop"
            return upstream, "", "stop"
    except TimeoutError:
        await _abandon(call, upstream)
        raise ProviderTimeout(f"no first token from {profile.model} within {timeout:g} s") from None
    except BaseException:
        await _abandon(call, upstream)
        raise


async def _abandon(call: asyncio.Future[Any], upstream: Any) -> None:
    if upstream is not None:
        await _aclose(upstream)
    elif not call.done():
        call.cancel()
        call.add_done_callback(_close_if_opened)


async def stream_reply(
    gateway: ModelGateway,
    profile_name: str,
    messages: list[dict[str, str]],
    engine_ids: Sequence[str] | frozenset[str],
    limits: Limits,
    moment: Moment | None = None,
) -> AsyncIterator[TextPiece | Completion]:
    from sidecar.llm import guard

    await gateway.wait_ready()
    litellm = gateway.litellm
    last_error: SidecarError | None = None
    upstream: Any = None
    # Before every model call, retries and fallbacks included, on the whole request.
    check = guard.request_checker(engine_ids, moment)
    for name in fallback_chain(gateway, profile_name):
        profile = gateway.profile(name)
        await gateway.prepare_profile(name)
        for attempt in range(profile.max_retries + 1):
            if attempt:
                backoff = min(MAX_BACKOFF_S, profile.retry_backoff_s * 2 ** (attempt - 1))
                await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            try:
                upstream, first, finish = await _open(gateway, profile, messages, limits, check)
            except PrivacyLeakBlocked:
                raise  # a bug, not a provider fault: no retry, no fallback
            except (SidecarError, Exception) as exc:
                last_error = map_exception(exc, provider=profile.model)
                log.info(
                    "model call failed before the first token",
                    extra={"fields": {"profile": name, "attempt": attempt + 1, "reason": last_error.reason}},
                )
                if not is_retryable(last_error):
                    break
                continue
            try:
                async for piece in _relay(litellm, upstream, first, finish, name, profile.model):
                    yield piece
                return
            finally:
                await _aclose(upstream)
    assert last_error is not None
    raise last_error


async def _relay(
    litellm: Any, upstream: Any, first: str, finish: str | None, name: str, model: str
) -> AsyncIterator[TextPiece | Completion]:
    """Everything after the first token; a failure here ends the stream mapped."""
    parts: list[str] = []
    usage: tuple[int, int, int] | None = None
    if first:
        parts.append(first)
        yield TextPiece(first)
    try:
        if finish is None:
            async for chunk in upstream:
                usage = _usage(chunk) or usage
                text, reason = _delta_text(chunk)
                if text:
                    parts.append(text)
                    yield TextPiece(text)
                finish = reason or finish
                if finish and usage:
                    # All we need: stop here. Draining to the end would make litellm
                    # rebuild the whole response and run its logging (milliseconds a run).
                    break
        else:
            # The end came with the first chunk; usage may still follow.
            async for chunk in upstream:
                usage = _usage(chunk) or usage
                if usage:
                    break
    except (GeneratorExit, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_exception(exc, provider=model) from exc
    if usage is None:
        # The provider ignored include_usage: count with litellm's tokenizer.
        completion = int(litellm.token_counter(model=model, text="".join(parts))) if parts else 0
        usage = (0, completion, 0)
    prompt, completion, cached = usage
    yield Completion(
        finish_reason="length" if finish == "length" else "stop",
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        cost_usd=_cost(litellm, model, prompt, completion, cached),
        profile=name,
        model=model,
    )
