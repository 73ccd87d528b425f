#!/usr/bin/env python3
"""Generate the Python stubs in sidecar/v1/ from proto/ (the one source of truth).

Usage: python scripts/gen_protos.py          # regenerate
       python scripts/gen_protos.py --check  # exit 1 when the committed stubs differ
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT_PACKAGE = Path("sidecar") / "v1"
INIT_TEXT = '"""Generated from proto/sidecar/v1 by scripts/gen_protos.py. Do not edit."""\n'


def generate(into: Path) -> None:
    from grpc_tools import protoc  # dev dependency, imported only here

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "sidecar" / "v1").glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={into}",
        f"--pyi_out={into}",
        f"--grpc_python_out={into}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    (into / OUT_PACKAGE / "__init__.py").write_text(INIT_TEXT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when stubs are out of step")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        generate(tmp_path)
        fresh = tmp_path / OUT_PACKAGE
        target = ROOT / OUT_PACKAGE
        if args.check:
            names = sorted(
                {p.name for p in fresh.iterdir()} | ({p.name for p in target.iterdir()} if target.exists() else set())
            )
            stale = [
                n
                for n in names
                if n != "__pycache__"
                and not (
                    (fresh / n).is_file()
                    and (target / n).is_file()
                    and filecmp.cmp(fresh / n, target / n, shallow=False)
                )
            ]
            if stale:
                print("generated stubs out of step with proto/: " + ", ".join(stale), file=sys.stderr)
                print("run: python scripts/gen_protos.py", file=sys.stderr)
                return 1
            print("stubs up to date")
            return 0
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(fresh, target)
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
