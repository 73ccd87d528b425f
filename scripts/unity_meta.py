#!/usr/bin/env python3
"""Unity `.meta` files for the UPM package in clients/unity.

Unity imports only assets that have a `.meta` beside them when a package is immutable
(installed from a git URL): without one a file is skipped with a warning, so the
package would compile nothing. Each `.meta` carries the asset's GUID and importer.

GUIDs are derived from the package name and the asset's path inside the package (the
MD5 of `com.game-sidecar.client:<path>`, which is 32 hex digits like a Unity GUID), so
regenerating gives the same GUID and no two assets share one. Moving a file changes its
GUID: nothing in this package refers to another asset by GUID (the asmdefs refer to
each other by name), so that is safe.

What gets one: every file and folder under clients/unity except what Unity ignores
(names starting with `.`, names ending with `~`, `*.tmp`). `Samples~` itself is
ignored (no `.meta`: Unity would warn that its asset is missing), but the files in it
get one because Package Manager copies them, `.meta` included, into the game's
Assets/ when a sample is imported: stable GUIDs there too.

Usage: python scripts/unity_meta.py          # write missing/stale ones, delete orphans
       python scripts/unity_meta.py --check  # exit 1 on a missing, stale or orphan .meta
scripts/gen_protos.py calls the same functions for the generated C#.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "clients" / "unity"
PACKAGE_NAME = "com.game-sidecar.client"  # clients/unity/package.json "name"

# The importer Unity itself assigns to each kind of file in this package. package.json
# is the package manifest (PackageManifestImporter), not a text asset.
IMPORTERS = {
    ".cs": "MonoImporter",
    ".asmdef": "AssemblyDefinitionImporter",
    ".md": "TextScriptImporter",
    ".json": "TextScriptImporter",
    ".xml": "TextScriptImporter",
    ".txt": "TextScriptImporter",
}
_COMMON_TAIL = "  userData: \n  assetBundleName: \n  assetBundleVariant: \n"
_BODIES = {
    "MonoImporter": (
        "  externalObjects: {}\n  serializedVersion: 2\n  defaultReferences: []\n  executionOrder: 0\n"
        "  icon: {instanceID: 0}\n" + _COMMON_TAIL
    ),
    "AssemblyDefinitionImporter": "  externalObjects: {}\n" + _COMMON_TAIL,
    "TextScriptImporter": "  externalObjects: {}\n" + _COMMON_TAIL,
    "PackageManifestImporter": "  externalObjects: {}\n" + _COMMON_TAIL,
    "DefaultImporter": "  externalObjects: {}\n" + _COMMON_TAIL,
}


def ignored(name: str) -> bool:
    """Names Unity's asset database skips (and so needs no .meta for)."""
    return name.startswith(".") or name.endswith("~") or name.endswith(".tmp")


def guid(rel: str) -> str:
    """The GUID of the asset at `rel` (a POSIX path inside the package)."""
    return hashlib.md5(f"{PACKAGE_NAME}:{rel}".encode()).hexdigest()


def importer(path: Path, package: Path) -> str:
    if path.is_dir():
        return "DefaultImporter"
    if path.parent == package and path.name == "package.json":
        return "PackageManifestImporter"
    if path.suffix == ".dll":
        # A DLL needs PluginImporter settings (platforms, references) chosen by hand.
        raise ValueError(f"{path}: add DLLs with a hand-written PluginImporter .meta, not this generator")
    return IMPORTERS.get(path.suffix, "DefaultImporter")


def meta_text(path: Path, package: Path) -> str:
    rel = path.relative_to(package).as_posix()
    kind = importer(path, package)
    folder = "folderAsset: yes\n" if path.is_dir() else ""
    return f"fileFormatVersion: 2\nguid: {guid(rel)}\n{folder}{kind}:\n{_BODIES[kind]}"


def assets(package: Path) -> list[Path]:
    """Every file and folder that needs a .meta, sorted. Hidden ones are skipped with
    their contents; a `~` folder (Samples~) gets none itself, but its contents do."""
    found: list[Path] = []

    def walk(folder: Path) -> None:
        for p in sorted(folder.iterdir()):
            if p.name.endswith(".meta") or p.name.startswith("."):
                continue
            if not ignored(p.name):
                found.append(p)
            if p.is_dir():
                walk(p)

    walk(package)
    return found


def expected(package: Path | None = None) -> dict[Path, str]:
    """Each .meta path the package must hold, with its exact text."""
    package = package or PACKAGE
    return {p.with_name(p.name + ".meta"): meta_text(p, package) for p in assets(package)}


def problems(package: Path | None = None) -> list[str]:
    """Missing, stale and orphan .meta files, as readable lines (empty = all in step)."""
    package = package or PACKAGE
    want = expected(package)
    found = set(package.rglob("*.meta"))
    out = []
    for meta, text in sorted(want.items()):
        rel = meta.relative_to(package).as_posix()
        if not meta.is_file():
            out.append(f"missing {rel}")
        elif meta.read_text() != text:
            out.append(f"stale {rel}")
    for meta in sorted(found - set(want)):
        out.append(f"orphan {meta.relative_to(package).as_posix()}")
    return out


def sync(package: Path | None = None) -> list[str]:
    """Writes missing and stale .meta files and deletes orphans; returns what it changed."""
    package = package or PACKAGE
    changed = problems(package)
    want = expected(package)
    for meta, text in want.items():
        if not meta.is_file() or meta.read_text() != text:
            meta.write_text(text)
    for meta in set(package.rglob("*.meta")) - set(want):
        meta.unlink()
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a .meta is missing, stale or orphan")
    args = parser.parse_args()
    if args.check:
        found = problems()
        for line in found:
            print(f"unity .meta: {line}", file=sys.stderr)
        if found:
            print("run: python scripts/unity_meta.py", file=sys.stderr)
            return 1
        print("unity .meta files up to date")
        return 0
    for line in sync():
        print(f"fixed {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
