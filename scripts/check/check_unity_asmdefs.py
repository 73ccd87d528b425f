#!/usr/bin/env python3
"""Compile each assembly definition of the Unity package the way Unity would: its
own sources only, netstandard2.1 with C# 9, against exactly the references the
asmdef lists, so an entry missing from an asmdef fails here instead of in a
user's Editor (docs/unity.md, "What was only compile-checked").

    scripts/check/check_unity_asmdefs.py [--package DIR]

DIR is an unpacked package with its Plugins/ (default: scripts/unity_package builds
one). References resolve as Unity resolves them:
  - `references`: another asmdef of the package (compiled the same way first), or
    a Unity module: UnityEngine.UI -> the ugui stand-in;
  - `precompiledReferences` (with overrideReferences): Plugins/<name>, which the
    package must bundle;
  - the engine (unless noEngineReferences) -> the UnityEngine stand-in; an
    Editor-only asmdef also gets the UnityEditor stand-in and UNITY_EDITOR.
The stand-ins (clients/csharp/tests/Unity*Stub) check compilation only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "clients" / "csharp" / "tests"
UNITY_MODULES = {"UnityEngine.UI": STUBS / "UnityUiStub" / "UnityUiStub.csproj"}
ENGINE = STUBS / "UnityStub" / "UnityStub.csproj"
EDITOR = STUBS / "UnityEditorStub" / "UnityEditorStub.csproj"
#: What Unity 2021.3 (the package's floor) defines for every script.
DEFINES = ["UNITY_2021_3_OR_NEWER", "NET_STANDARD_2_1", "NET_STANDARD", "CSHARP_9_OR_NEWER"]


class AsmdefError(Exception):
    pass


def load(package: Path) -> dict[str, tuple[Path, dict[str, object]]]:
    found = {}
    for path in sorted(package.rglob("*.asmdef")):
        doc = json.loads(path.read_text())
        found[str(doc["name"])] = (path, doc)
    return found


def sources(asmdef: Path, all_dirs: set[Path]) -> list[Path]:
    """The .cs files Unity puts in this assembly: under its folder, not under a deeper asmdef's."""
    home = asmdef.parent
    out = []
    for cs in sorted(home.rglob("*.cs")):
        owner = next(p for p in [cs.parent, *cs.parents] if p in all_dirs or p == home)
        if owner == home:
            out.append(cs)
    return out


def project(name: str, asmdef: Path, doc: dict[str, object], package: Path, dirs: set[Path],
            projects: dict[str, Path], out: Path) -> Path:
    files = sources(asmdef, dirs)
    if not files:
        raise AsmdefError(f"{asmdef}: no sources")
    refs: list[str] = []
    hints: list[tuple[str, Path]] = []
    editor = doc.get("includePlatforms") == ["Editor"]
    for ref in doc.get("references", []) or []:
        ref = str(ref)
        if ref in projects:
            refs.append(str(projects[ref]))
        elif ref in UNITY_MODULES:
            refs.append(str(UNITY_MODULES[ref]))
        else:
            raise AsmdefError(f"{asmdef}: references {ref!r}, which is neither an asmdef of the package "
                              "nor a known Unity module")
    if doc.get("overrideReferences"):
        for dll in doc.get("precompiledReferences", []) or []:
            path = package / "Plugins" / str(dll)
            if not path.is_file():
                raise AsmdefError(f"{asmdef}: precompiledReferences lists {dll}, "
                                  "which the package does not bundle in Plugins/")
            hints.append((Path(str(dll)).stem, path))
    else:
        hints += [(p.stem, p) for p in sorted((package / "Plugins").glob("*.dll"))]  # auto-referenced plugins
    if not doc.get("noEngineReferences"):
        refs.append(str(ENGINE))
    if editor:
        refs.append(str(EDITOR))
    defines = DEFINES + (["UNITY_EDITOR"] if editor else [])
    lines = [
        '<Project Sdk="Microsoft.NET.Sdk">',
        "  <PropertyGroup>",
        "    <TargetFramework>netstandard2.1</TargetFramework>",
        "    <LangVersion>9.0</LangVersion>",
        f"    <AssemblyName>{escape(name)}</AssemblyName>",
        "    <EnableDefaultCompileItems>false</EnableDefaultCompileItems>",
        "    <Nullable>disable</Nullable>",
        "    <TreatWarningsAsErrors>true</TreatWarningsAsErrors>",
        # CS0649: [SerializeField] fields are assigned by Unity's deserializer, which csc cannot see.
        "    <NoWarn>$(NoWarn);CS0649</NoWarn>",
        f"    <DefineConstants>{';'.join(defines)}</DefineConstants>",
        "  </PropertyGroup>",
        "  <ItemGroup>",
        *[f'    <Compile Include="{escape(str(f))}" />' for f in files],
        *[f'    <Reference Include="{escape(n)}"><HintPath>{escape(str(p))}</HintPath></Reference>' for n, p in hints],
        *[f'    <ProjectReference Include="{escape(r)}" />' for r in refs],
        "  </ItemGroup>",
        "</Project>",
    ]
    target = out / name / f"{name}.csproj"
    target.parent.mkdir(parents=True)
    target.write_text("\n".join(lines) + "\n")
    return target


def order(found: dict[str, tuple[Path, dict[str, object]]]) -> list[str]:
    """Dependencies first; a cycle is an error Unity reports too."""
    done: list[str] = []
    seen: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in path:
            raise AsmdefError("asmdef reference cycle: " + " -> ".join((*path, name)))
        for ref in found[name][1].get("references", []) or []:
            if str(ref) in found:
                visit(str(ref), (*path, name))
        if name not in seen:
            seen.add(name)
            done.append(name)

    for name in found:
        visit(name, ())
    return done


def check(package: Path) -> list[str]:
    found = load(package)
    dirs = {path.parent for path, _ in found.values()}
    with tempfile.TemporaryDirectory(prefix="asmdef-check-") as tmp:
        projects: dict[str, Path] = {}
        for name in order(found):
            path, doc = found[name]
            projects[name] = project(name, path, doc, package, dirs, projects, Path(tmp))
        for name, csproj in projects.items():
            result = subprocess.run(["dotnet", "build", str(csproj), "-nologo", "-v", "quiet", "-clp:ErrorsOnly"],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise AsmdefError(f"{name} ({found[name][0]}) does not compile with the references its asmdef lists:\n"
                                  + (result.stdout + result.stderr).strip())
            print(f"asmdef {name}: {len(sources(found[name][0], dirs))} sources compile", file=sys.stderr)
    return list(projects)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", help="an unpacked package with Plugins/ (default: build one)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="unity-pkg-") as tmp:
        package = Path(opts.package) if opts.package else None
        if package is None:
            subprocess.run([sys.executable, str(ROOT / "scripts" / "unity_package"), "--out-dir", tmp,
                            "--keep-staging", str(Path(tmp) / "staging")], check=True, stdout=subprocess.DEVNULL)
            package = Path(tmp) / "staging" / "package"
        try:
            names = check(package)
        except AsmdefError as exc:
            print(f"check_unity_asmdefs: {exc}", file=sys.stderr)
            return 1
    print(f"asmdef check: {len(names)} assemblies compile against exactly their listed references")
    return 0


if __name__ == "__main__":
    sys.exit(main())
