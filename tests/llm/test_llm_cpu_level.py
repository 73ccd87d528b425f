"""The embedded model is refused, not crashed into, on a CPU below the bundled llama.cpp's
level (sidecar/llm/cpu_level.py). The CPUID path is checked on emulated CPUs (qemu-user)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.errors import ModelNotInstalled
from sidecar.llm import cpu_level
from sidecar.llm.cpu_level import REQUIRED_FEATURES, missing_cpu_features

ALL = dict.fromkeys(REQUIRED_FEATURES, True)


def single_level_lib(tmp_path: Path) -> Path:
    (tmp_path / "libggml-cpu.so").write_bytes(b"")
    return tmp_path


def test_a_cpu_without_avx2_lacks_what_the_single_level_build_needs(tmp_path: Path) -> None:
    nehalem = dict(ALL, AVX=False, AVX2=False, FMA3=False, F16C=False, BMI2=False)
    assert missing_cpu_features(single_level_lib(tmp_path), nehalem, "x86_64") == list(REQUIRED_FEATURES)
    assert missing_cpu_features(single_level_lib(tmp_path), dict(ALL, FMA3=False), "AMD64") == ["FMA3"]
    assert missing_cpu_features(single_level_lib(tmp_path), ALL, "x86_64") == []


def test_nothing_to_check_for_run_time_selection_other_machines_or_no_llama(tmp_path: Path) -> None:
    nothing = dict.fromkeys(REQUIRED_FEATURES, False)
    lib = single_level_lib(tmp_path)
    (lib / "libggml-cpu-haswell.so").write_bytes(b"")
    assert missing_cpu_features(lib, nothing, "x86_64") == []  # GGML_CPU_ALL_VARIANTS
    other = tmp_path / "other"
    other.mkdir()
    assert missing_cpu_features(single_level_lib(other), nothing, "arm64") == []
    assert missing_cpu_features(None, nothing, "x86_64") == []


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python (the local extra)")
def test_loading_the_model_on_such_a_cpu_fails_with_the_reason_before_llama_cpp_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sidecar.llm.local import LocalLLM

    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setattr(cpu_level, "missing_cpu_features", lambda lib_dir: ["AVX2", "FMA3"])
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    llm = LocalLLM(str(weights))
    try:
        with pytest.raises(ModelNotInstalled, match="this CPU lacks AVX2, FMA3"):
            llm.preload()
    finally:
        llm.close()
    assert "llama_cpp" not in sys.modules, "llama.cpp must not be loaded on a CPU that cannot run it"


QEMU = shutil.which("qemu-x86_64")
PROBE = ("from sidecar.llm.cpu_level import _llama_lib_dir, missing_cpu_features; "
         "print(missing_cpu_features(_llama_lib_dir()))")


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(QEMU is None, reason="needs qemu-user (qemu-x86_64), which scripts/bootstrap --cpp installs")
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python (the local extra)")
@pytest.mark.parametrize(("cpu", "missing"), [("Nehalem", list(REQUIRED_FEATURES)), ("Haswell", [])])
def test_emulated_cpus_are_told_apart(cpu: str, missing: list[str]) -> None:
    assert QEMU is not None
    # Some machines force OpenBLAS's core type (OPENBLAS_CORETYPE=Haswell, for a host CPU
    # older OpenBLAS builds misdetect): inherited, it runs AVX2 kernels on the emulated
    # Nehalem, which dies at `import numpy`. A player's Nehalem has no such variable; here
    # the core type stays set, to the emulated CPU's own.
    env = dict(os.environ)
    if "OPENBLAS_CORETYPE" in env:
        env["OPENBLAS_CORETYPE"] = cpu.upper()
    proc = subprocess.run([QEMU, "-cpu", cpu, sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=540, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == repr(missing)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python (the local extra)")
async def test_once_a_load_finds_the_cpu_too_old_get_info_says_the_profile_is_not_ready(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sidecar.config import Config, LocalModelConfig
    from sidecar.llm.gateway import ModelGateway

    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setattr(cpu_level, "missing_cpu_features", lambda lib_dir: ["AVX2"])
    gateway = ModelGateway(Config(local_model=LocalModelConfig(path=str(weights))))
    try:
        (before,) = [p for p in gateway.profiles_info() if p["name"] == "local"]
        assert before["ready"]  # nothing tried yet: the check needs numpy, not at start-up
        with pytest.raises(ModelNotInstalled, match="this CPU lacks AVX2"):
            await gateway.prepare_profile("local")
        (after,) = [p for p in gateway.profiles_info() if p["name"] == "local"]
        assert not after["ready"] and "this CPU lacks AVX2" in after["unavailable_reason"]
        assert not gateway.local_model_status().runtime_found
    finally:
        await gateway.aclose()
