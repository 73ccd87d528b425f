"""Strips the symbol tables and debug info of the frozen folder's shared objects, one file
at a time, and keeps a stripped file only when the dynamic loader still loads it.

Why one at a time: stripping everything (PyInstaller's `strip=True`) broke numpy's
auditwheel-repaired OpenBLAS ("ELF load command address/offset not page-aligned"), and
such a file must stay as it came. Each file is stripped in place (`strip --strip-unneeded`
keeps `.dynsym`, what the loader and ctypes resolve against), then dlopen()ed by a fresh
Python (the build's own ABI) with the folder's `_internal/` on the library path, as the
bootloader sets it; if that fails where the original loaded, the original goes back.
A file the loader cannot open on its own even unstripped (none today) is left as it is.

Run by scripts/package on Linux after PyInstaller (docs/shipping.md). Prints one line per
kept original and a summary on stderr; exits non-zero only when strip itself is missing.
Usage: python packaging/strip_libs.py dist/game-sidecar/_internal
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: Loads a library the way the frozen app's imports and ctypes do (RTLD_NOW: every symbol resolved).
_LOAD = "import ctypes, sys; ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)"
_ELF = b"\x7fELF"


def shared_objects(internal: Path) -> list[Path]:
    """Regular files (not symlinks) under `internal` that are ELF shared objects by name and magic."""
    found = []
    for path in sorted(internal.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        if not (path.name.endswith(".so") or ".so." in path.name):
            continue
        with path.open("rb") as f:
            if f.read(4) == _ELF:
                found.append(path)
    return found


def loads(path: Path, internal: Path) -> tuple[bool, str]:
    env = dict(os.environ, LD_LIBRARY_PATH=str(internal))
    proc = subprocess.run([sys.executable, "-S", "-c", _LOAD, str(path)], env=env, capture_output=True, text=True,
                          timeout=120)
    return proc.returncode == 0, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""


def strip_one(path: Path, internal: Path) -> tuple[int, str]:
    """Bytes saved (0 when the original is kept) and why it was kept, if it was."""
    ok, why = loads(path, internal)
    if not ok:
        return 0, f"does not load even unstripped ({why})"
    backup = path.with_name(path.name + ".unstripped")
    shutil.copy2(path, backup)
    before = path.stat().st_size
    try:
        subprocess.run(["strip", "--strip-unneeded", str(path)], check=True, capture_output=True, text=True)
        ok, why = loads(path, internal)
    except subprocess.CalledProcessError as err:
        ok, why = False, f"strip failed: {err.stderr.strip()}"
    if not ok:
        os.replace(backup, path)
        return 0, f"stripped copy does not load ({why})"
    backup.unlink()
    return before - path.stat().st_size, ""


def main(internal: Path) -> int:
    if shutil.which("strip") is None:
        print("strip_libs: no `strip` on PATH (binutils)", file=sys.stderr)
        return 1
    saved = kept = 0
    files = shared_objects(internal)
    for path in files:
        gained, why = strip_one(path, internal)
        saved += gained
        if why:
            kept += 1
            print(f"strip_libs: kept {path.relative_to(internal)} unstripped: {why}", file=sys.stderr)
    print(f"strip_libs: {len(files)} shared objects, {kept} kept as they were, {saved / 2**20:.1f} MiB saved",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
