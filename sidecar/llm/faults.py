"""Every model failure, mapped to the sidecar's error tree (docs/runs.md, Failures): each
litellm exception, and each HTTP error an OpenAI-compatible server answers to the
routes that do not use litellm (`http_error`: the sse transport, and the scripted
model, which fails the way such a server does).

The litellm table names each class litellm defines (tests/llm/test_faults.py fails when
litellm grows one that is not listed), so a new failure mode is a conscious
decision rather than a silent INTERNAL. Classes are matched by name along the
MRO, so this module never imports litellm itself.
"""

from __future__ import annotations

import asyncio
import json

from sidecar.errors import (
    ContentFiltered,
    ContextWindowExceeded,
    ProviderAuth,
    ProviderBadRequest,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    SidecarError,
)

__all__ = ["LITELLM_ERRORS", "RETRYABLE", "map_exception", "is_retryable", "http_error"]

#: litellm exception class name -> the sidecar error it becomes. `None` means
#: "decide by the HTTP status code the exception carries" (generic API errors).
LITELLM_ERRORS: dict[str, type[SidecarError] | None] = {
    # Credentials and accounts: retrying cannot help; a fallback profile may.
    "AuthenticationError": ProviderAuth,
    "CallerCredentialAuthenticationError": ProviderAuth,
    "PermissionDeniedError": ProviderAuth,
    "PaymentRequiredError": ProviderAuth,
    "BudgetExceededError": ProviderRateLimited,
    # The request itself is wrong for this provider or model.
    "BadRequestError": ProviderBadRequest,
    "InvalidRequestError": ProviderBadRequest,
    "NotFoundError": ProviderBadRequest,
    "UnprocessableEntityError": ProviderBadRequest,
    "UnsupportedParamsError": ProviderBadRequest,
    "ImageFetchError": ProviderBadRequest,
    "VectorStoreSearchError": ProviderBadRequest,
    "MalformedRequestFieldError": ProviderBadRequest,
    "UnsupportedEndpointError": ProviderBadRequest,
    "EndpointNotSupportedByModelError": ProviderBadRequest,
    "LiteLLMUnknownProvider": ProviderBadRequest,
    "ModelNotMappedError": ProviderBadRequest,
    "ContextWindowExceededError": ContextWindowExceeded,
    # Filters and guardrails.
    "ContentPolicyViolationError": ContentFiltered,
    "RejectedRequestError": ContentFiltered,
    "GuardrailRaisedException": ContentFiltered,
    "BlockedPiiEntityError": ContentFiltered,
    "SensitiveDataRouteException": ContentFiltered,
    # Transient: retried before the first token, then the fallback chain.
    "RateLimitError": ProviderRateLimited,
    "CallerCredentialRateLimitError": ProviderRateLimited,
    "Timeout": ProviderTimeout,
    "APIConnectionError": ProviderUnavailable,
    "ServiceUnavailableError": ProviderUnavailable,
    "BadGatewayError": ProviderUnavailable,
    "InternalServerError": ProviderUnavailable,
    "MidStreamFallbackError": ProviderUnavailable,
    # Garbage from the provider.
    "APIResponseValidationError": ProviderError,
    "JSONSchemaValidationError": ProviderError,
    "ModifyResponseException": ProviderError,
    # Generic: the status code decides.
    "APIError": None,
    "OpenAIError": None,
    "MockException": None,
}

#: Errors worth retrying (with backoff) before the first token.
RETRYABLE: tuple[type[SidecarError], ...] = (ProviderRateLimited, ProviderUnavailable, ProviderTimeout)
#: Account-level failures that look like rate limits but never clear by waiting.
_NOT_RETRYABLE_NAMES = frozenset({"BudgetExceededError", "PaymentRequiredError"})


def _by_status(status: object) -> type[SidecarError]:
    if not isinstance(status, int):
        return ProviderError
    if status == 429:
        return ProviderRateLimited
    if status in (401, 402, 403):
        return ProviderAuth
    if status in (408, 504):
        return ProviderTimeout
    if status >= 500:
        return ProviderUnavailable
    if 400 <= status < 500:
        return ProviderBadRequest
    return ProviderError


#: Markers in an OpenAI-style error body (`error.code`, `error.type` or the message)
#: that make a 400 more precise, as litellm's own mapping reads them.
_BODY_MARKERS: tuple[tuple[tuple[str, ...], type[SidecarError]], ...] = (
    (("context_length_exceeded", "maximum context length", "context window", "too many tokens"), ContextWindowExceeded),
    (("content_filter", "content_policy", "content management policy", "safety system"), ContentFiltered),
)


def _refusal(marks: str) -> type[SidecarError] | None:
    """ContextWindowExceeded or ContentFiltered when lower-cased `marks` say so."""
    for needles, precise in _BODY_MARKERS:
        if any(n in marks for n in needles):
            return precise
    return None


