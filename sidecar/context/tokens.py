"""Token counting for budgets: the serving model's tokenizer, memoized per text,
and trimming a text to a token limit at its end.

Chat formats add a few tokens per message (role markers, separators); the
engine counts `MESSAGE_OVERHEAD` per message plus `REPLY_PRIMING` once, which
covers OpenAI's documented 3 + 3 and Gemma's `<start_of_turn>role\\n...<end_of_turn>\\n`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

from sidecar.context.contract import TokenCounter

__all__ = ["MESSAGE_OVERHEAD", "REPLY_PRIMING", "CountCache", "messages_tokens", "trim_text", "trim_lines", "fit_lines"]

MESSAGE_OVERHEAD = 5
REPLY_PRIMING = 3
ELLIPSIS = " …"


class CountCache:
    """One memoized wrapper per counter object (the gateway hands out one per profile)."""

    #: Texts counted, kept: the history items of the windows in play and the stable parts.
    #: Every turn adds a volatile block never counted again (at 32,768 they held RSS
    #: growing through a 3,000-turn session, issue 31).
    def __init__(self, maxsize: int = 8192) -> None:
        self._maxsize = maxsize
        self._wrapped: dict[int, tuple[TokenCounter, Callable[[str], int]]] = {}
        self._lock = threading.Lock()

    def get(self, count: TokenCounter) -> Callable[[str], int]:
        entry = self._wrapped.get(id(count))
        if entry is not None and entry[0] is count:
            return entry[1]
        with self._lock:
            if len(self._wrapped) >= 16:  # counters are few; a flood means fresh closures per call
                self._wrapped.clear()
            cached = functools.lru_cache(maxsize=self._maxsize)(count)
            self._wrapped[id(count)] = (count, cached)
            return cached


def messages_tokens(messages: Sequence[dict[str, str]], count: Callable[[str], int]) -> int:
    """Tokens of a chat request as the budget counts them."""
    return sum(count(m["content"]) for m in messages) + MESSAGE_OVERHEAD * len(messages) + REPLY_PRIMING


def trim_text(text: str, limit: int, count: Callable[[str], int]) -> str:
    """The longest prefix of `text` (cut at a space when one is near) plus an
    ellipsis that counts at most `limit` tokens; "" when not even that fits."""
    if count(text) <= limit:
        return text
    if limit <= count(ELLIPSIS.strip()) + 1:
        return ""
    lo, hi = 0, len(text)
    best = ""
    # Binary search on characters, measured with the real tokenizer, starting from a
    # proportional guess so a long text costs a few counts of about the right size.
    total = count(text)
    guess = len(text) * limit // max(1, total)
    if count(text[: guess * 9 // 10]) <= limit:
        lo = guess * 9 // 10
        if guess * 11 // 10 < hi and count(text[: guess * 11 // 10]) > limit:
            hi = guess * 11 // 10
    while lo < hi:
        mid = (lo + hi + 1) // 2
        cut = text[:mid]
        space = cut.rfind(" ", max(0, mid - 24))
        if space > 0:
            cut = cut[:space]
        candidate = cut.rstrip() + ELLIPSIS
        if count(candidate) <= limit:
            best = candidate
            lo = mid
        else:
            hi = mid - 1
    return best


def trim_lines(header: str, lines: Sequence[str], limit: int, count: Callable[[str], int]) -> tuple[str, int]:
    """`header` plus the longest prefix of `lines` that fits `limit` tokens, as one
    text; returns (text, lines kept). Lines are in priority order, so cutting at
    the end drops the least relevant. ("", 0) when not even one line fits."""
    whole = "\n".join([header, *lines])
    if count(whole) <= limit:
        return whole, len(lines)
    lo, hi, best = 0, len(lines), ("", 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        text = "\n".join([header, *lines[:mid]])
        if count(text) <= limit:
            best, lo = (text, mid), mid
        else:
            hi = mid - 1
    return best


def fit_lines(
    header: str, lines: Sequence[str], short: Sequence[str], limit: int, count: Callable[[str], int]
) -> tuple[str, int, int]:
    """`header` and `lines` as one text of at most `limit` tokens, giving up the least
    first: the lowest lines' descriptions (`short`: each line's short form, its label;
    empty when the lines have none), the first shortened line is cut within itself when
    that keeps more, and only then whole lines from the end; the first line is cut within
    itself rather than dropped. Returns (text, lines kept, lines kept whole); ("", 0, 0)
    when not even the start of one line fits."""
    n = len(lines)
    whole = "\n".join([header, *lines])
    if count(whole) <= limit:
        return whole, n, n
    if len(short) == n and n:

        def joined(k: int, cut: Sequence[str] = ()) -> str:
            return "\n".join([header, *lines[:k], *cut, *short[k + len(cut) :]])

        if count(joined(0)) <= limit:
            lo, hi = 0, n - 1  # the most lines kept whole (not n: the whole did not fit)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if count(joined(mid)) <= limit:
                    lo = mid
                else:
                    hi = mid - 1
            text = joined(lo)
            # The first shortened line, cut within itself, when that keeps more than its label.
            others = count(joined(lo, [""]))
            cut = trim_text(lines[lo], limit - others - 1, count)
            if cut and count(cut) > count(short[lo]):
                longer = joined(lo, [cut])
                if count(longer) <= limit:
                    text = longer
            return text, n, lo
        lines = short
    text, kept = trim_lines(header, lines, limit, count)
    if kept or not lines:
        return text, kept, 0
    # Not even the first line whole: its start (the place's name) rather than nothing.
    cut = trim_text(lines[0], limit - count(header) - 1, count)
    return (f"{header}\n{cut}", 1, 0) if cut else ("", 0, 0)
