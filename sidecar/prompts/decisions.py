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
#: What a JSON escape stands for on screen (line breaks and tabs read as spaces, as
#: the accepted message's whitespace is collapsed).
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "n": " ", "r": " ", "t": " ", "b": "", "f": ""}
#: Characters kept back while no key was found: the longest key with its spacing.
_KEY_TAIL = 24


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
            done = self._read_string(out)
            if not done:
                break
        return "".join(out)

    def _read_string(self, out: list[str]) -> bool:
        """Decode held string characters into `out`; True at the closing quote."""
        held, i = self._held, 0
        while i < len(held):
            c = held[i]
            if c == '"':
                self._held, self._inside = held[i + 1 :], False
                return True
            if c != "\\":
                out.append(" " if c in "\r\n\t" else c)
                i += 1
                continue
            if i + 1 >= len(held):
                break  # the escape's second half has not arrived
            e = held[i + 1]
            if e != "u":
                out.append(_ESCAPES.get(e, e))
                i += 2
                continue
            if i + 6 > len(held):
                break
            code = held[i + 2 : i + 6]
            try:
                point = int(code, 16)
            except ValueError:
                point = 0xFFFD
            if 0xD800 <= point < 0xDC00:  # a surrogate pair: wait for the low half
                if i + 12 > len(held):
                    break
                try:
                    low = int(held[i + 8 : i + 12], 16) if held[i + 6 : i + 8] == "\\u" else 0
                except ValueError:
                    low = 0
                if 0xDC00 <= low < 0xE000:
                    out.append(chr(0x10000 + ((point - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                    continue
                point = 0xFFFD
            out.append(chr(point) if not 0xDC00 <= point < 0xE000 else "\uFFFD")
            i += 6
        self._held = held[i:]
        return False
