"""One model call on any transport (sidecar/llm/routes.py): the first-token
timeout, the relay of text, usage and cost, every failure mapped to a
SidecarError, and the upstream closed at once however the call ends. Every
transport yields `Chunk`s, so all of this is one code path. What is sent, and
through which send point, is sidecar/llm/send_points.py.

A call is opened in two steps so its caller can tell the two kinds of failure
apart: `open_call` fails before the first token (a caller may retry or fall
back: sidecar/runs/attempts.py does), iterating a `ModelCall` fails after it
(text already reached the game; nothing may be retried).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from sidecar import runtrace
from sidecar.errors import ProviderTimeout, SidecarError
from sidecar.llm.faults import map_exception
from sidecar.llm.routes import Route, called_url
from sidecar.llm.send_points import Send, request_body
from sidecar.llm.types import Chunk, Completion, ModelRequest, Sampling, TextPiece

__all__ = [
    "ModelCall",
    "open_call",
    "MAX_PIECE_CHARS",
    "output_ceiling",
]

log = logging.getLogger("sidecar.llm")


#: Characters of reply text in one TextPiece. A provider may send a chunk of any size
#: (one SSE line holds up to 1 MiB), and what follows the call handles text piece by
#: piece on the event loop: bounded pieces keep each step short and let the output
#: limit stop within a piece.
MAX_PIECE_CHARS = 1024


#: UTF-8 bytes of reply allowed per token of `max_tokens` before the sidecar cuts a reply
#: itself. More than tokenizers put in a token of prose (cl100k_base averages about 4
#: bytes on English; o200k_base and 262k vocabularies about 3 to 12 on Indic scripts),
#: so a reply the provider ended at its own count is never cut here.
BYTES_PER_TOKEN = 16


def output_ceiling(max_tokens: int) -> int:
    """UTF-8 bytes of reply past which the sidecar stops reading a reply itself (a
    provider that ignores `max_tokens`): `max_tokens` x BYTES_PER_TOKEN; 0 (none)
    when no limit was asked (docs/runs.md, "Output limit")."""
    return max_tokens * BYTES_PER_TOKEN if max_tokens > 0 else 0


class _OutputBudget:
    """Cuts reply text into pieces of at most MAX_PIECE_CHARS and counts their bytes
    against the ceiling; `over` once it was reached (the piece that crossed it is cut
    to fit). Bytes, not tokens: the count is exact, costs nothing per chunk, needs no
    tokenizer on the loop, and does not depend on the provider's."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.counted = 0
        self.over = False

    def pieces(self, text: str) -> list[str]:
        out: list[str] = []
        for start in range(0, len(text), MAX_PIECE_CHARS):
            piece = text[start : start + MAX_PIECE_CHARS]
            if self.ceiling:
                size = len(piece.encode("utf-8"))
                if self.counted + size > self.ceiling:
                    room = self.ceiling - self.counted
                    # Cut at a character boundary at or before `room` bytes.
                    piece = piece.encode("utf-8")[:room].decode("utf-8", "ignore")
                    self.counted, self.over = self.ceiling, True
                    if piece:
                        out.append(piece)
                    break
                self.counted += size
            out.append(piece)
        return out


#: model -> USD per (prompt, completion, cached) token, from litellm's price map on
#: unit counts: litellm's cost path costs milliseconds a call, and prices are linear.
_RATES: dict[str, tuple[float, float, float]] = {}
_UNIT = 1_000_000


def _cost(litellm: Any, route: Route, model: str, prompt: int, completion: int, cached: int) -> float:
    """USD from litellm's price map; 0.0 for a model it cannot price (never an error),
    for the embedded and scripted models, and while litellm is not loaded (a
    configuration whose profiles do not need litellm never loads it: docs/runs.md)."""
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


async def _abandon(call: asyncio.Future[Any], upstream: Any) -> None:
    if upstream is not None:
        await _aclose(upstream)
    elif not call.done():
        call.cancel()
        call.add_done_callback(_close_if_opened)


async def _first(send: Send, body: dict[str, Any], timeout: float, model: str) -> tuple[Any, Chunk]:
    """Send and wait for the first chunk that says something (text, the end or usage).
    Closes on failure."""
    upstream = None
    # Its own task: when we give up on it mid-flight, a stream it still returns is closed,
    # never left holding a pooled connection.
    runtrace.mark("send")
    call = asyncio.ensure_future(send(body))
    try:
        async with asyncio.timeout(timeout):
            upstream = await asyncio.shield(call)
            async for chunk in upstream:
                if chunk.text or chunk.finish or chunk.usage:
                    return upstream, chunk
            return upstream, Chunk("", "stop")
    except TimeoutError:
        await _abandon(call, upstream)
        raise ProviderTimeout(f"no first token from {model} within {timeout:g} s") from None
    except BaseException:
        await _abandon(call, upstream)
        raise


