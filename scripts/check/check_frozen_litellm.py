#!/usr/bin/env python3
"""Checks that the litellm.proxy modules the frozen build leaves out break no other litellm
module's import: the spec keeps only what litellm's client path imports
(packaging/litellm_runtime_modules.py), and a provider path that imports a left-out module
at the top of one of its files would fail only on a player's machine, with that provider.

Reads the module list of the build's archive (PYZ), then imports every litellm module in it
twice in the venv, in fresh processes: once as installed, once with every litellm module
the archive lacks made unimportable (the left-out proxy modules, and what only they
import; extension modules and folders of `_internal/` stay). A module that imports the
first way and not the second loses its import in the frozen build. Modules that need
packages the venv does not have either (fastapi, redis...) fail both ways and are not the
build's doing. Known losses,
proxy-server features the sidecar never runs, are listed below; any other fails the check.
Imports made inside functions are not covered: the frozen e2e tests' litellm-transport run
covers the OpenAI path's.

Usage: .venv/bin/python scripts/check/check_frozen_litellm.py dist/game-sidecar/game-sidecar
Prints a JSON summary; exits 1 on an unexpected loss.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

#: Proxy-server features whose modules import a left-out proxy module at their top.
KNOWN_LOSSES = {
    "litellm.accounting.snapshot": "the proxy's spend accounting",
    "litellm.integrations.model_deprecation_email": "the proxy's deprecation e-mails",
    "litellm.llms.bedrock.passthrough.guardrail_translation": "the proxy's pass-through guardrails",
    "litellm.llms.bedrock.passthrough.guardrail_translation.handler": "the proxy's pass-through guardrails",
}

_CHILD = r"""
import importlib, importlib.abc, importlib.machinery, json, os, sys, warnings
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
warnings.simplefilter("ignore")
modules, kept, block, internal = json.load(open(sys.argv[1]))
kept = set(kept)

class LeftOut(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith("litellm.") and name not in kept:
            real = importlib.machinery.PathFinder.find_spec(name, path)
            # Extension modules are files in the folder, not archive entries, and a folder of data
            # files there (litellm's tokenizers) imports as a namespace package: those stay importable.
            in_folder = internal and os.path.isdir(os.path.join(internal, *name.split(".")))
            if not in_folder and (real is None or not (real.origin or "").endswith(".so")):
                raise ModuleNotFoundError(f"not in the frozen build: {name}", name=name)
        return None

if block:
    sys.meta_path.insert(0, LeftOut())
failed = {}
for name in modules:
    try:
        importlib.import_module(name)
    except BaseException as err:  # a module may raise anything at import; each is recorded
        failed[name] = f"{type(err).__name__}: {err}"[:300]
json.dump(failed, sys.stdout)
"""


def archive_modules(exe: Path) -> list[str]:
    from PyInstaller.archive.readers import CArchiveReader, ZlibArchiveReader

    pyz = CArchiveReader(str(exe)).open_embedded_archive("PYZ.pyz")
    assert isinstance(pyz, ZlibArchiveReader)
    return sorted(pyz.toc)


def import_failures(modules: list[str], kept: list[str], block: bool, internal: Path | None = None) -> dict[str, str]:
    """{module: why} of the `modules` that fail to import; with `block`, litellm modules not in `kept`
    (nor extension modules, nor folders under `internal`) cannot be imported."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([modules, kept, block, str(internal or "")], f)
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, f.name], capture_output=True, text=True, timeout=1800)
    finally:
        Path(f.name).unlink()
    if proc.returncode != 0:
        raise SystemExit(f"check_frozen_litellm: the import run failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout))


def main(exe: Path) -> int:
    names = archive_modules(exe)
    kept = [n for n in names if n.startswith("litellm.")]
    modules = [n for n in names if n.startswith("litellm.") and not n.startswith("litellm.proxy")]
    venv = import_failures(modules, kept, block=False)
    frozen = import_failures(modules, kept, block=True, internal=exe.parent / "_internal")
    lost = {name: why for name, why in frozen.items() if name not in venv}
    unexpected = {name: why for name, why in lost.items() if name not in KNOWN_LOSSES}
    proxy_kept = sum(name.startswith("litellm.proxy.") for name in kept)
    print(json.dumps({"litellm_modules": len(modules), "proxy_modules_kept": proxy_kept,
                      "fail_in_venv_too": len(venv), "lost_known": sorted(set(lost) & set(KNOWN_LOSSES)),
                      "lost_unexpected": unexpected}, indent=1))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
