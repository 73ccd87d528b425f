"""The judgements of the ID rule: which IDs are searched for, which occurrences count.

The rule is stated in sidecar/idsearch/match.py's docstring (and
docs/privacy.md); here are its parts that judge rather than search: the lengths
that make an ID distinctive (`searchable`), the edge rule for all-letter and
all-digit IDs and the leftmost-longest choice (`pick`), and the texts inside
which an occurrence is none (`Mask`). Kept apart from `IdMatcher` so the
matcher reads as the search, and the rule's thresholds sit together.
"""

from __future__ import annotations

from collections.abc import Iterable

from sidecar.idsearch.fold import fold

__all__ = [
    "MIN_ID_LENGTH",
    "MIN_NUMBER_ID_LENGTH",
    "MIN_WORD_ID_LENGTH",
    "Mask",
    "pick",
    "searchable",
    "searchable_key",
]

#: Shortest ID searched for in text (see sidecar/idsearch/match.py's docstring).
MIN_ID_LENGTH = 4
#: Shortest all-letter ID searched for ("Goblin" is a word; "Mordekaiser" is a name).
MIN_WORD_ID_LENGTH = 8
#: Shortest all-digit ID (or tick) searched for ("1999" is a year; "2147483647" an ID).
MIN_NUMBER_ID_LENGTH = 6


def searchable(ident: str) -> bool:
    """Whether `ident` is distinctive enough to be searched for in text (judged folded)."""
    return searchable_key(fold(ident))


def searchable_key(key: str) -> bool:
    """`searchable` for an ID already folded (the matcher folds each ID once)."""
    if len(key) < MIN_ID_LENGTH:
        return False
    if key.isalpha():
        return len(key) >= MIN_WORD_ID_LENGTH
    if key.isdigit():
        return len(key) >= MIN_NUMBER_ID_LENGTH
    return True


def _bounded(text: str, start: int, end: int, inside: set[int] | None) -> bool:
    """The edge rule: an all-letter ID may not touch a letter, an all-digit one a digit,
    unless that neighbour belongs to another occurrence (`inside`)."""
    ident = text[start:end]
    if ident.isalpha():
        test = str.isalpha
    elif ident.isdigit():
        test = str.isdigit
    else:
        return True
    if start > 0 and test(text[start - 1]) and (inside is None or start - 1 not in inside):
        return False
    return not (end < len(text) and test(text[end]) and (inside is None or end not in inside))


def pick(folded: str, raw: list[tuple[int, int]], inside: set[int] | None) -> list[tuple[int, int]]:
    """Leftmost-longest occurrences that obey the edge rule, without overlaps."""
    out: list[tuple[int, int]] = []
    taken_to = -1
    for start, end in raw:
        if start >= taken_to and _bounded(folded, start, end, inside):
            out.append((start, end))
            taken_to = end
    return out


class Mask:
    """Texts inside which an ID occurrence is none (aliases, the project's own words).

    Matched exactly, as written: the projection writes an alias verbatim. Cheap to
    make (the lengths it needs are worked out on first use, which is only ever after
    an ID was found) and to join (`plus`)."""

    __slots__ = ("texts", "_lengths", "_more")

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.texts: frozenset[str] = texts if isinstance(texts, frozenset) else frozenset(texts)
        self._lengths: list[int] | None = None
        self._more: tuple[Mask, ...] = ()

    def plus(self, other: Mask) -> Mask:
        """A mask of both masks' texts (each keeps what it worked out)."""
        out = Mask()
        out._more = (self, other)
        return out

    def covers(self, text: str, start: int, end: int) -> bool:
        """Whether some text of the mask occurs in `text` around [start, end)."""
        if any(m.covers(text, start, end) for m in self._more):
            return True
        texts = self.texts
        if not texts:
            return False
        if self._lengths is None:
            self._lengths = sorted({len(t) for t in texts})
        span = end - start
        for length in self._lengths:
            if length < span:
                continue
            for pos in range(max(0, end - length), min(start, len(text) - length) + 1):
                if text[pos : pos + length] in texts:
                    return True
        return False