async def open_call(
    request: ModelRequest, send: Send, *, count_tokens: Callable[[str], int], litellm: Any
) -> ModelCall:
    """Send `request` and wait for its first chunk, within the first-token timeout.

    Raises the mapped SidecarError of a failure before the first token.
    `count_tokens` counts the reply when the provider reports no usage; `litellm`
    (the module, or None while not loaded) prices it."""
    profile, limits = request.target.profile, request.limits
    timeout = limits.first_token_timeout_s or profile.first_token_timeout_s
    body = request_body(profile, request.messages, limits, mark_cache=request.target.route.mark_cache)
    if request.target.route.kind == "local":  # held to its shape by a grammar (sidecar/llm/local.py)
        body["reply_shape"] = request.shape
        body["sampling"] = Sampling(body["temperature"], profile.top_k, min_p=profile.min_p,
                                    repeat_penalty=profile.repeat_penalty)  # fmt: skip
        if request.seed:
            body["seed"] = request.seed
    try:
        upstream, first = await _first(send, body, timeout, profile.model)
    except Exception as exc:  # (cancellation is a BaseException: it passes untouched)
        mapped = map_exception(exc, provider=profile.model, url=called_url(profile, request.target.route))
        if mapped is exc:
            raise
        raise mapped from exc
    return ModelCall(request, upstream, first, count_tokens, litellm)


class ModelCall:
    """An open call whose first chunk arrived: iterate it for TextPieces and then
    one Completion (a failure ends it mapped); `aclose()` closes the upstream."""

    def __init__(
        self, request: ModelRequest, upstream: Any, first: Chunk, count: Callable[[str], int], litellm: Any
    ) -> None:
        self._target = request.target
        self._max_tokens = request.limits.max_output_tokens or request.target.profile.max_output_tokens
        self._upstream = upstream
        self._first = first
        self._count = count
        self._litellm = litellm

    def __aiter__(self) -> AsyncIterator[TextPiece | Completion]:
        return self._relay()

    async def aclose(self) -> None:
        await _aclose(self._upstream)

    async def _relay(self) -> AsyncIterator[TextPiece | Completion]:
        """Everything from the first chunk on, in pieces of at most MAX_PIECE_CHARS, up
        to the output ceiling: past it the upstream is closed and the reply ends
        "length", whatever the provider would have sent."""
        first, upstream, model = self._first, self._upstream, self._target.profile.model
        parts: list[str] = []
        usage, finish, queued_ms = first.usage, first.finish, first.queued_ms
        budget = _OutputBudget(output_ceiling(self._max_tokens))
        for piece in budget.pieces(first.text):
            parts.append(piece)
            runtrace.mark("relayed")
            yield TextPiece(piece)
        try:
            if not budget.over and not (finish and usage):
                async for chunk in upstream:
                    usage = chunk.usage or usage
                    queued_ms = chunk.queued_ms or queued_ms
                    for piece in budget.pieces(chunk.text):
                        parts.append(piece)
                        yield TextPiece(piece)
                    if budget.over:
                        break
                    finish = chunk.finish or finish
                    if finish and usage:
                        # All we need: stop here. Draining to the end would make litellm
                        # rebuild the whole response and run its logging (milliseconds a run).
                        break
        except (GeneratorExit, asyncio.CancelledError):
            raise
        except Exception as exc:
            mapped: SidecarError = map_exception(exc, provider=model)
            if mapped is exc:
                raise
            raise mapped from exc
        if budget.over:
            # The provider ignored max_tokens: stop it now (the connection is dropped,
            # nothing more is read), and end as the provider should have.
            log.warning(
                "reply cut at the output ceiling: the provider ignored max_tokens",
                extra={"fields": {"profile": self._target.name, "max_tokens": self._max_tokens,
                                  "ceiling": budget.ceiling}},
            )
            await _aclose(upstream)
            finish, usage = "length", None  # the provider's usage, if any, was not for this text
        if usage is None:
            # The provider ignored include_usage: count with the profile's tokenizer.
            completion = self._count("".join(parts)) if parts else 0
            usage = (0, completion, 0)
        prompt, completion, cached = usage
        yield Completion(
            finish_reason="length" if finish == "length" else "stop",
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            queued_ms=queued_ms,
            cost_usd=_cost(self._litellm, self._target.route, model, prompt, completion, cached),
            profile=self._target.name,
            model=model,
        )
