"""The two search backends of the ID matcher: an automaton and a regex.

Both find every occurrence of a set of folded IDs in a folded text, overlaps
included, and leave the rule's choices (edges, masks, leftmost-longest) to
`IdMatcher` (sidecar/idsearch/match.py), so the two are interchangeable and
tested alike. Aho-Corasick (pyahocorasick, C) is used when it is installed; the
regex, whose alternation follows a character trie, is the fallback. Kept apart
from the matcher: this is the one place that knows how a search is done.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeAlias

try:  # optional accelerator; the regex backend below is the fallback
    import ahocorasick as _ac
except ImportError:  # pragma: no cover - depends on the environment
    _ac = None

__all__ = ["BACKEND", "AcPart", "RegexPart"]


#: Backend used for new matchers: "ac" (pyahocorasick) when importable, else "regex".
BACKEND = "ac" if _ac is not None else "regex"

_END = ""  # trie key marking "an ID ends here"


class AcPart:
    """All occurrences (overlapping too) of a set of folded IDs, by Aho-Corasick."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._a = _ac.Automaton()
        for key in keys:
            self._a.add_word(key, len(key))
        self._a.make_automaton()

    def hits(self, text: str) -> list[tuple[int, int]]:
        return [(last - length + 1, last + 1) for last, length in self._a.iter(text)]


class RegexPart:
    """Occurrences of a set of folded IDs, by a trie-shaped regex: the longest at each
    place an occurrence starts (overlaps included, so both backends see the same)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._re = _compile(frozenset(keys))

    def hits(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.start() + len(m.group(1))) for m in self._re.finditer(text)]


def _compile(keys: frozenset[str]) -> re.Pattern[str]:
    """A zero-width search at every position (a lookahead), so overlapping occurrences
    are all seen, as Aho-Corasick sees them; group 1 is the longest ID starting there.
    The edge rule is applied afterwards, on the same candidates as the automaton's."""
    pattern = _trie_pattern(sorted(keys)) if keys else "(?!)"
    return re.compile(f"(?=({pattern}))")


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
