"""JSON-line logging on stderr: one object a line with ts, level, msg, fields.

stdout belongs to the handshake alone; see sidecar.lifecycle.protect_stdout.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["setup_logging", "fields"]


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


def fields(**kwargs: Any) -> dict[str, Any]:
    """`log.info("msg", extra=fields(session=...))`."""
    return {"fields": kwargs}
