"""The lean transport (profile `transport = "sse"`): OpenAI-compatible chat
completions streamed by a small SSE reader of our own.

litellm still decides where the call goes (provider, model name, base URL);
only the byte stream is read here, because litellm's per-chunk processing
costs about 2 ms of CPU per chunk on the reference machine (docs/benchmarks.md)
and caps how many streams one sidecar serves. Opt-in per profile; the default
transport is litellm's own. Chunks are handed on with the attributes
`sidecar.llm.stream` reads from litellm's chunks, so both paths share the code
after the first byte.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from sidecar.errors import ProviderBadRequest, ProviderError, ProviderTimeout, ProviderUnavailable
from sidecar.llm.faults import status_error

__all__ = ["SseStream", "open_sse", "new_client", "OPENAI_COMPATIBLE"]

#: litellm providers that speak OpenAI's chat completions wire format.
OPENAI_COMPATIBLE = frozenset({"openai", "hosted_vllm", "openai_like", "custom_openai", "lm_studio", "llamafile"})
_DEFAULT_BASE = {"openai": "https://api.openai.com/v1"}



def new_client() -> httpx.AsyncClient:
    """The pooled client a gateway keeps for every stream (connections are reused)."""
    limits = httpx.Limits(max_connections=1024, max_keepalive_connections=256)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(None, connect=10.0))


class _Obj:
    """Attribute access over a decoded JSON object (what stream.py reads)."""

    __slots__ = ("_d",)

    def __init__(self, d: dict[str, Any]) -> None:
        self._d = d

    def __getattr__(self, name: str) -> Any:
        value = self._d.get(name) if isinstance(self._d, dict) else None
        if isinstance(value, dict):
            return _Obj(value)
        if isinstance(value, list):
            return [_Obj(v) if isinstance(v, dict) else v for v in value]
        return value

    def __bool__(self) -> bool:
        return bool(self._d)


class SseStream:
    """An open response; iterate for chunks, `aclose()` drops the connection."""

    def __init__(self, response: httpx.Response, model: str) -> None:
        self._response = response
        self._model = model
        # One iterator: reading resumes where the first-token wait stopped.
        self._iter = self._chunks()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iter

    async def _chunks(self) -> AsyncIterator[Any]:
        try:
            async for line in self._response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    decoded = json.loads(data)
                except json.JSONDecodeError as exc:
                    raise ProviderError(f"malformed chunk from {self._model}: {data[:80]!r}") from exc
                if not isinstance(decoded, dict):
                    raise ProviderError(f"malformed chunk from {self._model}: not an object")
                if "error" in decoded:
                    raise ProviderUnavailable(f"{self._model} failed mid-stream: {str(decoded['error'])[:200]}")
                yield _Obj(decoded)
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(f"{self._model}: {type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"{self._model}: connection lost ({type(exc).__name__})") from exc

    async def aclose(self) -> None:
        try:
            await self._iter.aclose()  # type: ignore[attr-defined]
        finally:
            await self._response.aclose()


async def open_sse(
    http: httpx.AsyncClient,
    litellm: Any,
    request: dict[str, Any],
    *,
    check: Callable[[Mapping[str, Any]], None],
) -> SseStream:
    """POST the request (litellm's kwargs) and return the stream once headers are in.

    `check` is the leak guard (`sidecar.llm.guard.request_checker`), called on the body sent."""
    model, provider, _key, base = litellm.get_llm_provider(request["model"], api_base=request.get("api_base"))
    if provider not in OPENAI_COMPATIBLE:
        raise ProviderBadRequest(
            f'transport "sse" needs an OpenAI-compatible provider; {request["model"]!r} is {provider!r}'
        )
    base = base or _DEFAULT_BASE.get(provider)
    if not base:
        raise ProviderBadRequest(f"profile for {request['model']!r} needs api_base for the sse transport")
    body: dict[str, Any] = {
        "model": model,
        "messages": request["messages"],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": request.get("temperature"),
        "max_tokens": request.get("max_tokens"),
    }
    if request.get("stop"):
        body["stop"] = request["stop"]
    check(body)
    headers = {"Authorization": f"Bearer {request['api_key']}"} if request.get("api_key") else {}
    try:
        response = await http.send(
            http.build_request("POST", base.rstrip("/") + "/chat/completions", json=body, headers=headers),
            stream=True,
        )
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(f"{request['model']}: {type(exc).__name__}") from exc
    except httpx.HTTPError as exc:
        raise ProviderUnavailable(f"{request['model']}: cannot connect ({type(exc).__name__})") from exc
    if response.status_code != 200:
        text = (await response.aread())[:300].decode("utf-8", "replace")
        await response.aclose()
        raise status_error(response.status_code, f"{request['model']}: HTTP {response.status_code} {text}")
    return SseStream(response, request["model"])
