"""The scripted-model config documented in docs/runs.md (client CI in every
language copies it) loads, and its cues behave as the table there says."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import pytest

from sidecar.client import error_reason
from sidecar.config import load_config
from sidecar.v1 import agent_service_pb2 as apb

DOC = Path(__file__).resolve().parents[2] / "docs" / "runs.md"


def documented_toml(marker: str) -> str:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return next(b for b in blocks if marker in b)


@pytest.fixture
async def doc_server(make_server, tmp_path):
    path = tmp_path / "sidecar.toml"
    path.write_text(documented_toml('model = "scripted/test"'))
    running = await make_server(load_config(path, env={}))
    await running.client.open_session("g1")
    return running


def test_the_profiles_example_loads(tmp_path) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(documented_toml('model = "openai/gpt-4o-mini"'))
    config = load_config(path, env={})
    assert config.default_profile == "cloud" and config.profiles["cloud"].fallbacks == ["local"]


def test_the_local_model_example_loads_and_sets_the_local_window(tmp_path) -> None:
    path = tmp_path / "local.toml"
    path.write_text(documented_toml("[local_model]"))
    config = load_config(path, env={})
    assert config.local_model.context_tokens == 4096
    assert config.local_model.threads == 0 and config.local_model.batch_tokens == 512
    assert config.profiles["local"].context_window == config.local_model.context_tokens


async def test_documented_scripted_config_narrates(doc_server) -> None:
    texts = [t async for t in doc_server.client.narrate("g1", "The door opens.")]
    assert "".join(texts) == "The goblin staggers back. Its sword clatters to the floor!"


@pytest.mark.parametrize(
    ("cue", "code", "reason"),
    [
        ("#fail:rate_limit", grpc.StatusCode.RESOURCE_EXHAUSTED, "PROVIDER_RATE_LIMITED"),
        ("#fail:unavailable", grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
        ("#fail:internal", grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
        ("#fail:connection", grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
        ("#fail:bad_request", grpc.StatusCode.INVALID_ARGUMENT, "PROVIDER_BAD_REQUEST"),
        ("#fail-mid:unavailable", grpc.StatusCode.UNAVAILABLE, "PROVIDER_UNAVAILABLE"),
        # Waits out the profile's first-token timeout.
        pytest.param("#stall", grpc.StatusCode.DEADLINE_EXCEEDED, "PROVIDER_TIMEOUT", marks=pytest.mark.slow),
    ],
)
async def test_documented_cues(doc_server, cue, code, reason) -> None:
    request = apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text=f"x {cue}"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in doc_server.client.run(request):
            pass
    assert caught.value.code() == code and error_reason(caught.value) == reason
