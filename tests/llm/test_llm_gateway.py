"""ModelGateway without a model call: start-up waiting, profiles, budgets."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from sidecar.config import Config, ContextConfig, ModelProfile
from sidecar.errors import ModelUnavailable, ProfileNotFound
from sidecar.llm import DEFAULT_CONTEXT_WINDOW, ModelGateway


def unstarted(config: Config | None = None) -> ModelGateway:
    """A gateway whose litellm import the test finishes by hand."""
    gateway = ModelGateway(config or Config())
    gateway._thread = threading.Thread()  # start() becomes a no-op
    gateway._loaded = concurrent.futures.Future()
    return gateway


async def test_a_cancelled_waiter_does_not_break_the_others() -> None:
    gateway = unstarted()
    first = asyncio.create_task(gateway.wait_ready())
    second = asyncio.create_task(gateway.wait_ready())
    await asyncio.sleep(0.01)
    first.cancel()  # e.g. a run cancelled while litellm was still importing
    await asyncio.sleep(0.01)
    assert not gateway._loaded.cancelled()
    gateway._loaded.set_result(object())
    await asyncio.wait_for(second, 1)
    assert gateway.ready and first.cancelled()


async def test_a_failed_import_is_model_unavailable_for_every_waiter() -> None:
    gateway = unstarted()
    waiters = [asyncio.create_task(gateway.wait_ready()) for _ in range(3)]
    await asyncio.sleep(0.01)
    gateway._loaded.set_exception(ImportError("no litellm"))
    for waiter in waiters:
        with pytest.raises(ModelUnavailable):
            await waiter
    assert not gateway.ready


def test_start_returns_at_once_and_info_works_before_litellm() -> None:
    config = Config(
        profiles={"big": ModelProfile(model="openai/x", context_window=32_000)},
        default_profile="big",
        context=ContextConfig(output_reserve_tokens=1000),
    )
    gateway = unstarted(config)
    assert not gateway.ready
    assert gateway.budget_tokens("big") == 31_000
    assert gateway.budget_tokens("local") == 8192 - 1000  # the local profile's own window
    info = {p["name"]: p for p in gateway.profiles_info()}
    assert info["big"]["is_default"] and not info["big"]["local"]
    assert info["local"]["local"] and info["local"]["model"] == "local/gemma3-270m"
    assert gateway.token_counter("big")("hello world") == 2  # tiktoken before litellm is in
    with pytest.raises(ProfileNotFound):
        gateway.budget_tokens("nope")


def test_unknown_model_window_falls_back() -> None:
    gateway = unstarted(Config(profiles={"x": ModelProfile(model="openai/unknown-model")}, default_profile="x"))
    assert gateway.context_window("x") == DEFAULT_CONTEXT_WINDOW
