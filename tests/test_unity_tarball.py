"""The Unity package tarball (scripts/unity_package) and the asmdef check
(scripts/check/check_unity_asmdefs.py): what a user installs with "Add package from
tarball" holds the package, every DLL its asmdefs name with an importer .meta and
a licence, and nothing to copy by hand; and the check fails when an asmdef forgets
a reference its sources need. Needs dotnet (NuGet restore, compilation)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("dotnet") is None, reason="needs the .NET SDK (NuGet restore, csc)")]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("unity")
    staging = out / "staging"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "unity_package"), "--out-dir", str(out),
                           "--keep-staging", str(staging)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1]), staging / "package"


def test_the_tarball_holds_the_package_its_dlls_their_metas_and_licences(built: tuple[Path, Path]) -> None:
    tgz, _ = built
    version = json.loads((ROOT / "clients" / "unity" / "package.json").read_text())["version"]
    assert tgz.name == f"com.game-sidecar.client-{version}.tgz"
    with tarfile.open(tgz) as tar:
        names = set(tar.getnames())
        manifest = json.loads(tar.extractfile("package/package.json").read())  # type: ignore[union-attr]
    assert all(n == "package" or n.startswith("package/") for n in names)
    assert manifest["name"] == "com.game-sidecar.client"
    asmdefs = [json.loads(p.read_text()) for p in (ROOT / "clients" / "unity").rglob("*.asmdef")]
    named = {dll for a in asmdefs for dll in a.get("precompiledReferences", [])}
    bundled = {Path(n).name for n in names if n.startswith("package/Plugins/") and n.endswith(".dll")}
    assert named <= bundled, f"asmdefs name DLLs the tarball lacks: {named - bundled}"
    for dll in bundled:
        assert f"package/Plugins/{dll}.meta" in names
    assert "package/Third Party Notices.md" in names and "package/Runtime/GameSidecar.Client.asmdef" in names
    assert "package/Editor/LinkerPreservation.cs" in names and "package/link.xml" in names
    licences = {n for n in names if n.startswith("package/Licenses~/")}
    assert len(licences) == len(bundled)


def test_each_plugin_meta_can_be_turned_off_by_a_define(built: tuple[Path, Path]) -> None:
    _, package = built
    metas = sorted((package / "Plugins").glob("*.dll.meta"))
    guids = set()
    for meta in metas:
        text = meta.read_text()
        define = "GAME_SIDECAR_NO_" + meta.name.removesuffix(".dll.meta").upper().replace(".", "_")
        assert f"- '!{define}'" in text and "PluginImporter:" in text and "isExplicitlyReferenced: 0" in text
        guids.add(next(line for line in text.splitlines() if line.startswith("guid: ")))
        assert define in (package / "Third Party Notices.md").read_text()
    assert len(guids) == len(metas) == 8


def test_the_tarball_is_reproducible(built: tuple[Path, Path], tmp_path: Path) -> None:
    tgz, _ = built
    again = subprocess.run([sys.executable, str(ROOT / "scripts" / "unity_package"), "--out-dir", str(tmp_path)],
                           check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    assert Path(again).read_bytes() == tgz.read_bytes()


def _check(package: Path) -> subprocess.CompletedProcess[str]:
    script = ROOT / "scripts" / "check" / "check_unity_asmdefs.py"
    return subprocess.run([sys.executable, str(script), "--package", str(package)], capture_output=True, text=True)


def test_every_asmdef_compiles_and_a_missing_reference_fails_the_check(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    _, package = built
    ok = _check(package)
    assert ok.returncode == 0, ok.stderr
    assert "4 assemblies compile" in ok.stdout
    broken = tmp_path / "package"
    shutil.copytree(package, broken)
    asmdef = broken / "Samples~" / "Narration" / "GameSidecar.Samples.asmdef"
    doc = json.loads(asmdef.read_text())
    doc["references"].remove("UnityEngine.UI")  # the sample's Text lives in ugui
    asmdef.write_text(json.dumps(doc))
    failed = _check(broken)
    assert failed.returncode == 1
    assert "GameSidecar.Samples" in failed.stderr and "does not compile" in failed.stderr
    doc["references"].append("UnityEngine.UI")
    doc["precompiledReferences"].append("Not.There.dll")
    asmdef.write_text(json.dumps(doc))
    missing = _check(broken)
    assert missing.returncode == 1 and "Not.There.dll, which the package does not bundle" in missing.stderr
