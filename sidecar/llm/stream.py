"""One streamed reply on any transport (sidecar/llm/routes.py): the leak guard,
first-token timeout, retries with backoff before the first token, the fallback
chain, usage and cost, and the upstream closed at once however the stream ends.
Every transport yields `Chunk`s, so all of this is one code path.

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

from sidecar import runtrace
from sidecar.errors import PrivacyLeakBlocked, ProviderTimeout, SidecarError
from sidecar.llm.faults import is_retryable, map_exception
from sidecar.llm.routes import Route
from sidecar.llm.types import Chunk, Completion, Limits, TextPiece
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
    """The call, transport-neutral (litellm's kwargs; the other transports read their part)."""
    kwargs: dict[str, Any] = {
        "model": profile.model,
        "messages": messages,
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
        kwargs["api_key"] = os.environ.get(profile.api_key_env, "")
    return kwargs


async def _send(
    gateway: ModelGateway, route: Route, request: dict[str, Any], check: Callable[[Mapping[str, Any]], None]
) -> Any:
    """Where a request leaves, by route; each transport has its one send point and
    returns a stream of Chunks with `aclose()`. The leak guard `check` sees exactly
    what is sent: the HTTP body on sse, the whole request otherwise."""
    if route.kind == "sse":
        from sidecar.llm.sse import open_sse

        return await open_sse(gateway.http(), route, request, check=check)
    check(request)
    if route.kind == "litellm":
        from sidecar.llm.via_litellm import open_litellm

        return await open_litellm(gateway.litellm, request)
    model = gateway.local if route.kind == "local" else gateway.scripted
    return model.astreaming(request["model"], request["messages"], request)


#: model -> USD per (prompt, completion, cached) token, from litellm's price map on
#: unit counts: litellm's cost path costs milliseconds a call, and prices are linear.
_RATES: dict[str, tuple[float, float, float]] = {}
_UNIT = 1_000_000


def _cost(gateway: ModelGateway, route: Route, model: str, prompt: int, completion: int, cached: int) -> float:
    """USD from litellm's price map; 0.0 for a model it cannot price (never an error),
    for the embedded and scripted models, and while litellm is not loaded (a
    configuration whose profiles do not need litellm never loads it: docs/runs.md)."""
    litellm = gateway.litellm_if_loaded()
    if route.kind in ("local", "scripted") or litellm is None:
        return 0.0
    from sidecar.llm.via_litellm import price

    rates = _RATES.get(model)
    if rates is None:
        try:
            p = price(litellm, model, _UNIT, 0, 0) / _UNIT
            c = price(litellm, model, 0, _UNIT, 0) / _UNIT
            # A cached prompt token's price: all-cached prompt minus nothing.
            k = price(litellm, model, _UNIT, 0, _UNIT) / _UNIT
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
    route: Route,
    messages: list[dict[str, str]],
    limits: Limits,
    check: Callable[[Mapping[str, Any]], None],
) -> tuple[Any, Chunk]:
    """Send the request and wait for the first chunk that says something (text, the
    end or usage). Closes on failure. `check` is the leak guard, called by each
    transport on exactly what it sends."""
    timeout = limits.first_token_timeout_s or profile.first_token_timeout_s
    upstream = None
    runtrace.mark("send")
    # Its own task: when we give up on it mid-flight, a stream it still returns is closed,
    # never left holding a pooled connection.
    call = asyncio.ensure_future(_send(gateway, route, _request(profile, messages, limits), check))
    try:
        async with asyncio.timeout(timeout):
            upstream = await asyncio.shield(call)
            async for chunk in upstream:
                if chunk.text or chunk.finish or chunk.usage:
                    return upstream, chunk
            return upstream, Chunk("", "stop")
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

    last_error: SidecarError | None = None
    upstream: Any = None
    # Before every model call, retries and fallbacks included, on the whole request.
    check = guard.request_checker(engine_ids, moment)
    for name in fallback_chain(gateway, profile_name):
        profile = gateway.profile(name)
        route = gateway.route(name)
        await gateway.prepare_profile(name)
        for attempt in range(profile.max_retries + 1):
            if attempt:
                backoff = min(MAX_BACKOFF_S, profile.retry_backoff_s * 2 ** (attempt - 1))
                await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            try:
                upstream, first = await _open(gateway, profile, route, messages, limits, check)
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
                async for piece in _relay(gateway, route, upstream, first, name, profile.model):
                    yield piece
                return
            finally:
                await _aclose(upstream)
    assert last_error is not None
    raise last_error


async def _relay(
    gateway: ModelGateway, route: Route, upstream: Any, first: Chunk, name: str, model: str
) -> AsyncIterator[TextPiece | Completion]:
    """Everything from the first chunk on; a failure here ends the stream mapped."""
    parts: list[str] = []
    usage, finish = first.usage, first.finish
    if first.text:
        parts.append(first.text)
        runtrace.mark("relayed")
        yield TextPiece(first.text)
    try:
        if not (finish and usage):
            async for chunk in upstream:
                usage = chunk.usage or usage
                if chunk.text:
                    parts.append(chunk.text)
                    yield TextPiece(chunk.text)
                finish = chunk.finish or finish
                if finish and usage:
                    # All we need: stop here. Draining to the end would make litellm
                    # rebuild the whole response and run its logging (milliseconds a run).
                    break
    except (GeneratorExit, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_exception(exc, provider=model) from exc
    if usage is None:
        # The provider ignored include_usage: count with the profile's tokenizer.
        completion = gateway.token_counter(name)("".join(parts)) if parts else 0
        usage = (0, completion, 0)
    prompt, completion, cached = usage
    yield Completion(
        finish_reason="length" if finish == "length" else "stop",
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        cost_usd=_cost(gateway, route, model, prompt, completion, cached),
        profile=name,
        model=model,
    )
