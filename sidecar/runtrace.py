"""Stage timestamps of a run, for the benchmark that finds where the time to the
first token goes (`scripts/bench/bench_stream.py --trace`, docs/benchmarks.md).

Off unless the environment variable `GAME_SIDECAR_TRACE_RUNS` names a file when
the sidecar starts; off, `mark()` is one global read and a return, so the marks
stay in the code for good. On, each Run call gets a dict of stage -> the first
CLOCK_MONOTONIC nanosecond it was reached (`time.monotonic_ns()` is system-wide,
so the benchmark's client and the fake server's stamps compare with it), held
in a context variable: the run's task and the tasks it starts inherit it, so a
layer marks its stage without being told which run it serves. When the call
ends, one JSON line `{"run_id": ..., "marks": {stage: ns, ...}}` is appended to
the file (after the last event went out: off every measured path), with the
garbage collector's pauses that fell within the call (`gc`: [[generation,
start ns, end ns], ...]), which tell a GC pause from other stalls in the tail.

Stages, in the order a run reaches them (the first text only): `call` (the
interceptor sees the call), `parsed` (request deserialized), `servicer`,
`submitted`, `slot` (scheduler gave it a slot), `prompt` (prompt built),
`send` (the model call starts), `body` (HTTP body encoded and checked),
`headers` (response headers in), `first_line` (first SSE line read),
`first_delta` (first chunk with text decoded), `relayed` (the text left the
model boundary), `emitted` (the coalescer and de-aliaser handed out the first
Text), `proto` (its RunResponse built), `written` (gRPC took it).
"""

from __future__ import annotations

import collections
import contextvars
import gc
import json
import os
import time
from typing import IO

__all__ = ["ENV", "enabled", "begin", "mark", "finish", "configure"]

#: The environment variable naming the trace file.
ENV = "GAME_SIDECAR_TRACE_RUNS"

_on = False
_out: IO[str] | None = None
_marks: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("runtrace", default=None)
#: Recent GC pauses: (generation, start ns, end ns).
_pauses: collections.deque[tuple[int, int, int]] = collections.deque(maxlen=256)
_gc_start = 0


def _on_gc(phase: str, info: dict[str, int]) -> None:
    global _gc_start
    if phase == "start":
        _gc_start = time.monotonic_ns()
    else:
        _pauses.append((info["generation"], _gc_start, time.monotonic_ns()))


def configure(path: str | None) -> None:
    """Trace into `path` (appending), or stop tracing (None or "")."""
    global _on, _out
    if _out is not None:
        _out.close()
        _out = None
    _on = bool(path)
    if _on_gc in gc.callbacks:
        gc.callbacks.remove(_on_gc)
    if path:
        _out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held until configure() again
        gc.callbacks.append(_on_gc)


def enabled() -> bool:
    return _on


def begin() -> None:
    """A new call starts here (the interceptor): its marks start empty."""
    if _on:
        _marks.set({"call": time.monotonic_ns()})


def mark(stage: str) -> None:
    """Record the first time the current call reaches `stage` (later ones are ignored)."""
    if _on:
        marks = _marks.get()
        if marks is not None and stage not in marks:
            marks[stage] = time.monotonic_ns()


def finish(run_id: str) -> None:
    """The call for `run_id` ended: write its marks out."""
    if _on and _out is not None:
        marks = _marks.get()
        if marks is not None:
            begun = marks.get("call", 0)
            pauses = [p for p in _pauses if p[2] >= begun]
            _out.write(json.dumps({"run_id": run_id, "marks": marks, "gc": pauses}) + "\n")
            _out.flush()
            _marks.set(None)


configure(os.environ.get(ENV))
