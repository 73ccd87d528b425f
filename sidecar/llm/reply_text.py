"""A reply's text as its tokens come, on the embedded model: what may be shown now.

The embedded model's generations run a loop of our own (sidecar/llm/local.py), so that
eight of them decode in one llama.cpp batch (sidecar/llm/turns.py) where
llama-cpp-python's `create_completion` decodes one sequence. This is the part of
`create_completion` that loop needs: a token's bytes may end inside a UTF-8 character,
and text that may begin a stop sequence is held until the next token tells.

As with `create_completion`, a stop sequence ends the reply and is never shown, nor is
any text after it.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

__all__ = ["ReplyText"]


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
