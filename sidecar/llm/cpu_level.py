"""Can this CPU run the bundled llama.cpp? Asked before llama.cpp is loaded.

llama.cpp built for one x86-64 level dies with SIGILL on a CPU below it, and the whole
sidecar (every session, every provider run) dies with it. The pinned llama-cpp-python wheel
compiles its one CPU backend (`libggml-cpu.so`) for x86-64-v3: AVX, AVX2, FMA, F16C, BMI2
(docs/shipping.md, "CPU requirements"; scripts/check/check_cpu_level.py checks the folder). On a
CPU without them the embedded model is refused with FAILED_PRECONDITION and a reason instead.

A llama.cpp built with GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS ships one
`libggml-cpu-<variant>.so` per level and picks one at run time: then nothing is checked,
and `load_backends` has ggml load the variant this CPU runs best (llama.cpp's own tools
do that at start; llama-cpp-python does not, and without it no model loads).

The CPU is asked through numpy's run-time CPUID detection (numpy is a dependency of
llama-cpp-python, so it is there whenever llama.cpp is), not /proc/cpuinfo: CPUID is what an
emulated older CPU (qemu -cpu Nehalem, the test) answers truthfully, and it works on every OS.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sidecar.errors import ModelNotInstalled

__all__ = ["REQUIRED_FEATURES", "missing_cpu_features", "check_llama_cpu", "load_backends"]

#: numpy's names for what the single-level libggml-cpu.so of the pinned wheel executes.
REQUIRED_FEATURES = ("AVX", "AVX2", "FMA3", "F16C", "BMI2")


def _llama_lib_dir() -> Path | None:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "lib"


def selects_at_run_time(lib_dir: Path) -> bool:
    """True for a GGML_CPU_ALL_VARIANTS build (libggml-cpu-haswell.so, ...)."""
    return any(lib_dir.glob("libggml-cpu-*"))


def missing_cpu_features(lib_dir: Path | None, features: Mapping[str, bool] | None = None,
                         machine: str | None = None) -> list[str]:
    """The required features this CPU lacks; [] when it has them or nothing needs checking."""
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64") or lib_dir is None or not lib_dir.is_dir():
        return []
    if selects_at_run_time(lib_dir):
        return []
    if features is None:
        try:
            from numpy._core._multiarray_umath import __cpu_features__  # CPUID, at import
        except ImportError:  # then llama_cpp's own import fails, and says why
            return []
        except RuntimeError:  # numpy's refusal of a CPU below its x86-64-v2 baseline, when it gets to say so
            return list(REQUIRED_FEATURES)
        # Below x86-64-v2, numpy's own code may die with SIGILL before that refusal (emulated
        # qemu64 CPU): a known gap (docs/shipping.md, "CPU requirements").
        features = __cpu_features__
    return [name for name in REQUIRED_FEATURES if not features.get(name, False)]


def check_llama_cpu() -> None:
    """Raise ModelNotInstalled when this CPU cannot run the bundled llama.cpp."""
    missing = missing_cpu_features(_llama_lib_dir())
    if missing:
        raise ModelNotInstalled(
            f"this CPU lacks {', '.join(missing)}, which the bundled llama.cpp needs (it is built for "
            "x86-64-v3; docs/shipping.md, 'CPU requirements'): use a provider profile (docs/runs.md), "
            "or ship a llama.cpp built with GGML_CPU_ALL_VARIANTS"
        )


_backends_lock = threading.Lock()
_backends_loaded = False


def load_backends() -> None:
    """For a llama.cpp that picks its CPU backend at run time: have ggml load the variant
    that scores best on this CPU (each variant's score asks CPUID, in code built for the
    lowest level). Once per process, after llama_cpp is imported; nothing for a one-level
    build, which registers its backend itself. ModelNotInstalled when none fits."""
    global _backends_loaded
    if _backends_loaded:  # (every model build asks: no file system work once done)
        return
    lib_dir = _llama_lib_dir()
    if lib_dir is None or not lib_dir.is_dir() or not selects_at_run_time(lib_dir):
        return
    with _backends_lock:
        if _backends_loaded:
            return
        lib = _ggml_of_llama(lib_dir)
        lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        lib.ggml_backend_load_all_from_path.restype = None
        lib.ggml_backend_reg_count.argtypes = []
        lib.ggml_backend_reg_count.restype = ctypes.c_size_t
        lib.ggml_backend_load_all_from_path(os.fsencode(lib_dir))
        if lib.ggml_backend_reg_count() == 0:
            raise ModelNotInstalled(
                f"llama.cpp has no CPU backend this CPU can run in {lib_dir} (libggml-cpu-*.so): "
                "use a provider profile (docs/runs.md)"
            )
        _backends_loaded = True


def _ggml_of_llama(lib_dir: Path) -> Any:
    """The libggml that libllama uses: the registry the model's load looks in.

    libllama links libggml by its SONAME (libggml.so.0). pip installs a wheel's symlinks as
    copies, so llama_cpp's own handle (`_ggml.libggml`, opened as libggml.so) is a second
    copy with a registry of its own, and backends loaded into it are never seen ("no
    backends are loaded"). Opening the SONAME file again returns the copy libllama loaded."""
    for path in sorted(lib_dir.glob("libggml.so.*")):
        if path.name.count(".") == 2:  # libggml.so.0, not libggml.so.0.25.3
            return ctypes.CDLL(str(path))
    from llama_cpp import _ggml  # one file (Windows' ggml.dll, the frozen build's symlinks)

    return _ggml.libggml
