"""Finding engine IDs inside text, fast, for many IDs at once.

One compiled regex per ID set: the IDs are folded into a character trie and
the trie is written out as nested alternations, so the regex engine walks the
trie at each text position instead of trying 10,000 alternatives one by one.
Used by `Projection.text` (replace IDs in game-supplied text by aliases) and by
the leak guard (refuse a model request that holds one).

The matching rule (docs/privacy.md):

- An ID is matched case-sensitively, as a whole token: when its first character
  is a word character (`\\w`, Unicode-aware) it may not follow a word
  character, and when its last character is one it may not precede one. So
  "Goblin" is found in "the Goblin." but not in "Goblins"; "/Game/Maps/A" is
  found anywhere its slash-delimited text occurs.
- Only distinctive IDs are searched for (`searchable`): at least
  `MIN_ID_LENGTH` (4) characters; an ID made only of letters needs
  `MIN_WORD_ID_LENGTH` (8), one made only of digits `MIN_NUMBER_ID_LENGTH` (6).
  Shorter ones ("1", "a", "npc", "door", "main", "1999") are ordinary words and
  numbers ("option 1", "the main door"); searching for them would refuse
  harmless prompts and rewrite harmless text. Such IDs are kept out of prompts
  by construction (the projection renders aliases, never IDs), not by search.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

__all__ = ["MIN_ID_LENGTH", "MIN_WORD_ID_LENGTH", "MIN_NUMBER_ID_LENGTH", "IdMatcher", "searchable"]

#: Shortest ID searched for in text (see the module docstring).
MIN_ID_LENGTH = 4
#: Shortest all-letter ID searched for ("Goblin" is a word; "Mordekaiser" is a name).
MIN_WORD_ID_LENGTH = 8
#: Shortest all-digit ID (or tick) searched for ("1999" is a year; "2147483647" an ID).
MIN_NUMBER_ID_LENGTH = 6

_WORD = re.compile(r"\w")
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


def _is_word(ch: str) -> bool:
    return _WORD.match(ch) is not None


class IdMatcher:
    """Whole-token search for a fixed set of IDs."""

    __slots__ = ("ids", "_regex")

    def __init__(self, ids: Iterable[str]) -> None:
        self.ids = frozenset(i for i in ids if searchable(i))
        self._regex: re.Pattern[str] | None = _compile(self.ids) if self.ids else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        if self._regex is None:
            return iter(())
        return self._regex.finditer(text)

    def first(self, text: str) -> re.Match[str] | None:
        """The first ID occurring in `text`, or None."""
        if self._regex is None:
            return None
        return self._regex.search(text)

    def sub(self, text: str, replace: Callable[[str], str]) -> str:
        """`text` with every ID occurrence replaced by `replace(id)`."""
        if self._regex is None:
            return text
        return self._regex.sub(lambda m: replace(m.group(0)), text)


def _compile(ids: frozenset[str]) -> re.Pattern[str]:
    trie: dict[str, dict] = {}
    for ident in ids:
        node = trie
        for ch in ident:
            node = node.setdefault(ch, {})
        node[_END] = {}
    return re.compile(_branches(trie, prev="", at_start=True))


def _branches(node: dict[str, dict], prev: str, at_start: bool) -> str:
    """Pattern for the subtree `node`; `prev` is the character just consumed."""
    alternatives: list[str] = []
    for ch in sorted(k for k in node if k != _END):
        child = node[ch]
        lead = "(?<!\\w)" if at_start and _is_word(ch) else ""
        # Follow single-child chains iteratively: long IDs (GUIDs, paths) are mostly
        # chains, and this keeps group nesting (and recursion) to the branching points.
        literal = [ch]
        last = ch
        while len(child) == 1 and _END not in child:
            (nxt,) = child
            literal.append(nxt)
            last = nxt
            child = child[nxt]
        alternatives.append(lead + re.escape("".join(literal)) + _branches(child, last, False))
    if _END in node:
        # Last, so a longer ID ("BP_Goblin_C_12") wins over its prefix ("BP_Goblin_C_1").
        alternatives.append("(?!\\w)" if _is_word(prev) else "")
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"
