#!/usr/bin/env python3
"""Run the sidecar on an emulated older CPU (qemu-user) through a scripted run and a
provider run against the fake OpenAI server: what scripts/check/check_cpu_level.py's static scan
cannot prove about kernels selected at run time. Slow (minutes: everything is emulated),
so it is a script, not a test. Prints one JSON object; exit 1 on a failed run.

It runs the venv's sidecar (`python -m sidecar serve`), whose native libraries are the
ones the frozen folder bundles. Not the frozen executable itself: PyInstaller's Linux
bootloader re-executes itself at start, and qemu-user does not follow an exec, so the
restarted process would run on the real CPU (seen with `qemu-x86_64 -strace`).

With --local, also a run on the embedded model's profile (`local`) with a file that is not
a model: on a CPU below what the bundled llama.cpp needs, that run must end with
FAILED_PRECONDITION (and the sidecar stay up) rather than kill the process with SIGILL.

Usage: .venv/bin/python scripts/check/check_old_cpu.py [--cpu Nehalem] [--local]
qemu's CPU models: qemu64 (x86-64 baseline), Nehalem (x86-64-v2), Haswell (x86-64-v3).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import grpc  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402

from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.v1 import agent_service_pb2 as agent  # noqa: E402

CONFIG = """
default_profile = "cloud"
[profiles.cloud]
model = "openai/ok"
api_base = "{base_url}"
api_key_env = "FAKE_OPENAI_KEY"
max_retries = 0
[profiles.fake]
model = "scripted/test"
"""


async def main(cpu: str, local: bool) -> dict[str, object]:
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        raise SystemExit("check_old_cpu: qemu-x86_64 not found (apt-get install qemu-user)")
    result: dict[str, object] = {"cpu": cpu}
    async with FakeOpenAI(chunks=3) as provider:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "sidecar.toml"
            config.write_text(CONFIG.format(base_url=provider.base_url))
            env = {"HOME": tmp, "PATH": tmp, "FAKE_OPENAI_KEY": "sk-fake"}
            if local:
                (Path(tmp) / "not-a-model.gguf").write_bytes(b"GGUF")
                env["GAME_SIDECAR_MODEL_PATH"] = str(Path(tmp) / "not-a-model.gguf")
            t0 = time.perf_counter()
            command = [qemu, "-cpu", cpu, sys.executable, "-m", "sidecar", "serve"]
            sidecar = await SidecarProcess.launch(["--config", str(config)], command=command, env=env, timeout=600)
            result["handshake_s"] = round(time.perf_counter() - t0, 1)
            async with sidecar:
                await sidecar.client.open_session("s")
                for profile in ("fake", "cloud", *(["local"] if local else [])):
                    request = agent.RunRequest(session_id="s", profile=profile, narrate=agent.NarrateInput(text="Go."))
                    try:
                        kinds = [e.WhichOneof("kind") async for e in sidecar.client.run(request, timeout=900)]
                        result[profile] = "ok" if kinds[-1] == "finished" else f"ended with {kinds[-1]}"
                    except grpc.aio.AioRpcError as exc:
                        result[profile] = f"{exc.code().name}: {exc.details()}"[:300]
                result["alive_after_runs"] = sidecar.proc.returncode is None
            result["exit_code"] = sidecar.proc.returncode
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", default="Nehalem")
    parser.add_argument("--local", action="store_true", help="also run the local profile (see above)")
    args = parser.parse_args()
    out = asyncio.run(main(args.cpu, args.local))
    print(json.dumps(out))
    ok = out.get("fake") == "ok" and out.get("cloud") == "ok" and out.get("alive_after_runs") is True
    sys.exit(0 if ok else 1)
