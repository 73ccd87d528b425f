"""Persona template files (TOML or JSON) in the configured directory, reloaded
when they change on disk (docs/context.md, Personas and mood).

A file `<dir>/<name>.toml` or `<dir>/<name>.json` holds one PersonaTemplate:
identity, inviolable_rules, mood_modifiers, hp_descriptions, situational_modifiers,
reminder (the design notes' camelCase keys such as `identityBlock` are accepted too,
and seed 002's ScriptableObject as Unity's JsonUtility exports it: `moodModifiers` as
`[{tag, text}]`, `situationalModifiers` as `[{conditionTag, text}]`).
Each lookup stats the file (a few microseconds); a changed mtime or size
reloads it. A file that stops parsing keeps serving its last good version, so a
half-saved edit never breaks a running game; a file that never parsed is an error.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from sidecar.errors import InvalidRequest
from sidecar.state.model import PersonaTemplate

__all__ = ["TemplateStore", "LoadedTemplate", "parse_template"]

log = logging.getLogger("sidecar.prompts")

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_CAMEL = {
    "identityBlock": "identity",
    "inviolableRules": "inviolable_rules",
    "moodModifiers": "mood_modifiers",
    "hpDescriptions": "hp_descriptions",
    "situationalModifiers": "situational_modifiers",
    "maxFraction": "max_fraction",
    # Unity's JsonUtility writes a situational modifier's field as seed 002 names it.
    "conditionTag": "condition",
    "condition_tag": "condition",
}


@dataclass(frozen=True)
class LoadedTemplate:
    template: PersonaTemplate
    #: Changes whenever the file's content changes; part of the persona cache key.
    version: str


def _snake(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            _CAMEL.get(k, k): (v if k in ("moodModifiers", "mood_modifiers") else _snake(v)) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_snake(v) for v in obj]
    return obj


#: Seed 002's `hpDescriptions` object names its buckets ("sano / herido / al borde"):
#: each name's `max_fraction` (the seed's low-HP line is 30%).
HP_BUCKETS = {"dying": 0.3, "critical": 0.3, "hurt": 0.7, "wounded": 0.7, "injured": 0.7, "healthy": 1.0}


def _hp_list(value: Any) -> Any:
    """`hp_descriptions` as seed 002 writes it, an object of bucket name (or a
    max_fraction, e.g. "0.3") -> text, as the list the template holds."""
    if not isinstance(value, dict):
        return value
    out = []
    for key, text in value.items():
        fraction = HP_BUCKETS.get(str(key).strip().lower())
        if fraction is None:
            try:
                fraction = float(key)
            except ValueError:
                names = ", ".join(HP_BUCKETS)
                raise msgspec.ValidationError(
                    f"hp_descriptions key {key!r} is neither a bucket name ({names}) nor a fraction such as \"0.3\""
                ) from None
        out.append({"max_fraction": fraction, "text": text})
    return out


def _mood_map(value: Any) -> Any:
    """`mood_modifiers` as Unity's JsonUtility writes seed 002's list of pairs,
    `[{"tag": ..., "text": ...}]`, as the map the template holds (a map stays as is)."""
    if not isinstance(value, list):
        return value
    out: dict[Any, Any] = {}
    for i, pair in enumerate(value):
        if not isinstance(pair, dict) or set(pair) != {"tag", "text"}:
            raise msgspec.ValidationError(f'mood_modifiers[{i}] must be {{"tag": ..., "text": ...}}, got {pair!r}')
        out[pair["tag"]] = pair["text"]
    return out


def _situational_list(value: Any) -> Any:
    """`situational_modifiers` written as a map of condition -> text, as the list the template holds."""
    if not isinstance(value, dict):
        return value
    return [{"condition": condition, "text": text} for condition, text in value.items()]


def parse_template(data: bytes, suffix: str) -> PersonaTemplate:
    """Decode one template file's bytes; raises InvalidRequest naming the problem."""
    try:
        raw = tomllib.loads(data.decode("utf-8")) if suffix == ".toml" else json.loads(data)
        if isinstance(raw, dict) and isinstance(raw.get("inviolable_rules", raw.get("inviolableRules")), str):
            key = "inviolable_rules" if "inviolable_rules" in raw else "inviolableRules"
            raw[key] = [raw[key]]
        raw = _snake(raw)
        if isinstance(raw, dict) and "hp_descriptions" in raw:
            raw["hp_descriptions"] = _hp_list(raw["hp_descriptions"])
        if isinstance(raw, dict) and "mood_modifiers" in raw:
            raw["mood_modifiers"] = _mood_map(raw["mood_modifiers"])
        if isinstance(raw, dict) and "situational_modifiers" in raw:
            raw["situational_modifiers"] = _situational_list(raw["situational_modifiers"])
        return msgspec.convert(raw, PersonaTemplate)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError, msgspec.ValidationError) as exc:
        raise InvalidRequest(f"persona template is malformed: {exc}") from exc


class _Entry:
    __slots__ = ("stamp", "loaded")

    def __init__(self, stamp: tuple[int, int], loaded: LoadedTemplate) -> None:
        self.stamp = stamp
        self.loaded = loaded


class TemplateStore:
    """Named templates from one directory, hot reloaded."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory) if directory else None
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        #: Files (re)loaded so far; tests read it to see a reload happen.
        self.loads = 0

    def _path(self, name: str) -> Path:
        if self.directory is None:
            raise InvalidRequest(f"persona template {name!r}: no templates directory is configured")
        if not _NAME.match(name) or ".." in name:
            raise InvalidRequest(f"persona template name {name!r} is not a plain file name")
        for suffix in (".toml", ".json"):
            path = self.directory / f"{name}{suffix}"
            if path.is_file():
                return path
        raise InvalidRequest(f"persona template {name!r} not found in {self.directory} (.toml or .json)")

    def get(self, name: str) -> LoadedTemplate:
        path = self._path(name)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InvalidRequest(f"persona template {name!r}: {exc}") from exc
        stamp = (st.st_mtime_ns, st.st_size)
        entry = self._entries.get(name)
        if entry is not None and entry.stamp == stamp:
            return entry.loaded
        with self._lock:
            try:
                data = path.read_bytes()
                template = parse_template(data, path.suffix)
            except (OSError, InvalidRequest) as exc:
                if entry is not None:
                    log.warning("persona template %s failed to reload, keeping the last good one: %s", name, exc)
                    return entry.loaded
                raise InvalidRequest(f"persona template {name!r} ({path.name}): {exc}") from exc
            version = f"{name}:{stamp[0]}:{stamp[1]}:{hash(data)}"
            loaded = LoadedTemplate(template, version)
            self._entries[name] = _Entry(stamp, loaded)
            self.loads += 1
            return loaded
