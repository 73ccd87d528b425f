"""The Unity package (clients/unity) installs from a git URL only if every asset has a
.meta with a unique GUID and the right importer: checked here independently of the
generator (scripts/unity_meta.py), then the generator's --check against broken copies."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "unity"
sys.path.insert(0, str(ROOT / "scripts"))

import gen_protos  # noqa: E402
import unity_meta  # noqa: E402

GUID_LINE = re.compile(r"^guid: ([0-9a-f]{32})$", re.MULTILINE)
# What Unity assigns to each kind of asset here; package.json is the package manifest.
IMPORTER_BY_SUFFIX = {".cs": "MonoImporter", ".asmdef": "AssemblyDefinitionImporter", ".md": "TextScriptImporter",
                      ".xml": "TextScriptImporter", ".json": "TextScriptImporter",
                      ".unity": "DefaultImporter"}  # Unity writes a DefaultImporter for a scene


def _assets() -> list[Path]:
    """Files and folders Unity imports: not hidden, not *.meta; a `~` folder is not an asset
    itself but its contents are (Samples~ is copied into Assets/ on import)."""
    out = []
    for p in sorted(PACKAGE.rglob("*")):
        rel = p.relative_to(PACKAGE)
        if p.name.endswith(".meta") or any(part.startswith(".") for part in rel.parts):
            continue
        if not p.name.endswith("~"):
            out.append(p)
    return out


def _meta(p: Path) -> Path:
    return p.with_name(p.name + ".meta")


def test_every_asset_has_a_meta_with_a_unique_wellformed_guid() -> None:
    assets = _assets()
    assert any(p.suffix == ".cs" for p in assets) and any(p.is_dir() for p in assets)
    missing = [str(p.relative_to(PACKAGE)) for p in assets if not _meta(p).is_file()]
    assert missing == []
    guids: dict[str, Path] = {}
    for p in assets:
        text = _meta(p).read_text()
        assert text.startswith("fileFormatVersion: 2\n"), p
        found = GUID_LINE.findall(text)
        assert len(found) == 1, f"{p}: no single well-formed guid line"
        assert found[0] not in guids, f"{p} and {guids.get(found[0])} share a GUID"
        guids[found[0]] = p


def test_each_meta_names_the_importer_unity_uses() -> None:
    for p in _assets():
        text = _meta(p).read_text()
        if p.is_dir():
            want = "DefaultImporter"
            assert "\nfolderAsset: yes\n" in text, p
        elif p == PACKAGE / "package.json":
            want = "PackageManifestImporter"
        else:
            want = IMPORTER_BY_SUFFIX[p.suffix]
        assert f"\n{want}:\n" in text, f"{p.relative_to(PACKAGE)}: expected {want}"


def test_no_orphan_meta_and_none_for_ignored_folders() -> None:
    for meta in PACKAGE.rglob("*.meta"):
        asset = meta.with_name(meta.name[: -len(".meta")])
        assert asset.exists(), f"orphan {meta.relative_to(PACKAGE)}"
        assert not asset.name.endswith("~"), f"{meta.relative_to(PACKAGE)}: Unity ignores {asset.name}"


def test_generated_code_has_metas_and_the_generator_agrees_with_the_tree() -> None:
    generated = sorted((PACKAGE / "Runtime" / "Generated").glob("*.cs"))
    assert generated and all(_meta(p).is_file() for p in generated)
    assert unity_meta.problems() == []


def test_guids_are_stable_functions_of_the_path() -> None:
    assert unity_meta.guid("Runtime/Client/SidecarClient.cs") == unity_meta.guid("Runtime/Client/SidecarClient.cs")
    assert unity_meta.guid("Runtime/Client/SidecarClient.cs") != unity_meta.guid("Runtime/Client/DeltaStream.cs")
    committed = GUID_LINE.findall((PACKAGE / "Runtime" / "Client" / "SidecarClient.cs.meta").read_text())
    assert committed == [unity_meta.guid("Runtime/Client/SidecarClient.cs")]


@pytest.fixture
def broken_package(tmp_path: Path) -> Path:
    """A copy of the package with one .meta missing, one stale and one orphan."""
    copy = tmp_path / "unity"
    shutil.copytree(PACKAGE, copy)
    (copy / "Runtime" / "Generated" / "Types.cs.meta").unlink()
    stale = copy / "Runtime" / "Client" / "SidecarClient.cs.meta"
    stale.write_text(stale.read_text().replace("MonoImporter", "DefaultImporter"))
    (copy / "Runtime" / "Generated" / "Removed.cs.meta").write_text("fileFormatVersion: 2\n")
    return copy


def test_check_reports_missing_stale_and_orphan_and_sync_repairs(broken_package: Path) -> None:
    assert unity_meta.problems(broken_package) == [
        "stale Runtime/Client/SidecarClient.cs.meta",
        "missing Runtime/Generated/Types.cs.meta",
        "orphan Runtime/Generated/Removed.cs.meta",
    ]
    unity_meta.sync(broken_package)
    assert unity_meta.problems(broken_package) == []
    assert (broken_package / "Runtime" / "Generated" / "Types.cs.meta").read_text() == \
        (PACKAGE / "Runtime" / "Generated" / "Types.cs.meta").read_text()


def test_gen_protos_check_fails_on_a_broken_meta(broken_package: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(unity_meta, "PACKAGE", broken_package)
    monkeypatch.setattr(sys, "argv", ["gen_protos.py", "--check"])
    assert gen_protos.main() == 1
    err = capsys.readouterr().err
    assert "missing Runtime/Generated/Types.cs.meta" in err and "orphan Runtime/Generated/Removed.cs.meta" in err
