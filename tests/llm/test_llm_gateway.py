"""ModelGateway without a model call: start-up waiting, routes, profiles, budgets."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading

import pytest
from waits import eventually

from sidecar.config import Config, ContextConfig, LocalModelConfig, ModelProfile
from sidecar.errors import InvalidRequest, ModelUnavailable, ProfileNotFound
from sidecar.llm import DEFAULT_CONTEXT_WINDOW, ModelGateway
from sidecar.llm.routes import resolve

LITELLM_PROFILE = {"cloud": ModelProfile(model="anthropic/claude-x", transport="litellm")}


class WatchedFuture(concurrent.futures.Future):
    """The litellm future, counting who waits on it (asyncio.wrap_future adds a callback)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiters = 0

    def add_done_callback(self, fn) -> None:  # type: ignore[no-untyped-def]
        self.waiters += 1
        super().add_done_callback(fn)


def unstarted(config: Config | None = None) -> ModelGateway:
    """A gateway whose background loading the test finishes by hand."""
    gateway = ModelGateway(config or Config(profiles=dict(LITELLM_PROFILE), default_profile="cloud"))
    gateway._threads = [threading.Thread()]  # start() becomes a no-op
    gateway._litellm = WatchedFuture()
    return gateway


async def test_a_cancelled_waiter_does_not_break_the_others() -> None:
    gateway = unstarted()
    gateway._warm.set_result(None)
    first = asyncio.create_task(gateway.prepare_profile("cloud"))
    second = asyncio.create_task(gateway.prepare_profile("cloud"))
    await eventually(lambda: gateway._litellm.waiters == 2, what="both runs wait for litellm")
    first.cancel()  # e.g. a run cancelled while litellm was still importing
    await eventually(first.done)
    assert not gateway._litellm.cancelled()
    assert not gateway.ready
    gateway._litellm.set_result(object())
    await asyncio.wait_for(second, 1)
    assert gateway.ready and first.cancelled()


async def test_a_failed_import_is_model_unavailable_for_every_waiter() -> None:
    gateway = unstarted()
    gateway._warm.set_result(None)
    waiters = [asyncio.create_task(gateway.prepare_profile("cloud")) for _ in range(3)]
    await eventually(lambda: gateway._litellm.waiters == 3, what="every run waits for litellm")
    gateway._litellm.set_exception(ImportError("no litellm"))
    for waiter in waiters:
        with pytest.raises(ModelUnavailable):
            await waiter
    assert not gateway.ready
    info = {p["name"]: p for p in gateway.profiles_info()}
    assert not info["cloud"]["ready"] and "litellm could not be imported" in info["cloud"]["unavailable_reason"]
    assert info["local"]["local"]  # the other profiles are unaffected


async def test_profiles_without_litellm_never_wait_for_it() -> None:
    config = Config(
        profiles={
            "fake": ModelProfile(model="scripted/x"),
            "vllm": ModelProfile(model="hosted_vllm/m", api_base="http://127.0.0.1:9/v1"),
        },
        default_profile="fake",
    )
    gateway = unstarted(config)
    assert not gateway.needs_litellm
    async with asyncio.timeout(5):  # the litellm future is never set here
        await gateway.prepare_profile("fake")
        await gateway.prepare_profile("vllm")
    assert not gateway.ready  # the warm-up has not finished
    gateway._warm.set_result(None)
    assert gateway.ready  # llm_ready: nothing else to load for these profiles


