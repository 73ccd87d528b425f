"""What a replay of a run needs, one JSON line per model call (docs/runs.md,
Replaying a run): off unless `GAME_SIDECAR_RECORD_RUNS` names a file when the
sidecar starts (QA builds, never a player's machine by default).

Each line holds the run and session IDs, the revision its prompt was built at,
the attempt, the seed, the profile and model, the reply's shape, the messages
exactly as sent (projected: aliases, never an engine ID) and the model's text
as it came (before de-aliasing). `game-sidecar replay FILE` sends the same
messages with the same seed to the same model and compares the texts
(sidecar/replay.py). The same session revision and input build the same
messages, so this is also what a replay from the game's own save would send.
"""

from __future__ import annotations

import json
import os
import threading
from typing import IO, Any

import msgspec

from sidecar.llm.types import ModelRequest

__all__ = ["ENV", "configure", "enabled", "record"]

ENV = "GAME_SIDECAR_RECORD_RUNS"

_out: IO[str] | None = None
_lock = threading.Lock()


def configure(path: str | None) -> None:
    """Record into `path` (appending), or stop (None or "")."""
    global _out
    with _lock:
        if _out is not None:
            _out.close()
        _out = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 - held until configure()


def enabled() -> bool:
    return _out is not None


def record(
    request: ModelRequest, *, run_id: str, session_id: str, revision: int, attempt: int, model: str, text: str
) -> None:
    """Append one model call (a no-op when recording is off)."""
    if _out is None:
        return
    profile = request.target.profile
    line: dict[str, Any] = {
        "run_id": run_id,
        "session_id": session_id,
        "revision": revision,
        "attempt": attempt,
        "seed": request.seed,
        "profile": request.target.name,
        "model": model or request.target.profile.model,
        "shape": msgspec.to_builtins(request.shape),
        "max_output_tokens": request.limits.max_output_tokens or profile.max_output_tokens,
        "temperature": profile.temperature if request.limits.temperature is None else request.limits.temperature,
        "stop": list(request.limits.stop),
        "messages": request.messages,
        "text": text,
    }
    data = json.dumps(line, ensure_ascii=False) + "\n"
    with _lock:
        if _out is not None:
            _out.write(data)
            _out.flush()


configure(os.environ.get(ENV))
