"""The `sidecar_cmd` fixture: every e2e test that takes it runs against the venv sidecar
and the frozen build (tests/e2e/launchers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from launchers import FROZEN_EXE, SidecarCommand, player_env, require_frozen


@pytest.fixture(params=["venv", "frozen"])
def sidecar_cmd(request: pytest.FixtureRequest, tmp_path: Path) -> SidecarCommand:
    if request.param == "venv":
        return SidecarCommand("venv", [sys.executable, "-m", "sidecar", "serve"], player_env(tmp_path))
    require_frozen()
    return SidecarCommand("frozen", [str(FROZEN_EXE), "serve"], player_env(tmp_path))
