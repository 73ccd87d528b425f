"""The C heap's settings (sidecar/heap.py, issue 30 item 3): with the mmap threshold
fixed, a block of a few hundred KB still gets its own mapping after a bigger one was
freed; left to glibc, that free raises the threshold and the block lands in an arena,
where what it leaves between live blocks stays resident. Each case runs in its own
Python process (the setting is for the whole process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")

# Frees a 4 MiB block, then allocates one of 1.5 x MMAP_THRESHOLD and prints whether glibc
# mapped it (the IS_MMAPPED bit, 0x2, of the chunk's size word, just before the pointer).
PROBE = """
import ctypes, sys
from sidecar.heap import fix_mmap_threshold, MMAP_THRESHOLD
if sys.argv[1] == "fixed":
    assert fix_mmap_threshold()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.free(libc.malloc(4 << 20))
block = libc.malloc(MMAP_THRESHOLD * 3 // 2)
print(bool(ctypes.c_size_t.from_address(block - 8).value & 2))
"""


def _mapped(mode: str) -> bool:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_a_fixed_threshold_keeps_mapping_blocks_a_bigger_free_would_have_moved_to_an_arena() -> None:
    assert not _mapped("glibc"), "glibc no longer raises its threshold: the setting proves nothing"
    assert _mapped("fixed")

