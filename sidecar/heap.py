"""The garbage collector's settings for a process whose job is latency (issue 15,
the tail of the time to the first token; docs/benchmarks.md has the figures).

CPython's cyclic collector stops everything while it walks the objects of the
generations it collects. A full collection walks them all: with grpc, protobuf,
aiohttp, the tokenizer and our modules loaded that is about 42,000 objects and
25 ms of CPU on the reference machine (50-140 ms of wall time under load), and
one fell inside the first token of about one run in a hundred. Nearly all of
those objects are modules, classes and functions that live as long as the
process: `settle()` collects once and then freezes them (`gc.freeze()`: moved
to a permanent generation that no later collection walks), so a full
collection only walks what runs and sessions made since.

`settle()` runs once the background loading is over (the gateway's tokenizer,
the sse transport's HTTP client, litellm when a profile needs it): what those
imports made is frozen too. Its own collection costs one full collection, once,
at the end of start-up (a run already in flight then waits for it). Only the
sidecar process does this (`SidecarServer(settle_heap=True)` from the CLI): a
test process starting many servers keeps its collector as it is.

The C heap (glibc's malloc, where llama.cpp, gRPC and CPython's larger blocks live) is
held flat over a play session (issue 30, item 3): `release_heap()` hands free pages back
after each generation, and `settle()` fixes the size from which blocks are mmapped
(`fix_mmap_threshold`). Elsewhere than glibc both do nothing.
"""

from __future__ import annotations

import functools
import gc
import logging
import time
from typing import Any

__all__ = ["settle", "release_heap", "fix_mmap_threshold", "MMAP_THRESHOLD"]

log = logging.getLogger("sidecar.heap")

#: mallopt's M_MMAP_THRESHOLD (glibc's malloc.h).
_M_MMAP_THRESHOLD = -3
#: Blocks from this size up get their own mapping, unmapped when freed (glibc's initial
#: threshold is 128 KiB; see `fix_mmap_threshold`).
MMAP_THRESHOLD = 256 * 1024


@functools.cache
def _glibc() -> Any:
    """glibc's functions, looked up on first use (ctypes is not imported at start-up);
    None elsewhere (Windows, macOS, musl)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim, libc.mallopt  # noqa: B018 - both, or neither: a libc without them is not glibc
    except (AttributeError, OSError, TypeError):
        return None
    return libc


def release_heap() -> None:
    """Give the C heap's free pages back to the system after a generation.

    llama.cpp allocates and frees many small blocks per token (the grammar decodes each
    candidate it is given into a vector; a decision's forced tokens still need the whole
    vocabulary now and then: sidecar/llm/sampling.py). glibc keeps such freed memory in
    its arenas, so a long session's RSS climbed by what the largest passes ever held,
    150 MB over 60 runs (issue 30, item 3). malloc_trim returns it, in every arena, in
    about 1 ms."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def fix_mmap_threshold() -> bool:
    """Blocks of MMAP_THRESHOLD and more always get their own mapping (False: not glibc).

    glibc raises its threshold each time it frees a mapped block, up to 32 MiB, so blocks
    of a few MB (a vocabulary's logits as float64, the grammar's candidates, a prompt's
    strings) move into the arenas, where what they leave between live blocks stays
    resident: the sidecar's RSS swung by 8-15 MB from run to run and stood 32 MB over idle
    after 200 mixed runs; with the threshold fixed, 21 MB, flat from the 40th run
    (docs/benchmarks.md, issue 30). Fixing it also fixes the trim threshold (128 KiB)."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def settle() -> None:
    """Collect what start-up left, then freeze every object alive; fix the C heap's
    mmap threshold (the model and the libraries are loaded by now)."""
    start = time.monotonic()
    gc.collect()
    gc.freeze()
    fixed = fix_mmap_threshold()
    log.debug(
        "heap settled",
        extra={"fields": {"frozen": gc.get_freeze_count(), "ms": round((time.monotonic() - start) * 1000, 1),
                          "mmap_threshold_fixed": fixed}},
    )
