"""Folding text for the ID rule, with a map back to the text it came from.

`fold` is the form IDs and text are compared in (NFKC, case folded, invisible
characters left out: the rule in sidecar/idsearch/match.py's docstring).
Folding can change a text's length ("ß" is "ss", a ligature is two letters, an
invisible character is none), so a search runs on the folded text and `back`
turns what it found into a span of the original. Kept apart from the matcher:
this is text normalisation alone, the part with the Unicode subtleties and the
fast paths a prompt's mostly-ASCII text takes, and it knows nothing of IDs.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TypeAlias

__all__ = ["Folded", "back", "fold", "folded", "invisible_only"]

#: Characters that render as nothing (Unicode's default-ignorable code points): a copy
#: of an ID with one inside reads as the ID, so folding leaves them out.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip
_INVISIBLE = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _INVISIBLE_RANGES) + "]")
#: The same for a text with no character beyond the BMP (a search twice as fast).
_INVISIBLE_IN_BMP = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _INVISIBLE_RANGES if b < 0x10000) + "]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def fold(text: str) -> str:
    """The form IDs are compared in: NFKC, case folded, invisible characters left out."""
    return folded(text)[0]


def invisible_only(text: str) -> bool:
    """Whether `text` holds nothing visible (only whitespace and invisible characters)."""
    return not _INVISIBLE.sub("", text).strip()


#: A folded text and, when it is not the original character for character, where each
#: of its characters came from: (start, end) in the original per folded character.
Folded: TypeAlias = tuple[str, list[int] | None, list[int] | None]


def folded(text: str) -> Folded:
    """`text` folded, with where each folded character came from when that moved (`Folded`)."""
    # Fast paths first: a prompt is mostly ASCII, or at least NFKC with no invisible
    # character and a case folding that maps each character to one character.
    if text.isascii():
        return text.lower(), None, None
    bmp = len(text.encode("utf-16-le", "surrogatepass")) == 2 * len(text)
    if (_INVISIBLE_IN_BMP if bmp else _INVISIBLE).search(text) is None and unicodedata.is_normalized("NFKC", text):
        low = text.casefold()
        if len(low) == len(text):
            return low, None, None
    return _fold_runs(text)


def _fold_runs(text: str) -> Folded:
    """Folding with a map back: ASCII stretches lowered whole, each stretch of other
    characters one cluster (a character and the combining marks after it) at a time."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _NON_ASCII.finditer(text):
        start, end = m.span()
        if start > pos and unicodedata.combining(text[start]):
            start -= 1  # a combining mark belongs to the (ASCII) character before it
        out.append(text[pos:start].lower())
        starts.extend(range(pos, start))
        ends.extend(range(pos + 1, start + 1))
        _fold_clusters(text, start, end, out, starts, ends)
        pos = end
    out.append(text[pos:].lower())
    starts.extend(range(pos, len(text)))
    ends.extend(range(pos + 1, len(text) + 1))
    return "".join(out), starts, ends


def _fold_clusters(text: str, i: int, n: int, out: list[str], starts: list[int], ends: list[int]) -> None:
    while i < n:
        if _INVISIBLE.match(text, i):
            i += 1
            continue
        j = i + 1
        while j < n and (unicodedata.combining(text[j]) or _INVISIBLE.match(text, j)):
            j += 1
        cluster = _INVISIBLE.sub("", text[i:j])
        key = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", cluster).casefold())
        out.append(key)
        starts.extend([i] * len(key))
        ends.extend([j] * len(key))
        i = j


def back(hit: tuple[int, int], starts: list[int] | None, ends: list[int] | None) -> tuple[int, int]:
    """A span of the folded text as the span of the original it came from."""
    if starts is None or ends is None:
        return hit
    return starts[hit[0]], ends[hit[1] - 1]
