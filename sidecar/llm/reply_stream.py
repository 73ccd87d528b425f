"""A reply on the embedded model as its tokens come: drawn, shown, stopped.

The embedded model's generations run a loop of our own (`speak`), so that eight of them
decode in one llama.cpp batch (sidecar/llm/turns.py) where llama-cpp-python's
`create_completion` decodes one sequence. This is the part of `create_completion` that
loop needs (`ReplyText`): a token's bytes may end inside a UTF-8 character, and text that
may begin a stop sequence is held until the next token tells. As with `create_completion`,
a stop sequence ends the reply and is never shown, nor is any text after it.
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sidecar.llm.turn_protocol import Steps, Work
from sidecar.llm.types import Chunk

__all__ = ["ReplyText", "StopFlag", "speak"]


class StopFlag(threading.Event):
    """A generation's stop flag, set by its caller on any thread. It counts the chunks
    the generation hands out, to tell how many came after it was set (`lag`)."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks = 0
        self.at_set = 0

    def set(self) -> None:
        if not self.is_set():
            self.at_set = self.chunks
        super().set()

    @property
    def lag(self) -> int:
        return self.chunks - self.at_set


class ReplyText:
    """Feed each token's bytes to `add`; it returns the text that may be shown now."""

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = [s for s in stops if s]
        # Bytes that end inside a character wait for the rest ("ignore": a model's invalid
        # bytes are dropped, as llama-cpp-python drops them).
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self._held = ""
        #: A stop sequence was met: the reply ends here.
        self.stopped = False

    def add(self, piece: bytes) -> str:
        if self.stopped:
            return ""
        self._held += self._decoder.decode(piece)
        found = [i for i in (self._held.find(s) for s in self._stops) if i >= 0]
        if found:
            self.stopped = True
            out, self._held = self._held[: min(found)], ""
            return out
        keep = self._stop_begun()
        out, self._held = self._held[: len(self._held) - keep], self._held[len(self._held) - keep :]
        return out

    def finish(self) -> str:
        """The reply ended (end of turn or its output limit): what was held is shown."""
        if self.stopped:
            return ""
        out, self._held = self._held + self._decoder.decode(b"", final=True), ""
        return out

    def _stop_begun(self) -> int:
        """The length of the longest end of the held text that begins a stop sequence."""
        held = self._held
        longest = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(held)), longest, -1):
                if held.endswith(stop[:n]):
                    longest = n
                    break
        return longest


def speak(
    llm: Any, sampler: Any, reply: ReplyText, work: Work, evaluated: list[int], max_tokens: int,
    shaped: bool, stop: StopFlag, put: Callable[[Chunk], None],
) -> Steps:  # fmt: skip
    """A generation's steps from its prompt's `work` on (sidecar/llm/turns.py): draw a
    token from each answered row until the end of turn, a stop sequence or `max_tokens`,
    handing out text as it may be shown; each token drawn is the next step's work.
    Returns the finish reason ("" if `stop` was set); `evaluated` ends as the tokens in
    the sequence's cells (`llm` a VoiceLlama, `sampler` its CheckedSampler)."""
    said = False
    while True:
        row = yield work
        evaluated += work.tokens
        if stop.is_set():
            return ""
        token = sampler.sample(llm._ctx, row)
        end = llm.is_eog(token)
        text = "" if end else reply.add(llm.piece(token))
        if end or sampler.sampled >= max_tokens:
            text += reply.finish()  # (nothing after a stop sequence)
        if not said and shaped:
            text = text.lstrip(" ")  # the space after the cue's colon
        if text:
            said = True
            put(Chunk(text))
            stop.chunks += 1
        if end or reply.stopped:
            return "stop"
        if sampler.sampled >= max_tokens:
            return "length"
        work = Work(work.seq, len(evaluated), [token])
