"""Lore cards loaded from files (issue 5: "sent by the game as state or loaded
from files"), reloaded when the directory changes.

`<lore_dir>/*.toml` or `*.json`, each holding cards: a TOML file with
`[[cards]]` tables, or a JSON list (or `{"cards": [...]}`), each card with
`id`, `title`, `text`, `triggers`. File cards are public and shared by every
session, keyed apart from the session's own cards (both may trigger). The directory is
re-scanned at most once a second; a file that stops parsing keeps its last good cards.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import tomllib
from pathlib import Path

import msgspec

from sidecar.context.context_index import LoreMatcher
from sidecar.state.model import LoreCard

__all__ = ["LoreFiles"]

log = logging.getLogger("sidecar.context")

_RESCAN_S = 1.0


class LoreFiles:
    def __init__(self, directory: str) -> None:
        self.directory = Path(directory) if directory else None
        self._lock = threading.Lock()
        self._stamps: dict[str, tuple[int, int]] = {}
        self._cards_by_file: dict[str, list[LoreCard]] = {}
        self._checked = 0.0
        #: Bumped on every change: part of the prompt cache key.
        self.version = 0
        self.matcher = LoreMatcher()

    def refresh(self) -> None:
        if self.directory is None:
            return
        now = time.monotonic()
        if now - self._checked < _RESCAN_S:
            return
        with self._lock:
            self._checked = now
            try:
                entries = [e for e in os.scandir(self.directory) if e.name.endswith((".toml", ".json"))]
            except OSError as exc:
                log.warning("lore directory %s unreadable: %s", self.directory, exc)
                entries = []
            stamps = {}
            for e in entries:
                st = e.stat()
                stamps[e.name] = (st.st_mtime_ns, st.st_size)
            if stamps == self._stamps:
                return
            for name in list(self._cards_by_file):
                if name not in stamps:
                    del self._cards_by_file[name]
            for name, stamp in stamps.items():
                if self._stamps.get(name) != stamp:
                    try:
                        self._cards_by_file[name] = _load(self.directory / name)
                    except (OSError, ValueError, msgspec.ValidationError, tomllib.TOMLDecodeError) as exc:
                        log.warning("lore file %s failed to load, keeping its last good cards: %s", name, exc)
            self._stamps = stamps
            self.matcher = LoreMatcher(c for name in sorted(self._cards_by_file) for c in self._cards_by_file[name])
            self.version += 1


def _load(path: Path) -> list[LoreCard]:
    data = path.read_bytes()
    raw = tomllib.loads(data.decode("utf-8")) if path.suffix == ".toml" else json.loads(data)
    if isinstance(raw, dict):
        raw = raw.get("cards", [])
    cards = msgspec.convert(raw, list[LoreCard])
    # File cards are keyed apart from session cards ("file:" never appears in a prompt).
    return [msgspec.structs.replace(c, id=f"file:{path.stem}:{c.id}") for c in cards]
