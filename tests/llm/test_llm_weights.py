"""Where the embedded model's weights are looked up, and what a machine
without them is told: config, then the environment, then models/ next to a
frozen executable, then the weights package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sidecar.errors import ModelNotInstalled
from sidecar.llm import weights
from sidecar.llm.weights import MODEL_PATH_ENV, find_local_model, resolve_weights


@pytest.fixture
def no_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine that did not install the weights package."""
    monkeypatch.setattr(weights, "WEIGHTS_PACKAGE", "no_such_weights_package_here")


def gguf(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF")
    return path


def test_config_path_wins_over_the_environment(tmp_path: Path) -> None:
    from_config, from_env = gguf(tmp_path, "a.gguf"), gguf(tmp_path, "b.gguf")
    status = find_local_model(str(from_config), env={MODEL_PATH_ENV: str(from_env)})
    assert (status.weights_source, status.weights_path) == ("config", str(from_config))
    if status.runtime_found:  # llama-cpp-python is a dev dependency; the weights are not
        assert resolve_weights(status) == str(from_config)


def test_environment_is_used_without_a_config_setting(tmp_path: Path, no_package: None) -> None:
    from_env = gguf(tmp_path, "b.gguf")
    status = find_local_model("", env={MODEL_PATH_ENV: str(from_env)})
    assert status.weights_found and status.weights_source == "env"


def test_a_wrong_setting_is_reported_not_skipped(tmp_path: Path) -> None:
    status = find_local_model(str(tmp_path / "missing.gguf"), env={})
    assert not status.weights_found and not status.ready
    assert "[local_model] path" in status.problem and "missing.gguf" in status.problem
    with pytest.raises(ModelNotInstalled) as caught:
        resolve_weights(status)
    assert caught.value.code == "FAILED_PRECONDITION" and caught.value.reason == "MODEL_NOT_INSTALLED"


def test_models_folder_next_to_a_frozen_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_package: None
) -> None:
    shipped = gguf(tmp_path, "models/gemma3-270m.gguf")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "game-sidecar"))
    status = find_local_model("", env={})
    assert (status.weights_source, status.weights_path) == ("folder", str(shipped))


def test_nothing_found_names_both_ways_out(no_package: None) -> None:
    status = find_local_model("", env={})
    assert not status.weights_found and status.weights_source == ""
    assert "weights" in status.problem and "--config" in status.problem
