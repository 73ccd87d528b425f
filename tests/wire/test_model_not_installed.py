"""A machine without the embedded model's weights: GetInfo says the local
profile is not ready and why, and a run on it fails at once with
FAILED_PRECONDITION / MODEL_NOT_INSTALLED (not INTERNAL, not a hang)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import grpc
import pytest

from sidecar.client import error_reason
from sidecar.config import Config, LocalModelConfig
from sidecar.demo import run_demo
from sidecar.llm.weights import MODEL_PATH_ENV
from sidecar.v1 import agent_service_pb2 as apb


@pytest.fixture
async def weightless(make_server, tmp_path: Path):
    config = Config(local_model=LocalModelConfig(path=str(tmp_path / "absent.gguf")))
    running = await make_server(config)
    await running.client.open_session("g1")
    return running


async def test_get_info_shows_the_local_profile_not_ready(weightless) -> None:
    info = await weightless.client.get_info()
    (local,) = [p for p in info.profiles if p.name == "local"]
    assert local.local and not local.ready
    assert "absent.gguf" in local.unavailable_reason
    assert not info.local_model.weights_found and "absent.gguf" in info.local_model.problem
    assert "local_model" not in info.capabilities


async def test_a_run_on_it_fails_at_once_with_failed_precondition(weightless) -> None:
    request = apb.RunRequest(session_id="g1", narrate=apb.NarrateInput(text="The gate opens."))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async with asyncio.timeout(5):  # not after litellm's import, and never retried
            async for _ in weightless.client.run(request):
                pass
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_reason(caught.value) == "MODEL_NOT_INSTALLED"
    assert "absent.gguf" in (caught.value.details() or "")


async def test_demo_without_weights_names_both_ways_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_PATH_ENV, str(tmp_path / "absent.gguf"))  # the launched sidecar inherits it
    monkeypatch.delenv("GAME_SIDECAR_CONFIG", raising=False)
    # Its own stream, not capsys: where the weights are installed, another test's in-process
    # server may be loading the model now, and llama-cpp-python swaps sys.stderr while it loads.
    err = io.StringIO()
    assert await run_demo(out=io.StringIO(), err=err) == 1
    assert "weights" in err.getvalue() and "--config" in err.getvalue()


def test_version_says_whether_the_weights_were_found(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, MODEL_PATH_ENV: str(tmp_path / "absent.gguf")}
    env.pop("GAME_SIDECAR_CONFIG", None)
    out = subprocess.run([sys.executable, "-m", "sidecar", "--version"], env=env, capture_output=True, text=True,
                         timeout=30, check=True).stdout
    assert out.startswith("game-sidecar ")
    assert "embedded model: not available" in out and "absent.gguf" in out
    shipped = tmp_path / "model.gguf"
    shipped.write_bytes(b"GGUF")
    env[MODEL_PATH_ENV] = str(shipped)
    out = subprocess.run([sys.executable, "-m", "sidecar", "--version"], env=env, capture_output=True, text=True,
                         timeout=30, check=True).stdout
    assert f"embedded model: found (env: {shipped})" in out
