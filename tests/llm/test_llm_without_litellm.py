"""A configuration whose profiles do not need litellm never imports it: the real
server (gRPC on a Unix socket) in a fresh Python process serves runs on the
scripted model and on an OpenAI-compatible server (the fake, on the default
"auto" transport), reports llm_ready, and litellm is not in sys.modules. With a
litellm-transport profile added, the same process imports it in the background.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import asyncio, json, os, sys, tempfile
from fakes.openai_server import FakeOpenAI
from sidecar.client import SidecarClient
from sidecar.config import Config, ModelProfile
from sidecar.lifecycle import ListenSpec
from sidecar.server import SidecarServer
from sidecar.v1 import agent_service_pb2 as apb

from waits import eventually

WITH_LITELLM = sys.argv[1] == "with"


async def ready(client):
    return (await client.get_info()).llm_ready


async def main():
    out = {}
    async with FakeOpenAI(chunks=5, interval_s=0.001) as fake:
        profiles = {
            "fake": ModelProfile(model="scripted/t", max_retries=0),
            "vllm": ModelProfile(model="openai/ok", api_base=fake.base_url, max_retries=0),
        }
        if WITH_LITELLM:
            profiles["cloud"] = ModelProfile(model="openai/ok", api_base=fake.base_url, transport="litellm")
        config = Config(profiles=profiles, default_profile="fake")
        with tempfile.TemporaryDirectory() as tmp:
            listen = ListenSpec("unix", os.path.join(tmp, "s.sock"))
            server = SidecarServer(config, "t")
            await server.start(listen)
            client = SidecarClient(listen.grpc_target, "t")
            await client.open_session("g1")
            for name in ("fake", "vllm"):
                narrate = apb.NarrateInput(text="The door opens.")
                request = apb.RunRequest(session_id="g1", narrate=narrate, profile=name)
                events = [e async for e in client.run(request)]
                out[name] = {
                    "texts": sum(e.HasField("text") for e in events),
                    "finished": events[-1].HasField("finished"),
                    "completion_tokens": events[-2].usage.completion_tokens,
                }
            # llm_ready once the background loading is over (litellm's import can take long)
            out["llm_ready"] = await eventually(lambda: ready(client), timeout=60, what="llm_ready")
            out["litellm_imported"] = "litellm" in sys.modules
            out["fake_requests"] = len(fake.seen.requests)
            await client.close()
            await server.stop("test over")
    print(json.dumps(out))


asyncio.run(main())
"""


def _run(mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent)]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_scripted_and_openai_compatible_profiles_never_import_litellm() -> None:
    out = _run("without")
    for name in ("fake", "vllm"):
        assert out[name]["texts"] >= 1 and out[name]["finished"] and out[name]["completion_tokens"] > 0, out
    assert out["fake_requests"] == 1  # the vllm run reached the server on the sse transport
    assert out["llm_ready"] is True
    assert out["litellm_imported"] is False


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_litellm_profile_loads_it_in_the_background() -> None:
    out = _run("with")
    assert out["fake"]["finished"] and out["vllm"]["finished"]
    assert out["llm_ready"] is True
    assert out["litellm_imported"] is True
