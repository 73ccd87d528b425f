"""Decision replies (docs/context.md, Decisions and notes): the reply's last JSON object carries
`{"action": N, "message": "...", "notes": "..."}`; N is 1-based, as the options
are numbered in the prompt. Also the notes rules: whitespace collapsed, cut to
200 characters, replaced only by accepted replies that carry them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sidecar.prompts.escape import collapse_ws

__all__ = [
    "MAX_NOTES_LENGTH", "Parsed", "ReplyRejected", "SpokenStream", "last_json_object", "parse_decision", "clean_notes"
]

MAX_NOTES_LENGTH = 200
# strict=False: models often put raw line breaks inside JSON strings.
_decoder = json.JSONDecoder(strict=False)


class ReplyRejected(Exception):
    """The reply has no usable choice; `reason` is shown to the model on retry."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Parsed:
    #: 0-based index into the options.
    index: int
    message: str
    #: None when the reply carried no notes (the previous notes stay).
    notes: str | None
    #: The reply's "parameters" as written (None: none); checked by sidecar/context/action_params.py.
    parameters: object = None


def last_json_object(reply: str) -> dict[str, object] | None:
    """The last top-level JSON object in `reply`, so the model may reason first."""
    found: dict[str, object] | None = None
    pos = reply.find("{")
    while pos != -1:
        try:
            obj, end = _decoder.raw_decode(reply, pos)
        except json.JSONDecodeError:
            pos = reply.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            found = obj
        pos = reply.find("{", end)
    return found


def clean_notes(notes: str) -> str:
    return collapse_ws(notes)[:MAX_NOTES_LENGTH]


def _action_number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


#: Longest value a rejection reason quotes; a longer one is described, never cut:
#: a cut value could end in part of an engine ID, which no search then recognises.
_MAX_QUOTED = 40


def _describe(value: object) -> str:
    """The value as the reason shows it: quoted whole when short, else its shape.
    (The caller still projects the reason: a whole engine ID in it becomes its alias.)"""
    quoted = json.dumps(value, ensure_ascii=False)
    if len(quoted) <= _MAX_QUOTED:
        return quoted
    if isinstance(value, str):
        return f"a text of {len(value)} characters"
    return f"a {type(value).__name__} value"


def parse_decision(reply: str, n_options: int) -> Parsed:
    """Raises ReplyRejected with a reason the model can act on."""
    obj = last_json_object(reply)
    if obj is None:
        raise ReplyRejected('the reply has no JSON object; end it with {"action": N, "message": "...", "notes": "..."}')
    if "action" not in obj:
        raise ReplyRejected('the last JSON object has no "action" field')
    number = _action_number(obj["action"])
    if number is None:
        raise ReplyRejected(f'"action" must be an option number, got {_describe(obj["action"])}')
    if not 1 <= number <= n_options:
        raise ReplyRejected(f"action {number} is not an option: choose a number from 1 to {n_options}")
    message = obj.get("message", "")
    message = collapse_ws(message) if isinstance(message, str) else ""
    notes = obj.get("notes")
    return Parsed(
        index=number - 1,
        message=message,
        notes=clean_notes(notes) if isinstance(notes, str) else None,
        parameters=obj.get("parameters"),
    )


#: Where a reply's "message" string starts.
_MESSAGE_KEY = re.compile(r'"message"\s*:\s*"')
#: Characters kept back while no key was found: the longest key with its spacing.
_KEY_TAIL = 24
#: What the screen shows for whitespace and control escapes (line breaks and tabs read
#: as spaces, as the accepted message's whitespace is collapsed).
_SCREEN = str.maketrans({"\n": " ", "\r": " ", "\t": " ", "\b": None, "\f": None})
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_size(held: str, i: int) -> int:
    """Characters of the JSON escape at `held[i]` (a backslash): 2, 6 for `\\uXXXX`, 12
    for a surrogate pair (a high one waits for the next 6 characters to tell); 0 while
    the rest of it has not arrived."""
    if i + 1 >= len(held):
        return 0
    if held[i + 1] != "u":
        return 2
    if i + 6 > len(held):
        return 0
    if held[i + 2 : i + 4].lower() not in ("d8", "d9", "da", "db"):  # not a high surrogate
        return 6
    if i + 12 > len(held):
        return 0
    low = held[i + 6 : i + 8] == "\\u" and held[i + 8 : i + 10].lower() in ("dc", "dd", "de", "df")
    return 12 if low else 6


def _decoded(escape: str) -> str:
    """One escape as text (JSON's own decoder); what cannot be shown as U+FFFD."""
    try:
        text = _decoder.decode(f'"{escape}"')
    except json.JSONDecodeError:
        return escape[1] if len(escape) == 2 else "\ufffd"
    return _SURROGATE.sub("\ufffd", text)


class SpokenStream:
    """What a decision reply's text shows a player while it streams: the characters
    of its `"message"` string, decoded, as they arrive; never its JSON, its notes or
    the reasoning before it (docs/runs.md, The event stream). Feed the raw text in
    pieces; each call returns the message text those pieces completed."""

    def __init__(self) -> None:
        self._held = ""
        self._inside = False
        self._messages = 0

    def feed(self, text: str) -> str:
        self._held += text
        out: list[str] = []
        while self._held:
            if not self._inside:
                key = _MESSAGE_KEY.search(self._held)
                if key is None:
                    self._held = self._held[-_KEY_TAIL:]
                    break
                self._held, self._inside = self._held[key.end() :], True
                if self._messages:
                    out.append(" ")  # a later object's message: apart from the first
                self._messages += 1
                continue
            if not self._read_string(out):
                break
        return "".join(out).translate(_SCREEN)

    def _read_string(self, out: list[str]) -> bool:
        """Decode held string characters into `out`; True at the closing quote."""
        held, i = self._held, 0
        while i < len(held):
            c = held[i]
            if c == '"':
                self._held, self._inside = held[i + 1 :], False
                return True
            if c != "\\":
                out.append(c)
                i += 1
                continue
            size = _escape_size(held, i)
            if not size:
                break  # the rest of the escape has not arrived
            out.append(_decoded(held[i : i + size]))
            i += size
        self._held = held[i:]
        return False
