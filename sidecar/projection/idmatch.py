"""Finding engine IDs inside text, fast, for many IDs at once.

Backed by an Aho-Corasick automaton (pyahocorasick, C) when it is installed,
else by one regex whose alternation follows a character trie; both obey the
same rule and are tested alike. An automaton for 10,000 IDs takes ~50 ms to
build, so matchers are cached by ID set (`matcher_for`), and a set that only
grew (the usual case: aliased IDs are never forgotten) reuses the previous
matcher plus a small one for the new IDs.

Used by `Projection.text` (replace IDs in game-supplied text by aliases) and by
the leak guard (refuse a model request that holds one).

The matching rule (docs/privacy.md):

- Only distinctive IDs are searched for (`searchable`): at least
  `MIN_ID_LENGTH` (4) characters; an ID made only of letters needs
  `MIN_WORD_ID_LENGTH` (8), one made only of digits `MIN_NUMBER_ID_LENGTH` (6).
  Shorter ones ("1", "a", "npc", "door", "main", "1999") are ordinary words and
  numbers ("option 1", "the main door"); searching for them would refuse
  harmless prompts and rewrite harmless text. Such IDs are kept out of prompts
  by construction (the projection renders aliases, never IDs), not by search.
- A searchable ID matches wherever its exact text occurs (case-sensitive),
  also inside longer text ("npc_BP_Goblin_C_7" holds "BP_Goblin_C_7"), except
  that an all-letter ID may not touch a letter on either side ("Blacksmith"
  is not found in "Blacksmiths") and an all-digit ID may not touch a digit.
- Where IDs overlap at one position, the longest wins.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TypeAlias

try:  # optional accelerator; the regex backend below is the fallback
    import ahocorasick as _ac
except ImportError:  # pragma: no cover - depends on the environment
    _ac = None

__all__ = [
    "MIN_ID_LENGTH",
    "MIN_WORD_ID_LENGTH",
    "MIN_NUMBER_ID_LENGTH",
    "IdMatcher",
    "matcher_for",
    "searchable",
]

#: Shortest ID searched for in text (see the module docstring).
MIN_ID_LENGTH = 4
#: Shortest all-letter ID searched for ("Goblin" is a word; "Mordekaiser" is a name).
MIN_WORD_ID_LENGTH = 8
#: Shortest all-digit ID (or tick) searched for ("1999" is a year; "2147483647" an ID).
MIN_NUMBER_ID_LENGTH = 6

#: Backend used for new matchers: "ac" (pyahocorasick) when importable, else "regex".
BACKEND = "ac" if _ac is not None else "regex"

_END = ""  # trie key marking "an ID ends here"


def searchable(ident: str) -> bool:
    """Whether `ident` is distinctive enough to be searched for in text."""
    if len(ident) < MIN_ID_LENGTH:
        return False
    if ident.isalpha():
        return len(ident) >= MIN_WORD_ID_LENGTH
    if ident.isdigit():
        return len(ident) >= MIN_NUMBER_ID_LENGTH
    return True


def _bounded(text: str, start: int, end: int) -> bool:
    """The edge rule: an all-letter ID may not touch a letter, an all-digit one a digit."""
    ident = text[start:end]
    if ident.isalpha():
        return not (start > 0 and text[start - 1].isalpha()) and not (end < len(text) and text[end].isalpha())
    if ident.isdigit():
        return not (start > 0 and text[start - 1].isdigit()) and not (end < len(text) and text[end].isdigit())
    return True


class _AcPart:
    """All occurrences (overlapping too) of a set of IDs, by Aho-Corasick."""

    def __init__(self, ids: Iterable[str]) -> None:
        self._a = _ac.Automaton()
        for ident in ids:
            self._a.add_word(ident, len(ident))
        self._a.make_automaton()

    def hits(self, text: str) -> list[tuple[int, int]]:
        return [(last - length + 1, last + 1) for last, length in self._a.iter(text)]


class _RegexPart:
    """Leftmost occurrences of a set of IDs, by a trie-shaped regex."""

    def __init__(self, ids: Iterable[str]) -> None:
        self._re = _compile(frozenset(ids))

    def hits(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._re.finditer(text)]


class IdMatcher:
    """Search for a fixed set of IDs, by the rule above."""

    __slots__ = ("ids", "_parts", "_delta_ids", "backend", "_clean")

    def __init__(self, ids: Iterable[str], *, backend: str | None = None) -> None:
        self.ids: frozenset[str] = frozenset(i for i in ids if searchable(i))
        self.backend = backend or BACKEND
        self._parts = [self._part(self.ids)] if self.ids else []
        self._delta_ids: frozenset[str] = frozenset()
        # Texts known to hold no ID. Game text repeats a lot (field names, names,
        # descriptions across prompts); a set lookup is ~20x cheaper than a search.
        self._clean: set[str] = set()

    def _part(self, ids: Iterable[str]) -> _AcPart | _RegexPart:
        return _AcPart(ids) if self.backend == "ac" else _RegexPart(ids)

    def extended(self, more: Iterable[str]) -> IdMatcher:
        """A matcher for these IDs plus `more`, reusing this one's bulk when the
        addition is small (a rebuild of the whole set costs ~5 us per ID)."""
        new = frozenset(i for i in more if searchable(i)) - self.ids
        if not new:
            return self
        delta = self._delta_ids | new
        if len(delta) > max(256, len(self.ids) // 8) or not self._parts:
            return IdMatcher(self.ids | new, backend=self.backend)
        out = IdMatcher((), backend=self.backend)
        out.ids = self.ids | new
        # parts[0] holds everything but the current delta (all of self.ids when no delta).
        out._parts = [self._parts[0], out._part(delta)]
        out._delta_ids = delta
        return out

    def _valid_hits(self, text: str) -> list[tuple[int, int]]:
        if len(self._parts) == 1:
            found = self._parts[0].hits(text)  # (the common case, kept cheap: text() runs per field)
            if not found:
                return found
            found = [h for h in found if _bounded(text, *h)]
        else:
            found = [h for part in self._parts for h in part.hits(text) if _bounded(text, *h)]
        if len(found) < 2:
            return found
        # Leftmost, then longest; drop hits overlapping one already taken.
        found.sort(key=lambda h: (h[0], h[0] - h[1]))
        out: list[tuple[int, int]] = []
        taken_to = -1
        for start, end in found:
            if start >= taken_to:
                out.append((start, end))
                taken_to = end
        return out

    def first(self, text: str) -> tuple[int, int] | None:
        """(start, end) of some ID occurring in `text`, or None."""
        for part in self._parts:
            for hit in part.hits(text):
                if _bounded(text, *hit):
                    return hit
        return None

    def find_all(self, text: str) -> list[str]:
        """The IDs occurring in `text`, leftmost-longest, without overlaps, in order."""
        return [text[s:e] for s, e in self._valid_hits(text)]

    def sub(self, text: str, replace: Callable[[str], str]) -> str:
        """`text` with every ID occurrence replaced by `replace(id)`.

        Repeated until nothing matches (at most `_MAX_PASSES` passes): a replacement
        changes the neighbours of the text around it, so an all-letter ID that was
        glued to a replaced one ("/Game/AGoblinoid") can become a whole word after it.
        """
        if not self._parts or not text or text in self._clean:
            return text
        out = text
        for _ in range(_MAX_PASSES):
            hits = self._valid_hits(out)
            if not hits:
                break
            pieces: list[str] = []
            pos = 0
            for start, end in hits:
                pieces.append(out[pos:start])
                pieces.append(replace(out[start:end]))
                pos = end
            pieces.append(out[pos:])
            out = "".join(pieces)
        if out is text:
            if len(self._clean) >= _CLEAN_LIMIT:
                self._clean.clear()
            self._clean.add(text)
        return out


#: Replacement passes in `sub` (one, plus re-checks; more only for IDs glued together).
_MAX_PASSES = 4
#: Clean-text memo entries per matcher before it starts over.
_CLEAN_LIMIT = 100_000

_lock = threading.Lock()
_cache: OrderedDict[frozenset[str], IdMatcher] = OrderedDict()
_CACHE_SIZE = 32


def matcher_for(ids: frozenset[str], previous: IdMatcher | None = None) -> IdMatcher:
    """A cached matcher for exactly `ids`; built from `previous` when `ids` only adds to it."""
    with _lock:
        hit = _cache.get(ids)
        if hit is not None:
            _cache.move_to_end(ids)
            return hit
    if previous is not None and previous.ids <= ids:
        matcher = previous.extended(ids - previous.ids)
    else:
        matcher = IdMatcher(ids)
    with _lock:
        _cache[ids] = matcher
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return matcher


_LETTER = "[^\\W\\d_]"


def _compile(ids: frozenset[str]) -> re.Pattern[str]:
    words = [i for i in ids if i.isalpha()]
    numbers = [i for i in ids if i.isdigit()]
    others = [i for i in ids if not i.isalpha() and not i.isdigit()]
    parts: list[str] = []
    if others:
        parts.append(_trie_pattern(others))
    if words:
        parts.append(f"(?<!{_LETTER}){_trie_pattern(words)}(?!{_LETTER})")
    if numbers:
        parts.append(f"(?<!\\d){_trie_pattern(numbers)}(?!\\d)")
    return re.compile("|".join(parts))


#: A character trie: each key is the next character (or _END), each value the subtree.
_Trie: TypeAlias = dict[str, "_Trie"]


def _trie_pattern(ids: list[str]) -> str:
    trie: _Trie = {}
    for ident in ids:
        node = trie
        for ch in ident:
            node = node.setdefault(ch, {})
        node[_END] = {}
    return _branches(trie)


def _branches(node: _Trie) -> str:
    """Pattern for the subtree `node`: a nested alternation along the trie."""
    alternatives: list[str] = []
    for ch in sorted(k for k in node if k != _END):
        child = node[ch]
        # Follow single-child chains iteratively: long IDs (GUIDs, paths) are mostly
        # chains, and this keeps group nesting (and recursion) to the branching points.
        literal = [ch]
        while len(child) == 1 and _END not in child:
            (nxt,) = child
            literal.append(nxt)
            child = child[nxt]
        alternatives.append(re.escape("".join(literal)) + _branches(child))
    if _END in node:
        # Last, so a longer ID ("BP_Goblin_C_12") wins over its prefix ("BP_Goblin_C_1").
        alternatives.append("")
    if not alternatives:
        return ""
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"
