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
"""

from __future__ import annotations

import gc
import logging
import time

__all__ = ["settle"]

log = logging.getLogger("sidecar.heap")


def settle() -> None:
    """Collect what start-up left, then freeze every object alive."""
    start = time.monotonic()
    gc.collect()
    gc.freeze()
    log.debug(
        "heap settled",
        extra={"fields": {"frozen": gc.get_freeze_count(), "ms": round((time.monotonic() - start) * 1000, 1)}},
    )
