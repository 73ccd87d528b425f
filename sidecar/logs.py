"""JSON-line logging on stderr: one object a line with ts, level, msg, fields.

stdout belongs to the handshake alone; see sidecar.lifecycle.protect_stdout.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["setup_logging", "fields", "adopt_library_loggers", "LIBRARY_LOGGERS"]

#: Loggers of libraries that bring their own plain-text stderr handler (litellm's).
LIBRARY_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
            "logger": record.name,
        }
        extra = getattr(record, "fields", None)
        if extra:
            out["fields"] = extra
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def setup_logging(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.Formatter.converter = time.gmtime


def adopt_library_loggers(names: tuple[str, ...] = LIBRARY_LOGGERS, *, before_import: bool = False) -> None:
    """Send a library's loggers through the sidecar's JSON handler, held at warning
    unless the sidecar runs at debug.

    litellm logs whole (aliased) prompts at debug and a line per call at info, on a
    plain-text handler of its own that ignores `--log-level`: a game's log at info
    would hold text that is not JSON, and at the library's whim, prompts. Call with
    `before_import=True` before importing it (its import already logs, on its own
    handler: held at warning then, whatever the level), and again right after."""
    debug = not before_import and logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in names:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
        logger.setLevel(logging.DEBUG if debug else logging.WARNING)


def fields(**kwargs: Any) -> dict[str, Any]:
    """`log.info("msg", extra=fields(session=...))`."""
    return {"fields": kwargs}
