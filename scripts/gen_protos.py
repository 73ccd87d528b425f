#!/usr/bin/env python3
"""Generate every committed stub from proto/ (the one source of truth).

- Python: sidecar/v1/ (protoc's python, pyi and grpc_python output, from grpcio-tools).
- C#: clients/unity/Runtime/Generated/ (Unity cannot run Grpc.Tools at build time):
  messages and client stubs from the protoc and grpc_csharp_plugin that ship inside
  the Grpc.Tools NuGet package pinned below (grpcio-tools' protoc has no C# generator),
  each with the Unity .meta that scripts/unity_meta.py derives from its path (an
  immutable package imports no file without one).

Usage: python scripts/gen_protos.py          # regenerate
       python scripts/gen_protos.py --python-only  # the Python stubs alone (no .NET here: the C#
                                                   # ones stay as they are until run with Grpc.Tools)
       python scripts/gen_protos.py --check  # exit 1 when the committed stubs differ,
                                             # or a Unity .meta is missing, stale or orphan

The two tools are found in $GRPC_TOOLS_DIR, else in the NuGet cache ($NUGET_PACKAGES
or ~/.nuget/packages); when they are not there and `dotnet` is on PATH, restoring
clients/csharp/src/GameSidecar.Client brings them. Without either (a machine with
no .NET), regenerating fails and --check checks the Python stubs only, saying so
in one line.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import unity_meta  # scripts/unity_meta.py, beside this file

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
INIT_TEXT = '"""Generated from proto/sidecar/v1 by scripts/gen_protos.py. Do not edit."""\n'
# Must match the Grpc.Tools version in clients/csharp/src/GameSidecar.Client/GameSidecar.Client.csproj.
GRPC_TOOLS_VERSION = "2.85.0"
CLIENT_PROJECT = ROOT / "clients" / "csharp" / "src" / "GameSidecar.Client"


def _protos() -> list[str]:
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "sidecar" / "v1").glob("*.proto"))


def _protoc(args: list[str]) -> None:
    from grpc_tools import protoc  # dev dependency, imported only here

    include = Path(protoc.__file__).parent / "_proto"
    if protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{include}", *args, *_protos()]) != 0:
        raise SystemExit("protoc failed")


def _tools_dir() -> Path | None:
    explicit = os.environ.get("GRPC_TOOLS_DIR")
    if explicit:
        return Path(explicit)
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"Linux": "linux", "Darwin": "macosx", "Windows": "windows"}.get(platform.system())
    if machine is None or system is None:
        return None
    cache = Path(os.environ.get("NUGET_PACKAGES") or Path.home() / ".nuget" / "packages")
    return cache / "grpc.tools" / GRPC_TOOLS_VERSION / "tools" / f"{system}_{machine}"


def find_csharp_tools() -> Path | None:
    """Grpc.Tools' folder holding protoc and grpc_csharp_plugin, restored through dotnet when needed."""
    tools = _tools_dir()
    if tools is not None and not tools.exists() and shutil.which("dotnet") and CLIENT_PROJECT.exists():
        subprocess.run(["dotnet", "restore", str(CLIENT_PROJECT)], check=False, stdout=subprocess.DEVNULL)
    if tools is None or not tools.exists():
        return None
    for exe in tools.iterdir():
        if not os.access(exe, os.X_OK):  # NuGet extracts them without the exec bit on some versions
            exe.chmod(exe.stat().st_mode | 0o111)
    return tools


def generate_python(into: Path) -> None:
    _protoc([f"--python_out={into}", f"--pyi_out={into}", f"--grpc_python_out={into}"])
    (into / "sidecar" / "v1" / "__init__.py").write_text(INIT_TEXT)


def generate_csharp(into: Path, tools: Path) -> None:
    suffix = ".exe" if platform.system() == "Windows" else ""
    args = [
        str(tools / f"protoc{suffix}"),
        f"-I{PROTO_ROOT}",
        f"--csharp_out={into}",
        f"--plugin=protoc-gen-grpc={tools / f'grpc_csharp_plugin{suffix}'}",
        f"--grpc_out={into}",
        "--grpc_opt=no_server",  # client stubs only: a game never hosts these services
        *_protos(),
    ]
    if subprocess.run(args, check=False).returncode != 0:
        raise SystemExit("protoc (C#) failed")


def compare(fresh: Path, target: Path, only: set[str] | None = None) -> list[str]:
    names = {p.name for p in fresh.iterdir()} | ({p.name for p in target.iterdir()} if target.exists() else set())
    stale = []
    for n in sorted(names):
        if n == "__pycache__" or n.endswith(".meta") or (only is not None and n not in only):
            continue
        if not ((fresh / n).is_file() and (target / n).is_file() and filecmp.cmp(fresh / n, target / n, shallow=False)):
            stale.append(n)
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when stubs are out of step")
    parser.add_argument("--python-only", action="store_true", help="regenerate the Python stubs only")
    args = parser.parse_args()
    tools = None if args.python_only else find_csharp_tools()
    targets = [(ROOT / "sidecar" / "v1", "sidecar/v1")]
    if tools is not None:
        targets.append((ROOT / "clients" / "unity" / "Runtime" / "Generated", "C#"))
    with tempfile.TemporaryDirectory() as tmp:
        py_root, cs_fresh = Path(tmp) / "py", Path(tmp) / "cs"
        py_root.mkdir()
        cs_fresh.mkdir()
        generate_python(py_root)
        fresh_dirs = [py_root / "sidecar" / "v1"]
        if tools is not None:
            generate_csharp(cs_fresh, tools)
            fresh_dirs.append(cs_fresh)
        if args.check:
            stale = [f"{label} {n}" for (target, label), fresh in zip(targets, fresh_dirs, strict=True)
                     for n in compare(fresh, target)]
            # The whole package's .meta files, generated or not: one missing is a file Unity skips.
            stale += [f"Unity .meta: {line}" for line in unity_meta.problems()]
            if tools is None:
                print("C# stubs not checked: Grpc.Tools not found and no dotnet to restore it")
            if stale:
                print("generated stubs out of step with proto/: " + ", ".join(stale), file=sys.stderr)
                print("run: python scripts/gen_protos.py", file=sys.stderr)
                return 1
            print("stubs up to date")
            return 0
        if tools is None and not args.python_only:
            print("Grpc.Tools not found: install the .NET SDK (it restores Grpc.Tools) or set GRPC_TOOLS_DIR",
                  file=sys.stderr)
            return 1
        for (target, _), fresh in zip(targets, fresh_dirs, strict=True):
            if target.exists():
                # Keep Unity's .meta files: their GUIDs must not change between generations.
                for p in target.iterdir():
                    if p.is_dir():
                        shutil.rmtree(p)
                    elif not p.name.endswith(".meta"):
                        p.unlink()
            target.mkdir(parents=True, exist_ok=True)
            for p in fresh.iterdir():
                shutil.copy2(p, target / p.name)
            print(f"wrote {target.relative_to(ROOT)}")
        if args.python_only:
            print("C# stubs left as they were: regenerate them where Grpc.Tools is (.NET SDK)")
            return 0
        for line in unity_meta.sync():
            print(f"Unity .meta: fixed {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
