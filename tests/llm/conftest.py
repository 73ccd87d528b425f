"""Fixtures for the llm tests: the fake OpenAI-compatible server and a
gateway whose profiles point at it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from fakes.openai_server import FakeOpenAI

from sidecar.config import Config, ModelProfile
from sidecar.llm import ModelGateway
from sidecar.llm.local import LocalLLM
from sidecar.llm.tokens import shared_cl100k

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


@pytest.fixture(scope="module")
def local_llm() -> Iterator[LocalLLM]:
    """The embedded model, loaded once per test module (tests that read what it reuses)."""
    local = LocalLLM()
    local.preload()
    yield local
    local.close()


@pytest.fixture(scope="session", autouse=True)
def _tokenizer_built() -> None:
    """Build the process's tokenizer before any test: a gateway's background warm-up
    would otherwise compete with the first test's 1 s first-token timeouts."""
    shared_cl100k()


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(chunks=12, interval_s=0.002, slow_first_s=0.3) as server:
        yield server


GatewayFactory = Callable[..., ModelGateway]


@pytest.fixture(params=["litellm", "sse"])
def transport(request: pytest.FixtureRequest) -> str:
    """Every fake-server test runs through litellm's OpenAI path and the sse transport."""
    return str(request.param)


@pytest.fixture
async def make_gateway(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, transport: str
) -> AsyncIterator[GatewayFactory]:
    """`make_gateway(name=dict(model=..., ...), ...)` -> a started ModelGateway.

    Model strings without a provider become "openai/<mode>" at the fake server,
    read by the `transport` under test.
    """
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake")
    made: list[ModelGateway] = []

    def factory(default: str = "", **profiles: dict) -> ModelGateway:
        built = {}
        for name, fields in profiles.items():
            fields = dict(fields)
            if "/" not in fields["model"]:
                fields["model"] = "openai/" + fields["model"]
                fields.setdefault("api_base", fake_openai.base_url)
                fields.setdefault("api_key_env", "FAKE_OPENAI_KEY")
                fields.setdefault("transport", transport)
            fields.setdefault("retry_backoff_s", 0.01)
            built[name] = ModelProfile(**fields)
        gateway = ModelGateway(Config(profiles=built, default_profile=default or next(iter(built))))
        gateway.start()
        made.append(gateway)
        return gateway

    yield factory
    for gateway in made:
        await gateway.aclose()
