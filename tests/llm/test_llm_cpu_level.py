"""The embedded model is refused, not crashed into, on a CPU below the bundled llama.cpp's
level (sidecar/llm/cpu_level.py). The CPUID path is checked on emulated CPUs (qemu-user)."""

from __future__ import annotations

import importlib.util
import json
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
_LIB = cpu_level._llama_lib_dir()
#: The installed llama.cpp picks its CPU backend at run time (scripts/build_llama_runtime).
PORTABLE = _LIB is not None and _LIB.is_dir() and cpu_level.selects_at_run_time(_LIB)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python (the local extra)")
def test_a_portable_build_loads_its_backends_or_says_none_fits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []

    class Fn:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args):
            return self.fn(*args)

    class Lib:  # libggml's two functions load_backends calls
        ggml_backend_load_all_from_path = Fn(calls.append)
        ggml_backend_reg_count = Fn(lambda: 0)

    from llama_cpp import _ggml

    lib = single_level_lib(tmp_path)
    (lib / "libggml-cpu-sse42.so").write_bytes(b"")
    monkeypatch.setattr(_ggml, "libggml", Lib())
    monkeypatch.setattr(cpu_level, "_llama_lib_dir", lambda: lib)
    monkeypatch.setattr(cpu_level, "_backends_loaded", False)
    with pytest.raises(ModelNotInstalled, match="no CPU backend this CPU can run"):
        cpu_level.load_backends()
    assert calls == [os.fsencode(lib)]
    Lib.ggml_backend_reg_count = Fn(lambda: 2)
    cpu_level.load_backends()
    cpu_level.load_backends()  # once per process
    assert calls == [os.fsencode(lib)] * 2
    monkeypatch.setattr(cpu_level, "_backends_loaded", False)
    (lib / "libggml-cpu-sse42.so").unlink()
    cpu_level.load_backends()  # a one-level build registers its backend itself
    assert len(calls) == 2


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(QEMU is None, reason="needs qemu-user (qemu-x86_64), which scripts/bootstrap --cpp installs")
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python (the local extra)")
@pytest.mark.parametrize(
    ("cpu", "missing"), [("Nehalem", [] if PORTABLE else list(REQUIRED_FEATURES)), ("Haswell", [])]
)
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


SPEAK = """
import json
from sidecar.llm.cpu_level import check_llama_cpu, load_backends
from sidecar.llm.weights import find_local_model, resolve_weights
check_llama_cpu()
import llama_cpp
load_backends()
llm = llama_cpp.Llama(resolve_weights(find_local_model()), n_ctx=256, n_threads=1, verbose=False)
out = llm("The goblin attacks! The innkeeper", max_tokens=6, temperature=0)
print(json.dumps(out["choices"][0]["text"]))
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(QEMU is None, reason="needs qemu-user (qemu-x86_64), which scripts/bootstrap --cpp installs")
@pytest.mark.skipif(not PORTABLE, reason="no portable llama.cpp installed (scripts/build_llama_runtime --install)")
def test_the_portable_runtime_speaks_on_an_x86_64_v2_cpu() -> None:
    # The real weights on an emulated Nehalem (no AVX): the sse42 backend is the one loaded,
    # and it speaks. (Not word for word as the host's backend: other kernels round otherwise,
    # and a greedy reply parts from the host's after a few tokens.)
    from sidecar.llm.weights import find_local_model

    if not find_local_model().ready:
        pytest.skip("needs the embedded model's weights (scripts/bootstrap --retry-weights)")
    assert QEMU is not None
    env = dict(os.environ)
    if "OPENBLAS_CORETYPE" in env:
        env["OPENBLAS_CORETYPE"] = "NEHALEM"
    old = subprocess.run([QEMU, "-cpu", "Nehalem", sys.executable, "-c", SPEAK], capture_output=True, text=True,
                         timeout=840, env=env)
    assert old.returncode == 0, old.stderr[-2000:]  # -4 would be SIGILL
    assert "libggml-cpu-sse42.so" in old.stderr  # llama.cpp's "loaded CPU backend from ..."
    assert len(json.loads(old.stdout).split()) >= 2


def test_bootstrap_keeps_the_pinned_wheel_where_no_portable_runtime_was_built(tmp_path: Path) -> None:
    """scripts/bootstrap runs `build_llama_runtime --if-built` on every machine: with nothing
    in the cache it never compiles and never touches the venv, and says so in one line."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "build_llama_runtime"
    env = {**os.environ, "GAME_SIDECAR_CACHE": str(tmp_path)}
    done = subprocess.run(["bash", str(script), "--if-built"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "keeping the pinned wheel" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing fetched, nothing built
