"""Runs through the real process, venv and frozen alike (`sidecar_cmd`): the scripted
model, and a provider profile against the fake OpenAI server. With an empty HOME and
no Python on PATH (tests/e2e/conftest.py), these prove the frozen folder carries
litellm's data files, tiktoken's encodings and the gRPC services it needs."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import grpc
import pytest
from fakes.openai_server import FakeOpenAI, chunk_text
from launchers import (
    FROZEN_EXE,
    PROVIDERS_ONLY_EXE,
    SidecarCommand,
    player_env,
    require_frozen,
    without_weights_package,
)

from sidecar.client import SidecarProcess
from sidecar.v1 import agent_service_pb2 as agent

# The first run waits for litellm's import, which takes seconds on a loaded machine.
pytestmark = pytest.mark.timeout(120)
RUN_TIMEOUT_S = 90.0

SCRIPTED = textwrap.dedent(
    """
    default_profile = "fake"

    [profiles.fake]
    model = "scripted/test"
    max_retries = 0

    [profiles.fake.script]
    replies = ["The goblin staggers back. Its sword clatters to the floor!"]
    """
)


def provider_config(base_url: str, transport: str = "auto") -> str:
    return textwrap.dedent(
        f"""
        default_profile = "cloud"

        [profiles.cloud]
        model = "openai/ok"
        api_base = "{base_url}"
        api_key_env = "FAKE_OPENAI_KEY"
        transport = "{transport}"
        max_retries = 0
        """
    )


async def narrate(sidecar: SidecarProcess, text: str) -> tuple[str, list[str]]:
    """(the narration's text, the kinds of events in order) of one run in a fresh session."""
    client = sidecar.client
    await client.open_session("slot-1")
    request = agent.RunRequest(session_id="slot-1", narrate=agent.NarrateInput(text=text))
    pieces: list[str] = []
    kinds: list[str] = []
    async for event in client.run(request, timeout=RUN_TIMEOUT_S):
        kind = event.WhichOneof("kind")
        kinds.append(kind)
        if kind == "text":
            pieces.append(event.text.text)
    return "".join(pieces), kinds


async def test_scripted_run(sidecar_cmd: SidecarCommand, tmp_path: Path) -> None:
    config = tmp_path / "sidecar.toml"
    config.write_text(SCRIPTED)
    async with await sidecar_cmd.launch(["--config", str(config)]) as sidecar:
        text, kinds = await narrate(sidecar, "The goblin attacks!")
    assert text == "The goblin staggers back. Its sword clatters to the floor!"
    assert kinds[0] == "started" and kinds[-2:] == ["usage", "finished"]


# Both transports: "sse" is the sidecar's own client; "litellm" runs litellm's OpenAI path, so in
# the frozen build it proves the litellm modules, data files and proxy modules the spec keeps are
# the ones that path imports (packaging/game-sidecar.spec leaves the rest of litellm.proxy out).
@pytest.mark.parametrize("transport", ["sse", "litellm"])
async def test_provider_run_against_the_fake_openai_server(sidecar_cmd: SidecarCommand, tmp_path: Path,
                                                           transport: str) -> None:
    config = tmp_path / "sidecar.toml"
    async with FakeOpenAI(chunks=5) as provider:
        config.write_text(provider_config(provider.base_url, transport))
        env = dict(sidecar_cmd.env, FAKE_OPENAI_KEY="sk-fake")
        async with await sidecar_cmd.launch(["--config", str(config)], env=env) as sidecar:
            text, kinds = await narrate(sidecar, "The door creaks open.")
        assert len(provider.seen.requests) == 1
    assert text.split() == [chunk_text(0, seq).strip() for seq in range(5)]
    assert kinds[0] == "started" and kinds[-1] == "finished"


@pytest.mark.parametrize("transport", ["sse", "litellm"])
async def test_providers_only_build_runs_a_provider_and_says_it_has_no_local_runtime(tmp_path: Path,
                                                                                    transport: str) -> None:
    # The folder a game that only uses providers ships: same exclusions and stripping as the full
    # build, minus llama.cpp and numpy (scripts/package --without-local-model; scripts/test builds it).
    exe = require_frozen(PROVIDERS_ONLY_EXE, "scripts/package --without-local-model")
    sidecar_cmd = SidecarCommand("providers-only", [str(exe), "serve"], player_env(tmp_path))
    config = tmp_path / "sidecar.toml"
    async with FakeOpenAI(chunks=3) as provider:
        config.write_text(provider_config(provider.base_url, transport))
        env = dict(sidecar_cmd.env, FAKE_OPENAI_KEY="sk-fake")
        async with await sidecar_cmd.launch(["--config", str(config)], env=env) as sidecar:
            info = await sidecar.client.get_info()
            text, kinds = await narrate(sidecar, "The door creaks open.")
    assert text.split() == [chunk_text(0, seq).strip() for seq in range(3)]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert not info.local_model.runtime_found
    assert "llama-cpp-python is not installed" in info.local_model.problem


async def test_getinfo_reports_the_missing_weights_with_the_way_out(sidecar_cmd: SidecarCommand) -> None:
    # No weights on this machine and none next to the executable: said, not crashed.
    async with await without_weights_package(sidecar_cmd).launch() as sidecar:
        info = await sidecar.client.get_info()
    assert info.local_model.runtime_found
    assert not info.local_model.weights_found
    assert "GAME_SIDECAR_MODEL_PATH" in info.local_model.problem


async def test_the_embedded_models_runtime_loads(sidecar_cmd: SidecarCommand, tmp_path: Path) -> None:
    # No real weights here: a file that is not a model. Reaching llama.cpp's own "failed to load"
    # proves llama.cpp, numpy and OpenBLAS import and load in this form of the sidecar.
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"GGUF")
    env = dict(sidecar_cmd.env, GAME_SIDECAR_MODEL_PATH=str(bogus))
    async with await sidecar_cmd.launch(env=env) as sidecar:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await narrate(sidecar, "The goblin attacks!")
        assert sidecar.proc.returncode is None, "the sidecar must survive a model that does not load"
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()
    assert "the embedded model failed to load" in (err.value.details() or "")


def test_frozen_build_finds_weights_in_models_next_to_its_executable(tmp_path: Path) -> None:
    require_frozen()
    # A game's folder: the executable, its _internal/ (linked, it is large) and models/.
    folder = tmp_path / "game-sidecar"
    folder.mkdir()
    shutil.copy2(FROZEN_EXE, folder / FROZEN_EXE.name)
    (folder / "_internal").symlink_to(FROZEN_EXE.parent / "_internal")
    (folder / "models").mkdir()
    weights = folder / "models" / "gemma3-270m.gguf"
    weights.write_bytes(b"GGUF")  # found, not loaded: --version only looks
    proc = subprocess.run([str(folder / FROZEN_EXE.name), "--version"], env=player_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"embedded model: found (folder: {weights})" in proc.stdout
