"""The Unreal plugin's files a packaged game needs (issue 32, Build item 4): checked by
scripts/unreal_package before it assembles the plugin, and here on the source tree, so
the fast lane sees it without building the library."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "clients" / "unreal" / "GameSidecar"


def _unreal_package():  # type: ignore[no-untyped-def]
    loader = importlib.machinery.SourceFileLoader("unreal_package", str(ROOT / "scripts" / "unreal_package"))
    spec = importlib.util.spec_from_loader("unreal_package", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_build_plugin_packages_the_sidecar_folder() -> None:
    assert _unreal_package().check_plugin_files(PLUGIN) == []


def test_the_check_refuses_a_plugin_without_the_filter(tmp_path: Path) -> None:
    check = _unreal_package().check_plugin_files
    plugin = tmp_path / "GameSidecar"
    (plugin / "Config").mkdir(parents=True)
    assert "BuildPlugin would leave the Sidecar folder out" in check(plugin)[0]
    (plugin / "Config" / "FilterPlugin.ini").write_text("[FilterPlugin]\n/README.md\n", encoding="utf-8")
    assert "/Sidecar/..." in check(plugin)[0]


def test_the_plugin_logs_to_its_own_category_and_forwards_the_sidecars_log() -> None:
    """LogGameSidecar (GameSidecarLog.h) for everything the plugin logs, never LogTemp; the
    sidecar's stderr lines reach the Output Log at their level, not only OnLog. The
    category compiles against the stand-ins (clients/unreal/checks/plugin_checks.cpp)."""
    sources = sorted((PLUGIN / "Source" / "GameSidecar").rglob("*.[ch]*"))
    assert not [p.name for p in sources if "LogTemp" in p.read_text(encoding="utf-8")]
    subsystem = (PLUGIN / "Source" / "GameSidecar" / "Private" / "GameSidecarSubsystem.cpp").read_text(encoding="utf-8")
    dispatch_log = subsystem[subsystem.index("void UGameSidecarSubsystem::DispatchLog") :]
    dispatch_log = dispatch_log[: dispatch_log.index("\n}\n")]
    for verbosity in ("Error", "Warning", "Log"):
        assert f"UE_LOG(LogGameSidecar, {verbosity}," in dispatch_log
