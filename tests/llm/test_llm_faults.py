"""Every litellm exception class maps to a deliberate sidecar error."""

from __future__ import annotations

import inspect
import json
import os

import pytest

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
from sidecar.llm.faults import LITELLM_ERRORS, is_retryable, map_exception

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
litellm = pytest.importorskip("litellm")


def _litellm_exception_classes() -> list[type[BaseException]]:
    return [
        obj
        for obj in vars(litellm.exceptions).values()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("litellm")
    ]


def test_every_litellm_exception_class_is_in_the_table() -> None:
    classes = _litellm_exception_classes()
    assert len(classes) > 20  # the enumeration itself works
    unmapped = sorted(c.__name__ for c in classes if c.__name__ not in LITELLM_ERRORS)
    assert unmapped == [], f"map these in sidecar/llm/faults.py: {unmapped}"


def _instance(cls: type[BaseException]) -> BaseException:
    """An instance without running litellm's varied constructors."""
    exc = cls.__new__(cls)
    BaseException.__init__(exc, f"fake {cls.__name__}")
    exc.message = f"fake {cls.__name__}"  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize("cls", _litellm_exception_classes(), ids=lambda c: c.__name__)
def test_each_litellm_exception_maps_to_a_provider_error(cls: type[BaseException]) -> None:
    err = map_exception(_instance(cls), provider="openai/x")
    assert isinstance(err, SidecarError)
    expected = LITELLM_ERRORS[cls.__name__]
    if expected is not None:
        assert type(err) is expected
    assert err.metadata["provider_error"] == cls.__name__


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("RateLimitError", ProviderRateLimited),
        ("ServiceUnavailableError", ProviderUnavailable),
        ("InternalServerError", ProviderUnavailable),
        ("APIConnectionError", ProviderUnavailable),
        ("Timeout", ProviderTimeout),
        ("AuthenticationError", ProviderAuth),
        ("BadRequestError", ProviderBadRequest),
        ("ContextWindowExceededError", ContextWindowExceeded),
        ("ContentPolicyViolationError", ContentFiltered),
    ],
)
def test_real_constructed_exceptions(name: str, expected: type[SidecarError]) -> None:
    cls = getattr(litellm.exceptions, name)
    exc = cls(message="boom", llm_provider="openai", model="gpt-x")
    err = map_exception(exc, provider="openai/gpt-x")
    assert type(err) is expected
    assert "boom" in err.message and "openai/gpt-x" in err.message


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (429, ProviderRateLimited),
        (401, ProviderAuth),
        (403, ProviderAuth),
        (504, ProviderTimeout),
        (502, ProviderUnavailable),
        (404, ProviderBadRequest),
        (200, ProviderError),
    ],
)
def test_generic_api_error_is_decided_by_status(status: int, expected: type[SidecarError]) -> None:
    exc = litellm.exceptions.APIError(status_code=status, message="x", llm_provider="openai", model="m")
    assert type(map_exception(exc)) is expected


def test_mid_stream_wrapper_is_unwrapped_to_its_cause() -> None:
    inner = litellm.exceptions.RateLimitError(message="slow down", llm_provider="openai", model="m")
    outer = litellm.exceptions.MidStreamFallbackError(
        message="wrapped", model="m", llm_provider="openai", original_exception=inner
    )
    assert type(map_exception(outer)) is ProviderRateLimited


def test_json_decode_cause_is_a_malformed_chunk_not_an_outage() -> None:
    try:
        json.loads("{nope")
    except json.JSONDecodeError as cause:
        exc = litellm.exceptions.APIConnectionError(message="Expecting", llm_provider="openai", model="m")
        exc.__cause__ = cause
    err = map_exception(exc)
    assert type(err) is ProviderError and "malformed chunk" in err.message


def test_non_litellm_failures() -> None:
    assert type(map_exception(TimeoutError())) is ProviderTimeout
    assert type(map_exception(ConnectionResetError())) is ProviderUnavailable
    assert type(map_exception(KeyError("x"))) is ProviderError
    own = ProviderAuth("mine")
    assert map_exception(own) is own


def test_retryable_only_for_transient_failures() -> None:
    mk = litellm.exceptions
    assert is_retryable(map_exception(mk.RateLimitError(message="x", llm_provider="p", model="m")))
    assert is_retryable(map_exception(mk.ServiceUnavailableError(message="x", llm_provider="p", model="m")))
    assert not is_retryable(map_exception(mk.AuthenticationError(message="x", llm_provider="p", model="m")))
    assert not is_retryable(map_exception(mk.BadRequestError(message="x", llm_provider="p", model="m")))
    assert not is_retryable(map_exception(_instance(mk.BudgetExceededError)))


def test_litellms_missing_credentials_server_error_is_provider_auth_and_not_retried() -> None:
    """As litellm raises it with no OPENAI_API_KEY (issue 31): a server error by class."""
    from sidecar.llm.faults import is_retryable

    said = "OpenAIException - Missing credentials. Please pass an `api_key` ... or set the `OPENAI_API_KEY` variable."
    exc = litellm.exceptions.InternalServerError(message=said, llm_provider="openai", model="gpt-x")
    err = map_exception(exc, provider="openai/gpt-x")
    assert type(err) is ProviderAuth and not is_retryable(err)