@pytest.mark.parametrize(
    ("fields", "kind", "url", "problem"),
    [
        ({"model": "local/gemma3-270m", "transport": "sse"}, "local", "", ""),
        ({"model": "scripted/t", "transport": "litellm"}, "scripted", "", ""),
        ({"model": "hosted_vllm/m", "api_base": "http://h:8000/v1/"}, "sse", "http://h:8000/v1/chat/completions", ""),
        ({"model": "openai/gpt-4o-mini"}, "litellm", "", ""),  # OpenAI's own API: litellm adapts parameters
        ({"model": "openai/gpt-4o-mini", "transport": "sse"}, "sse", "https://api.openai.com/v1/chat/completions", ""),
        ({"model": "anthropic/claude-x"}, "litellm", "", ""),
        ({"model": "anthropic/claude-x", "api_base": "http://h/v1"}, "litellm", "", ""),
        ({"model": "anthropic/claude-x", "transport": "sse"}, "sse", "", "needs an OpenAI-compatible provider"),
        ({"model": "hosted_vllm/m", "transport": "sse"}, "sse", "", "needs api_base"),
        ({"model": "openai/m", "transport": "litellm", "api_base": "http://h/v1"}, "litellm", "", ""),
    ],
)
def test_routes_are_resolved_once_per_profile(fields: dict, kind: str, url: str, problem: str) -> None:
    route = resolve(ModelProfile(**fields))
    assert (route.kind, route.url) == (kind, url)
    assert problem in route.problem and bool(problem) == bool(route.problem)
    assert route.needs_litellm == (kind == "litellm")


def test_an_unusable_sse_profile_is_reported_not_ready() -> None:
    config = Config(profiles={"bad": ModelProfile(model="anthropic/x", transport="sse")}, default_profile="bad")
    info = {p["name"]: p for p in unstarted(config).profiles_info()}
    assert not info["bad"]["ready"] and "OpenAI-compatible" in info["bad"]["unavailable_reason"]


def test_local_context_follows_the_configured_llama_context() -> None:
    config = Config(
        local_model=LocalModelConfig(context_tokens=2048),
        profiles={"big": ModelProfile(model="local/gemma3-270m", context_window=8192)},
        default_profile="big",
    )
    gateway = unstarted(config)
    assert gateway.context_window("local") == 2048  # the built-in profile takes it as its window
    assert gateway.context_window("big") == 2048  # never more than llama.cpp was given
    assert gateway.budget_tokens("local") == 2048 - config.context.output_reserve_tokens
    assert Config().profiles["local"].context_window == LocalModelConfig().context_tokens
    for bad in (512, 1_000_000):
        with pytest.raises(InvalidRequest, match="context_tokens"):
            Config(local_model=LocalModelConfig(context_tokens=bad))


def test_local_threads_and_batch_reach_llama_cpp() -> None:
    gateway = unstarted(Config(local_model=LocalModelConfig(threads=3, batch_tokens=256)))
    assert gateway.local._settings["n_threads"] == 3 and gateway.local._settings["n_batch"] == 256
    assert unstarted(Config()).local._settings["n_threads"] == max(1, os.cpu_count() or 1)  # 0: every core
    with pytest.raises(InvalidRequest, match="threads must be 0"):
        Config(local_model=LocalModelConfig(threads=-1))
    with pytest.raises(InvalidRequest, match="batch_tokens must be 1 to context_tokens"):
        Config(local_model=LocalModelConfig(batch_tokens=0))


def test_start_returns_at_once_and_info_works_before_litellm() -> None:
    config = Config(
        profiles={"big": ModelProfile(model="openai/x", context_window=32_000)},
        default_profile="big",
        context=ContextConfig(output_reserve_tokens=1000),
    )
    gateway = unstarted(config)
    assert not gateway.ready
    assert gateway.budget_tokens("big") == 31_000
    assert gateway.budget_tokens("local") == LocalModelConfig().context_tokens - 1000  # llama.cpp's context
    info = {p["name"]: p for p in gateway.profiles_info()}
    assert info["big"]["is_default"] and not info["big"]["local"]
    assert info["local"]["local"] and info["local"]["model"] == "local/gemma3-270m"
    assert gateway.token_counter("big")("hello world") == 2  # tiktoken before litellm is in
    with pytest.raises(ProfileNotFound):
        gateway.budget_tokens("nope")


def test_unknown_model_window_falls_back() -> None:
    gateway = unstarted(Config(profiles={"x": ModelProfile(model="openai/unknown-model")}, default_profile="x"))
    assert gateway.context_window("x") == DEFAULT_CONTEXT_WINDOW
