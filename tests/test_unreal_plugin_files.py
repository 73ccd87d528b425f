"""The Unreal plugin's files a packaged game needs (issue 32, Build item 4): checked by
scripts/unreal_package before it assembles the plugin, and here on the source tree, so
the fast lane sees it without building the library."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
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


def _subsystem_function(name: str) -> str:
    """The body of a UGameSidecarSubsystem member, from whichever Private/*.cpp defines it."""
    for source in sorted((PLUGIN / "Source" / "GameSidecar" / "Private").glob("*.cpp")):
        text = source.read_text(encoding="utf-8")
        if f"UGameSidecarSubsystem::{name}(" in text:
            body = text[text.index(f"UGameSidecarSubsystem::{name}(") :]
            return body[: body.index("\n}\n")]
    raise AssertionError(f"UGameSidecarSubsystem::{name} is defined nowhere")


def test_deinitialize_hands_the_stop_to_the_library() -> None:
    """Deinitialize returns within the frame (issue 32, lifecycle): the object goes to
    game_sidecar_release, whose stop the C test (capi.c_program) proves runs after the
    call returned; game_sidecar_destroy blocked it for the graces. The module waits for
    released objects before the library unloads."""
    deinitialize = _subsystem_function("Deinitialize")
    assert "game_sidecar_release(" in deinitialize and "game_sidecar_destroy(" not in deinitialize
    module = (PLUGIN / "Source" / "GameSidecar" / "Private" / "GameSidecarModule.cpp").read_text(encoding="utf-8")
    shutdown = module[module.index("FGameSidecarModule::ShutdownModule") :]
    assert shutdown.index("game_sidecar_wait_released(") < shutdown.index("FreeDllHandle(")


def test_the_plugin_uses_the_librarys_call_timeout() -> None:
    """0 passes the library's default (5 s, every client's); the plugin's own 30 s is gone."""
    settings = (PLUGIN / "Source" / "GameSidecar" / "Public" / "GameSidecarSettings.h").read_text(encoding="utf-8")
    assert "int32 CallTimeoutMs = 0;" in settings
    assert "Options.call_timeout_ms = Settings->CallTimeoutMs;" in _subsystem_function("StartProcess")


def test_the_build_files_stage_the_config_and_name_missing_libraries() -> None:
    """Packaging (issue 32, Build items 2 and 4). The .Build.cs files are C# that UBT
    compiles; no .NET here, so this reads them: the ConfigFile setting is staged from
    DefaultGame.ini, and each platform's library files are required with a BuildException
    before the module names them (not a link error, nor a crash at the first call)."""
    source = PLUGIN / "Source"
    runtime = (source / "GameSidecar" / "GameSidecar.Build.cs").read_text(encoding="utf-8")
    assert '"/Script/GameSidecar.GameSidecarSettings", "ConfigFile"' in runtime
    assert 'RuntimeDependencies.Add(Path.Combine("$(ProjectDir)", ConfigFile), StagedFileType.NonUFS)' in runtime
    library = (source / "ThirdParty" / "GameSidecarLibrary" / "GameSidecarLibrary.Build.cs").read_text(encoding="utf-8")
    win64 = library[library.index("UnrealTargetPlatform.Win64") :]
    required = win64.index('RequireFiles(Lib, "game_sidecar.dll", "game_sidecar.lib")')
    assert required < win64.index("PublicAdditionalLibraries")
    linux = library[library.index("UnrealTargetPlatform.Linux") :]
    assert linux.index('RequireFiles(Lib, "libgame_sidecar.so")') < linux.index("PublicAdditionalLibraries")
    assert "throw new BuildException" in library[library.index("private void RequireFiles") :]


def test_every_async_node_has_a_run_task_pin() -> None:
    """Every Blueprint async node can be cancelled (issue 32, Build item 3): its class has
    ExposedAsyncProxy, which gives the node an object pin to call Cancel on. A UCLASS
    specifier is read by UHT, not by a C++ compiler, so this reads the headers."""
    public = PLUGIN / "Source" / "GameSidecar" / "Public"
    nodes = 0
    for header in sorted(public.glob("*.h")):
        text = header.read_text(encoding="utf-8")
        declaration = r"UCLASS\(([^)]*(?:\([^)]*\))?[^)]*)\)\s*class\s+\w+\s+(\w+)\s*:\s*public\s+(\w+)"
        for match in re.finditer(declaration, text):
            specifiers, name, base = match.groups()
            if base in ("UBlueprintAsyncActionBase", "USidecarRunActionBase") and "Abstract" not in specifiers:
                nodes += 1
                assert "ExposedAsyncProxy" in specifiers, f"{name} ({header.name}) has no Run Task pin"
                assert "void Cancel()" in (public / "GameSidecarRunAction.h").read_text(encoding="utf-8")
    assert nodes == 2  # USidecarRunAction, USidecarDecideAction
