"""Model calls against a real HTTP server speaking OpenAI SSE, through litellm's
normal OpenAI path and through the sse transport (no litellm): text, usage,
cost, each fault's error, the leak guard and closing upstream (ModelGateway),
and a run's reply loop over them (sidecar.runs.attempts.model_reply): retries
before the first token only, fallbacks."""

from __future__ import annotations

import asyncio

import pytest
from fakes.openai_server import FakeOpenAI, chunk_text
from waits import eventually

from sidecar.errors import (
    ContentFiltered,
    ContextWindowExceeded,
    PrivacyLeakBlocked,
    ProviderAuth,
    ProviderBadRequest,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from sidecar.llm import Completion, Limits, ModelRequest, TextPiece
from sidecar.runs.attempts import model_reply
from sidecar.runs.plan import fallback_chain

MESSAGES = [{"role": "system", "content": "Narrate."}, {"role": "user", "content": "The door opens."}]


async def collect(gateway, profile: str, messages=MESSAGES, ids=frozenset(), limits=None):
    """A run's reply: the profile's chain, prepared as a run prepares it."""
    pieces: list = []
    try:
        chain = fallback_chain(gateway, profile)
        await gateway.prepare_profile(profile)
        request = ModelRequest(chain[0], messages, limits or Limits(), ids)
        async for piece in model_reply(gateway, chain, request):
            pieces.append(piece)
    except Exception as exc:  # noqa: BLE001 - returned for the assertions
        return pieces, exc
    return pieces, None


def text_of(pieces) -> str:
    return "".join(p.text for p in pieces if isinstance(p, TextPiece))


async def test_streams_text_then_usage(make_gateway, fake_openai: FakeOpenAI) -> None:
    gw = make_gateway(main={"model": "ok"})
    pieces, err = await collect(gw, "main")
    assert err is None
    assert text_of(pieces) == "".join(chunk_text(0, i) for i in range(12))
    assert sum(isinstance(p, TextPiece) for p in pieces) >= 2
    done = pieces[-1]
    assert isinstance(done, Completion)
    assert (done.prompt_tokens, done.completion_tokens, done.cached_tokens) == (42, 12, 32)
    assert done.finish_reason == "stop" and done.profile == "main" and done.model == "openai/ok"
    assert done.cost_usd == 0.0  # unpriced: zero, and no failure
    request = fake_openai.seen.requests[0]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert request["messages"] == MESSAGES


async def test_priced_model_reports_cost_when_litellm_is_loaded(make_gateway, transport) -> None:
    gw = make_gateway(main={"model": "gpt-4o-mini"})
    pieces, err = await collect(gw, "main")
    assert err is None
    if transport == "litellm":
        assert pieces[-1].cost_usd > 0
    else:
        # No profile needs litellm, so its price map is never loaded: unpriced (docs/runs.md).
        assert not gw.needs_litellm and pieces[-1].cost_usd == 0.0


async def test_sse_profile_is_priced_once_another_profile_loads_litellm(make_gateway, transport) -> None:
    if transport == "litellm":
        pytest.skip("the sse transport's pricing")
    gw = make_gateway(main={"model": "gpt-4o-mini"}, other={"model": "anthropic/claude-x", "transport": "litellm"})
    await gw.prepare_profile("other")  # waits for litellm's import
    pieces, err = await collect(gw, "main")
    assert err is None and pieces[-1].cost_usd > 0


async def test_sse_reuses_its_connection_from_run_to_run(make_gateway, fake_openai, transport) -> None:
    if transport != "sse":
        pytest.skip("the sse transport's own connection pool")
    gw = make_gateway(main={"model": "ok"})
    for _ in range(3):
        pieces, err = await collect(gw, "main")
        assert err is None and isinstance(pieces[-1], Completion)
    assert len(fake_openai.seen.requests) == 3
    assert len(set(fake_openai.seen.peers)) == 1  # one TCP connection served all three


async def test_limits_reach_the_request(make_gateway, fake_openai: FakeOpenAI) -> None:
    gw = make_gateway(main={"model": "ok", "temperature": 0.3, "max_output_tokens": 99})
    await collect(gw, "main", limits=Limits(max_output_tokens=7, temperature=0.1, stop=("END",)))
    await collect(gw, "main")
    first, second = fake_openai.seen.requests
    assert (first["max_tokens"], first["temperature"], first["stop"]) == (7, 0.1, ["END"])
    assert (second["max_tokens"], second["temperature"]) == (99, 0.3)


@pytest.mark.parametrize(
    ("mode", "error", "requests"),
    [
        ("http429", ProviderRateLimited, 3),  # retried twice, then given up
        ("http500", ProviderUnavailable, 3),
        ("http503", ProviderUnavailable, 3),
        ("http401", ProviderAuth, 1),  # never retried
        ("http400", ProviderBadRequest, 1),
        ("toolong", ContextWindowExceeded, 1),
        ("filtered", ContentFiltered, 1),
        # Waits out first_token_timeout_s (below) on every attempt.
        pytest.param("stall", ProviderTimeout, 3, marks=pytest.mark.slow),
    ],
)
async def test_faults_before_the_first_token(make_gateway, fake_openai, mode, error, requests) -> None:
    gw = make_gateway(main={"model": mode, "max_retries": 2, "first_token_timeout_s": 1.0})
    pieces, err = await collect(gw, "main")
    assert pieces == []
    assert type(err) is error
    assert len(fake_openai.seen.requests) == requests
    if mode == "stall":  # the whole wait and what sets it, not only "within 1 s"
        assert "(3 attempts, " in err.message and "first_token_timeout_s and max_retries" in err.message


async def test_slow_first_token_within_the_timeout_is_fine(make_gateway) -> None:
    gw = make_gateway(main={"model": "slow", "first_token_timeout_s": 5})
    pieces, err = await collect(gw, "main")
    assert err is None and isinstance(pieces[-1], Completion)


@pytest.mark.parametrize(("mode", "error"), [("drop", ProviderUnavailable), ("garbage", ProviderError)])
async def test_mid_stream_failures_end_the_stream_and_are_not_retried(make_gateway, fake_openai, mode, error) -> None:
    gw = make_gateway(main={"model": mode, "max_retries": 2, "fallbacks": ["backup"]}, backup={"model": "ok"})
    pieces, err = await collect(gw, "main")
    assert type(err) is error
    assert text_of(pieces).startswith(chunk_text(0, 0))  # text before the failure was delivered
    assert len(fake_openai.seen.requests) == 1  # no retry, no fallback after the first token


async def test_retry_before_the_first_token_recovers(make_gateway, fake_openai) -> None:
    gw = make_gateway(main={"model": "flaky", "max_retries": 1})
    pieces, err = await collect(gw, "main")
    assert err is None and isinstance(pieces[-1], Completion)
    assert len(fake_openai.seen.requests) == 2


async def test_fallback_chain_serves_when_the_primary_fails(make_gateway, fake_openai) -> None:
    gw = make_gateway(
        main={"model": "http500", "max_retries": 0, "fallbacks": ["second"]},
        second={"model": "http401", "fallbacks": ["third"]},
        third={"model": "ok"},
    )
    pieces, err = await collect(gw, "main")
    assert err is None
    assert pieces[-1].profile == "third"
    assert [r["model"] for r in fake_openai.seen.requests] == ["http500", "http401", "ok"]


async def test_a_key_variable_not_set_is_provider_auth_before_any_request_and_never_retried(
    make_gateway, fake_openai, monkeypatch
) -> None:
    """Issue 31: with no OPENAI_API_KEY, litellm's "Missing credentials" was PROVIDER_UNAVAILABLE,
    retried three times, then hidden behind the fallback's own error."""
    monkeypatch.delenv("NO_SUCH_KEY_SET", raising=False)
    gw = make_gateway(main={"model": "ok", "api_key_env": "NO_SUCH_KEY_SET", "max_retries": 2})
    pieces, err = await collect(gw, "main")
    assert type(err) is ProviderAuth and "NO_SUCH_KEY_SET" in err.message and "is not set" in err.message
    assert fake_openai.seen.requests == []


async def test_when_every_profile_fails_the_first_ones_cause_leads_and_each_fallbacks_is_named(
    make_gateway, fake_openai
) -> None:
    gw = make_gateway(
        main={"model": "ok", "api_key_env": "NO_SUCH_KEY_SET", "fallbacks": ["second"]},
        second={"model": "http500", "max_retries": 0},
    )
    pieces, err = await collect(gw, "main")
    assert type(err) is ProviderAuth  # the cause to fix, not the fallback's outage
    assert err.message.startswith("profile 'main': ") and "NO_SUCH_KEY_SET" in err.message
    assert "fallback 'second' failed too: PROVIDER_UNAVAILABLE" in err.message
    assert err.metadata["fallback_reasons"] == "PROVIDER_UNAVAILABLE"


async def test_a_404_names_the_url_that_was_called_and_what_the_base_url_should_be(
    make_gateway, fake_openai, transport
) -> None:
    """On both transports (litellm's NotFoundError is given the URL its route called)."""
    gw = make_gateway(main={"model": "http404", "max_retries": 0})
    pieces, err = await collect(gw, "main")
    assert type(err) is ProviderBadRequest
    assert f"HTTP 404 from POST {fake_openai.base_url}/chat/completions" in err.message
    assert "usually ending in /v1" in err.message


async def test_leak_guard_blocks_before_anything_is_sent(make_gateway, fake_openai) -> None:
    gw = make_gateway(main={"model": "ok"})
    leaky = [{"role": "user", "content": "Attack npc-7f3a9c2e-goblin now"}]
    pieces, err = await collect(gw, "main", messages=leaky, ids=frozenset({"npc-7f3a9c2e-goblin"}))
    assert type(err) is PrivacyLeakBlocked
    assert fake_openai.seen.requests == []


async def test_cancelling_the_consumer_closes_the_upstream(make_gateway, fake_openai) -> None:
    gw = make_gateway(main={"model": "endless"})
    got = asyncio.Event()

    async def consume() -> None:
        n = 0
        async for _ in gw.stream(ModelRequest(gw.target("main"), MESSAGES)):
            n += 1
            if n == 3:
                got.set()

    task = asyncio.create_task(consume())
    await got.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await eventually(lambda: fake_openai.seen.disconnects, what="the endless stream is closed upstream")
    assert fake_openai.seen.active == 0


async def test_closing_the_iterator_closes_the_upstream(make_gateway, fake_openai) -> None:
    gw = make_gateway(main={"model": "endless"})
    stream = gw.stream(ModelRequest(gw.target("main"), MESSAGES))
    async for piece in stream:
        if isinstance(piece, TextPiece):
            break
    await stream.aclose()
    await eventually(lambda: fake_openai.seen.disconnects, what="the stream is closed upstream")


async def test_litellm_gets_copies_of_the_messages_the_prompt_cache_shares() -> None:
    # The context engine's prompts share their message dicts with its cache; a provider
    # adapter that rewrites a message in place must not change the next run's prompt.
    from sidecar.llm.via_litellm import open_litellm

    class Rewriting:
        async def acompletion(self, **kwargs: object) -> object:
            for m in kwargs["messages"]:  # type: ignore[attr-defined]
                m["content"] = "rewritten"
            return iter(())

    messages = [{"role": "user", "content": "Hello"}]
    await open_litellm(Rewriting(), {"model": "m", "messages": messages})
    assert messages == [{"role": "user", "content": "Hello"}]
