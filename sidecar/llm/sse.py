"""The lean transport (profile transport "sse", the default for OpenAI-compatible
servers at an `api_base`): chat completions sent and their SSE stream read by the
sidecar itself, without litellm.

litellm's per-chunk processing costs about 2 ms of CPU per chunk on the reference
machine (docs/benchmarks.md) and its import about 175 MB; an OpenAI-compatible
server needs neither. The profile is resolved once (sidecar/llm/routes.py), the
connection pool is the gateway's, chunks are decoded straight into typed structs
and handed on as `Chunk`s, the shape every transport yields.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import msgspec

from sidecar import runtrace
from sidecar.errors import ProviderBadRequest, ProviderError, ProviderTimeout, ProviderUnavailable
from sidecar.llm.faults import http_error
from sidecar.llm.guard import run_check
from sidecar.llm.routes import Route
from sidecar.llm.types import Chunk

__all__ = ["SseStream", "open_sse", "new_client"]

#: Longest SSE line accepted (a chunk is one line; real ones are well under 1 KB).
MAX_LINE = 1 << 20


def new_client() -> aiohttp.ClientSession:
    """The pooled client a gateway keeps for every stream (connections are reused).
    aiohttp, not httpx: about a third of the CPU per request and 7 ms less to the
    first chunk on the reference machine (docs/benchmarks.md)."""
    connector = aiohttp.TCPConnector(limit=1024, limit_per_host=0, keepalive_timeout=60)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=10.0),
        read_bufsize=MAX_LINE // 2,  # readline's limit is twice this
    )


# What is read of a chunk; everything else in it is ignored by the decoder.
class _Details(msgspec.Struct):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    prompt_tokens_details: _Details | None = None


class _Delta(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Body(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: Any = None


_decode = msgspec.json.Decoder(_Body).decode


def _chunk(body: _Body) -> Chunk:
    text, finish = "", None
    if body.choices:
        choice = body.choices[0]
        text = (choice.delta.content if choice.delta else None) or ""
        finish = choice.finish_reason
    usage = None
    if body.usage is not None:
        u = body.usage
        cached = (u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else None) or 0
        usage = (u.prompt_tokens or 0, u.completion_tokens or 0, cached)
    return Chunk(text, finish, usage)


#: After the usage chunk only "[DONE]" should follow: read it for at most this long on
#: close, so the connection goes back to the pool (one closed mid-body cannot be reused,
#: and a new connection costs a TCP handshake on the next run's first token).
DRAIN_S = 0.5


class SseStream:
    """An open response; iterate for Chunks, `aclose()` releases the connection
    (back to the pool when the reply was read to its end, else dropped)."""

    def __init__(self, response: aiohttp.ClientResponse, where: str) -> None:
        self._response = response
        self._where = where
        self._usage_seen = False
        self._ended = False
        # One iterator each: reading resumes where the first-token wait stopped, and
        # closing can finish the body the chunk reader left.
        self._lines = response.content.__aiter__()
        self._iter = self._chunks()

    def __aiter__(self) -> AsyncIterator[Chunk]:
        return self._iter

    async def _chunks(self) -> AsyncGenerator[Chunk, None]:
        try:
            async for raw in self._lines:
                runtrace.mark("first_line")
                if not raw.startswith(b"data:"):
                    continue
                data = raw[5:].strip()
                if data == b"[DONE]":
                    self._ended = True
                    return
                try:
                    body = _decode(data)
                except msgspec.DecodeError as exc:  # not JSON, or not a chunk's shape
                    raise ProviderError(f"malformed chunk from {self._where}: {data[:80]!r}") from exc
                if body.error is not None:
                    raise ProviderUnavailable(f"{self._where} failed mid-stream: {str(body.error)[:200]}")
                chunk = _chunk(body)
                if chunk.text:
                    runtrace.mark("first_delta")
                self._usage_seen = self._usage_seen or chunk.usage is not None
                yield chunk
        except ValueError as exc:  # aiohttp: a line longer than MAX_LINE
            raise ProviderError(f"malformed stream from {self._where}: {exc}") from exc
        except TimeoutError as exc:
            raise ProviderTimeout(f"{self._where}: read timed out") from exc
        except aiohttp.ClientError as exc:
            raise ProviderUnavailable(f"{self._where}: connection lost ({type(exc).__name__})") from exc

    async def aclose(self) -> None:
        try:
            if self._usage_seen or self._ended:
                # The reply is complete (the reader may have stopped at usage, all it
                # needs): read the rest of the body, if it comes at once, to keep the connection.
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(DRAIN_S):
                        async for _ in self._lines:
                            pass
            await self._iter.aclose()
        finally:
            # Back to the pool when the body was read to its end; otherwise closed.
            if self._response.content.at_eof():
                self._response.release()
            else:
                self._response.close()


def request_body(route: Route, request: dict[str, Any]) -> dict[str, Any]:
    """The JSON body for `request` (the transport-neutral kwargs of sidecar.llm.call)."""
    body: dict[str, Any] = {
        "model": route.model,
        "messages": request["messages"],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": request.get("temperature"),
        "max_tokens": request.get("max_tokens"),
    }
    if request.get("stop"):
        body["stop"] = request["stop"]
    return body


async def open_sse(
    http: aiohttp.ClientSession,
    route: Route,
    request: dict[str, Any],
    *,
    check: Callable[[Mapping[str, Any]], None],
) -> SseStream:
    """The transport's one send point: POST the request and return the stream once
    the headers are in (an HTTP error status is raised mapped). `check` is the leak
    guard (`sidecar.llm.guard.request_checker`), called on the exact body sent."""
    where = request["model"]
    if route.problem:
        raise ProviderBadRequest(route.problem)
    body = request_body(route, request)
    await run_check(check, body)
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if request.get("api_key"):
        headers["Authorization"] = f"Bearer {request['api_key']}"
    data = msgspec.json.encode(body)
    runtrace.mark("body")
    try:
        response = await http.post(route.url, data=data, headers=headers)
    except TimeoutError as exc:
        raise ProviderTimeout(f"{where}: connect timed out") from exc
    except aiohttp.ClientError as exc:
        raise ProviderUnavailable(f"{where}: cannot connect ({type(exc).__name__}: {exc})") from exc
    if response.status != 200:
        try:
            text = (await response.content.read(2000)).decode("utf-8", "replace")
        except (aiohttp.ClientError, TimeoutError):
            text = ""
        response.close()
        raise http_error(response.status, text, where, route.url)
    runtrace.mark("headers")
    return SseStream(response, where)
