"""HTTP errors of an OpenAI-compatible server (the sse transport, and the scripted
model, which fails like one) map to the same errors litellm's exceptions do."""

from __future__ import annotations

import json

import pytest

from sidecar.errors import (
    ContentFiltered,
    ContextWindowExceeded,
    ProviderAuth,
    ProviderBadRequest,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
    SidecarError,
)
from sidecar.llm.faults import http_error, is_retryable, map_exception


def body(message: str, code: str | None = None, kind: str | None = None) -> str:
    return json.dumps({"error": {"message": message, "type": kind, "code": code}})


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        (429, body("slow down", "rate_limit_exceeded"), ProviderRateLimited),
        (401, body("bad key", "invalid_api_key"), ProviderAuth),
        (403, body("no access"), ProviderAuth),
        (408, body("timeout"), ProviderTimeout),
        (504, "<html>gateway timeout</html>", ProviderTimeout),
        (500, body("oops", kind="server_error"), ProviderUnavailable),
        (503, "", ProviderUnavailable),
        (400, body("bad", kind="invalid_request_error"), ProviderBadRequest),
        (404, body("no such model"), ProviderBadRequest),
        (400, body("This model's maximum context length is 8192 tokens."), ContextWindowExceeded),
        (400, body("Prompt too long", code="context_length_exceeded"), ContextWindowExceeded),
        (400, body("filtered", "content_filter"), ContentFiltered),
        (400, "vLLM: This model's maximum context length is 4096 tokens", ContextWindowExceeded),  # not JSON
    ],
)
def test_http_error_maps_status_and_body(status: int, text: str, expected: type[SidecarError]) -> None:
    err = http_error(status, text, "openai/m")
    assert type(err) is expected
    assert err.message.startswith(f"openai/m: HTTP {status}")
    assert err.metadata["provider_error"] == f"HTTP {status}"
    assert map_exception(err) is err  # already mapped: passed through as is


def test_the_message_of_a_json_body_is_what_the_developer_reads() -> None:
    err = http_error(400, body("messages[0].content must be a string"), "hosted_vllm/m")
    assert "messages[0].content must be a string" in err.message and "{" not in err.message


def test_retryable_http_errors() -> None:
    assert is_retryable(http_error(429, "", "m")) and is_retryable(http_error(503, "", "m"))
    assert not is_retryable(http_error(401, "", "m")) and not is_retryable(http_error(400, "", "m"))
