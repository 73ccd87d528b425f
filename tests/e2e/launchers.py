"""The sidecar as a game launches it, in both forms: from the venv (`python -m sidecar
serve`) and the frozen folder a game ships (dist/game-sidecar/, built by scripts/package).
Every test that takes `sidecar_cmd` runs against both, with the same assertions.

The environment is a player's machine: an empty HOME, no Python (nor anything else)
on PATH, nothing of the developer's GAME_SIDECAR_* or LITELLM_* settings.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sidecar.client import SidecarProcess
from sidecar.llm.weights import WEIGHTS_PACKAGE

ROOT = Path(__file__).resolve().parents[2]
#: Where scripts/package puts the frozen build (scripts/test always builds it first).
FROZEN_EXE = ROOT / "dist" / "game-sidecar" / "game-sidecar"
#: Where `scripts/package --without-local-model` puts the providers-only build (scripts/test builds it too).
PROVIDERS_ONLY_EXE = ROOT / "dist" / "providers-only" / "game-sidecar" / "game-sidecar"


@dataclass
class SidecarCommand:
    """How to start one form of the sidecar: `serve` is argv up to and including "serve"."""

    name: str
    serve: list[str]
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        return [*self.serve, *args]

    async def launch(self, args: Sequence[str] = (), **kwargs: Any) -> SidecarProcess:
        kwargs.setdefault("env", self.env)
        # A loaded shared machine can take seconds to start a frozen build the first time.
        kwargs.setdefault("timeout", 30.0)
        kwargs.setdefault("command", self.serve)
        return await SidecarProcess.launch(args, **kwargs)


def player_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    empty_bin = tmp_path / "empty-bin"
    home.mkdir()
    empty_bin.mkdir()
    env = {"HOME": str(home), "PATH": str(empty_bin), "LANG": "C.UTF-8"}
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def without_weights_package(cmd: SidecarCommand) -> SidecarCommand:
    """The same sidecar on a machine without the weights' pip package: the frozen build
    never carries it; the venv's python hides it (a None in sys.modules is what an
    uninstalled package looks like to importlib.util.find_spec)."""
    if cmd.name != "venv":
        return cmd
    hide = (f"import runpy, sys; sys.modules[{WEIGHTS_PACKAGE!r}] = None; "
            "runpy.run_module('sidecar', run_name='__main__', alter_sys=True)")
    return SidecarCommand(cmd.name, [cmd.serve[0], "-c", hide, "serve"], cmd.env)


def require_frozen(exe: Path = FROZEN_EXE, build: str = "scripts/package") -> Path:
    """A frozen executable; skips without it, except under scripts/test, which builds
    both folders first (GAME_SIDECAR_REQUIRE_FROZEN)."""
    if not os.access(exe, os.X_OK):
        if os.environ.get("GAME_SIDECAR_REQUIRE_FROZEN"):
            pytest.fail(f"no frozen build at {exe} although scripts/test builds it first ({build})")
        pytest.skip(f"frozen build not built: no {exe} ({build} builds it; scripts/test always does)")
    return exe