#: A 404 from a server at an api_base is nearly always the base URL: what the route expects.
_NOT_FOUND_HINT = " (the api_base must be the server's OpenAI-compatible root, usually ending in /v1)"


def http_error(status: int, body: str, where: str, url: str = "") -> SidecarError:
    """The error for an HTTP error response from an OpenAI-compatible server (`url`: the
    URL that was called, named in the message)."""
    cls = _by_status(status)
    detail = body.strip()
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict):
        detail = str(error.get("message") or detail)
        marks = " ".join(str(error.get(k) or "") for k in ("code", "type", "message")).lower()
    else:
        marks = detail.lower()
    if status in (400, 403, 422):
        cls = _refusal(marks) or cls
    called = f" from POST {url}" if url else ""
    hint = _NOT_FOUND_HINT if status == 404 else ""
    err = cls(f"{where}: HTTP {status}{called} {detail[:300]}{hint}")
    err.metadata["provider_error"] = f"HTTP {status}"
    return err


def _litellm_name(exc: BaseException) -> str | None:
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("litellm") and cls.__name__ in LITELLM_ERRORS:
            return cls.__name__
    return None


def map_exception(exc: BaseException, *, provider: str = "", url: str = "") -> SidecarError:
    """The sidecar error for anything a model call raised. Never raises. `url`: the chat
    completions URL the route called (`Route.url`; "" = a provider's own), named in an
    HTTP 404's message with what the route expects, as the sse transport's `http_error` does."""
    if isinstance(exc, SidecarError):
        return exc
    # litellm wraps whatever broke a stream; the cause says what really happened.
    inner = getattr(exc, "original_exception", None)
    if _litellm_name(exc) == "MidStreamFallbackError" and isinstance(inner, BaseException) and inner is not exc:
        return map_exception(inner, provider=provider, url=url)
    where = f" ({provider})" if provider else ""
    text = _text(exc)
    name = _litellm_name(exc)
    if name is not None:
        cls = LITELLM_ERRORS[name] or _by_status(getattr(exc, "status_code", None))
        if cls is ProviderBadRequest:
            # litellm leaves some refusals generic (an Azure filter on an "openai/" model):
            # read them as the sse transport does, so both transports agree.
            cls = _refusal(text.lower()) or cls
    elif isinstance(exc, TimeoutError | asyncio.TimeoutError):
        cls = ProviderTimeout
    elif isinstance(exc, ConnectionError | OSError):
        cls = ProviderUnavailable
    elif type(exc).__module__.startswith(("httpx", "httpcore", "aiohttp")):
        # Transport failures below litellm (a dropped connection mid-stream).
        cls = ProviderTimeout if "Timeout" in type(exc).__name__ else ProviderUnavailable
    else:
        cls = ProviderError
    if cls in (ProviderUnavailable, ProviderError) and any(m in text.lower() for m in _NO_CREDENTIALS):
        # litellm reports a missing key as a server error (retried three times, then hidden
        # behind a fallback's error): it is the credentials, and waiting does not fix them.
        cls = ProviderAuth
    if cls is ProviderUnavailable and _malformed(exc):
        # litellm reports an unparseable chunk as a connection error; it is garbage, not an outage.
        cls, text = ProviderError, f"malformed chunk: {text}"
    if url and (name == "NotFoundError" or getattr(exc, "status_code", None) == 404):
        text = f"HTTP 404 from POST {url}: {text}{_NOT_FOUND_HINT}"
    err = cls(f"{type(exc).__name__}{where}: {text}")
    err.metadata["provider_error"] = name or type(exc).__name__
    if isinstance(err, ProviderRateLimited) and name in _NOT_RETRYABLE_NAMES:
        err.metadata["retryable"] = "false"
    return err


#: What the OpenAI SDK and litellm say when no API key reached them (lower case).
_NO_CREDENTIALS = ("missing credentials", "api_key client option must be set", "no api key provided")


def _text(exc: BaseException) -> str:
    """The first line of the exception's message (some litellm classes fail in __str__)."""
    try:
        raw = str(exc).strip()
    except Exception:  # noqa: BLE001
        raw = str(getattr(exc, "message", "") or "")
    return raw.splitlines()[0][:300] if raw else type(exc).__name__


def _malformed(exc: BaseException) -> bool:
    """Whether a JSON decoding error is among the causes of `exc`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, json.JSONDecodeError):
            return True
        nxt = getattr(current, "original_exception", None)
        current = nxt if isinstance(nxt, BaseException) else (current.__cause__ or current.__context__)
    return False


def is_retryable(err: SidecarError) -> bool:
    return isinstance(err, RETRYABLE) and err.metadata.get("retryable") != "false"
