"""Text deltas coalesced over a short window, split at sentence ends.

Throttle semantics: text that arrives when nothing was emitted for a window
goes out at once (so the first token is never delayed); text arriving within
a window of the last emission is held until that window closes. No text is
held longer than one window. A sentence end always ends a delta and is sent
at once; a full stop at the very end of what arrived so far is ambiguous
("Dr." / "3.14") and waits up to one window for the next character to tell.
The first text of a reply never waits on the timer: when it ends so, what
precedes the punctuation goes out at once and only the punctuation waits
("Hello." -> "Hello" now, "." with its sentence end when told apart).

No chunk is longer than `max_chars`: held text reaching it goes out at once, and a
longer sentence goes out in several chunks (the sentence end on the last), so a
provider that sends a huge chunk, or many at once, never makes a huge delta.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Protocol

import msgspec

__all__ = ["Clock", "Coalescer", "LoopClock", "TextChunk", "split_sentences", "MAX_CHUNK_CHARS"]

#: The longest chunk a Coalescer emits (docs/runs.md, "The event stream").
MAX_CHUNK_CHARS = 1024

_CLOSERS = "\"'”’)]»"
#: Terminal punctuation (and closing quotes) followed by whitespace.
_BOUNDARY = re.compile(r"[.!?…]+[" + re.escape(_CLOSERS) + r"]*(?=\s)")
_TAIL = re.compile(r"[.!?…]+[" + re.escape(_CLOSERS) + r"]*$")
#: `_last_emit` before anything was sent.
_NEVER = float("-inf")
_ABBREV = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "mt", "no"})


class TextChunk(msgspec.Struct, frozen=True):
    text: str
    sentence_end: bool = False


def _is_end(text: str, punct_start: int) -> bool:
    """Whether the punctuation at `punct_start` ends a sentence (not "Dr." or "A.")."""
    if text[punct_start] != ".":
        return True
    word = re.search(r"([\w.]+)$", text[:punct_start])
    if word is None:
        return True
    w = word.group(1)
    if w.lower() in _ABBREV:
        return False
    return not (len(w) == 1 and w.isupper())


def split_sentences(text: str, before: str = "") -> tuple[list[str], str]:
    """(complete sentences each ending at its punctuation, the rest).

    `before` is text already sent, so "Mr" + "." is still seen as "Mr.".
    """
    full, base = before + text, len(before)
    out: list[str] = []
    start = base
    for m in _BOUNDARY.finditer(full, base):
        if _is_end(full, m.start()) and m.end() > start:
            out.append(full[start : m.end()])
            start = m.end()
    return out, full[start:]


def ends_sentence(text: str, before: str = "") -> bool:
    full = before + text
    m = _TAIL.search(full, len(before))
    return m is not None and _is_end(full, m.start())


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the coalescer needs of time: the hour, and a timer. Timing is this
    module's behaviour, so tests drive it with a fake clock (exact flush points,
    no sleeping); the sidecar uses `LoopClock`."""

    def now(self) -> float: ...

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """The real clock: monotonic time and the running event loop's timers."""

    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(delay_s, callback)


class Coalescer:
    """Feed provider text in; `emit(chunk)` is called with coalesced chunks.

    Runs on the event loop when `clock` is the default `LoopClock`.
    """

    def __init__(
        self,
        window_s: float,
        emit: Callable[[TextChunk], None],
        clock: Clock | None = None,
        max_chars: int = MAX_CHUNK_CHARS,
    ) -> None:
        self.window_s = max(0.0, window_s)
        self.max_chars = max(1, max_chars)
        self._emit = emit
        self._clock = clock or LoopClock()
        self._pending = ""
        #: The end of what was already sent: context for abbreviations.
        self._sent_tail = ""
        self._last_emit = _NEVER
        self._timer: Timer | None = None

    @property
    def pending(self) -> str:
        return self._pending

    def _send(self, text: str, sentence_end: bool) -> None:
        if text:
            self._last_emit = self._clock.now()
            self._sent_tail = (self._sent_tail + text)[-24:]
            step = self.max_chars
            for start in range(0, len(text), step):
                last = start + step >= len(text)
                self._emit(TextChunk(text[start : start + step], sentence_end and last))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, delay: float) -> None:
        if self._timer is None:
            self._timer = self._clock.call_later(max(0.0, delay), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        text, self._pending = self._pending, ""
        # The window closed with no next character: a trailing full stop is taken as an end.
        self._send(text, ends_sentence(text, self._sent_tail))

    def feed(self, text: str) -> None:
        if not text:
            return
        self._pending += text
        sentences, rest = split_sentences(self._pending, self._sent_tail)
        if sentences:
            self._cancel_timer()
            self._pending = rest
            for sentence in sentences:
                self._send(sentence, True)
        if len(self._pending) > self.max_chars:
            # Arriving faster than a window can hold: out now, in full chunks.
            self._cancel_timer()
            cut = len(self._pending) - len(self._pending) % self.max_chars
            text, self._pending = self._pending[:cut], self._pending[cut:]
            self._send(text, False)
        if not self._pending:
            return
        now = self._clock.now()
        if ends_sentence(self._pending, self._sent_tail):
            if self._last_emit == _NEVER:
                # The first words are what the player waits for: only the trailing
                # punctuation is in doubt, so what precedes it goes out now.
                tail = _TAIL.search(self._pending)
                assert tail is not None  # ends_sentence found it
                head, self._pending = self._pending[: tail.start()], self._pending[tail.start() :]
                self._send(head, False)
            self._arm(self.window_s)  # wait (at most a window) to see what follows
        elif self._timer is None and now - self._last_emit >= self.window_s:
            text, self._pending = self._pending, ""
            self._send(text, False)
        else:
            self._arm(self._last_emit + self.window_s - now)

    def flush(self, cut: bool = False) -> None:
        """The stream ended: send what is held (a final full stop ends a sentence,
        unless the reply was `cut` by the output limit: then its last words end none)."""
        self._cancel_timer()
        text, self._pending = self._pending, ""
        self._send(text, not cut and ends_sentence(text, self._sent_tail))

    def discard(self) -> str:
        """Drop what is held (cancel) and return it."""
        self._cancel_timer()
        text, self._pending = self._pending, ""
        return text
