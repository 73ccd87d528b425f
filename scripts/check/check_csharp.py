#!/usr/bin/env python3
"""Check that proto/ generates clean C# (no .NET SDK needed): protoc's C# output
must build without renamed members (protoc appends "_" to a property that clashes
with its class or with the nested `Types` holder), every file must carry
csharp_namespace "GameSidecar.V1", and no type may shadow a common System type
that Unity code uses unqualified.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHADOWED = {
    "Action",
    "Task",
    "Type",
    "Object",
    "Exception",
    "Attribute",
    "Random",
    "Timer",
    "Math",
    "Event",
    "Delegate",
    "String",
    "Buffer",
    "Version",
    "Debug",
    "Color",
    "Vector3",
    "Time",
    "Application",
}


def main() -> int:
    protoc = shutil.which("protoc")
    if protoc is None:
        print("check_csharp: protoc not found (apt-get install protobuf-compiler)", file=sys.stderr)
        return 1
    protos = sorted(str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto/sidecar/v1").glob("*.proto"))
    problems: list[str] = []
    for rel in protos:
        if 'option csharp_namespace = "GameSidecar.V1";' not in (ROOT / "proto" / rel).read_text():
            problems.append(f"{rel}: missing csharp_namespace GameSidecar.V1")
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([protoc, f"-I{ROOT / 'proto'}", f"--csharp_out={out}", *protos], check=True)
        for cs in sorted(Path(out).glob("*.cs")):
            text = cs.read_text()
            for m in re.finditer(r"public [\w.:<>, ]+ (\w+_) \{", text):
                problems.append(f"{cs.name}: property renamed to {m.group(1)} (clashes in C#)")
            for m in re.finditer(r"public sealed partial class (\w+)|public enum (\w+)", text):
                name = m.group(1) or m.group(2)
                if name in SHADOWED:
                    problems.append(f"{cs.name}: type {name} shadows a common System/Unity type")
    for p in problems:
        print(p, file=sys.stderr)
    print("C# generation clean" if not problems else f"{len(problems)} C# problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
