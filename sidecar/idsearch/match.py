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

- Text and IDs are compared in a folded form (`fold`): NFKC, case folded,
  invisible characters (zero-width space, soft hyphen, joiners...) left out.
  So `bp_goblin_c_7`, a full-width `ＢＰ_Goblin_C_7`, an NFD copy of an NFC ID
  and an ID with a zero-width space inside are all the ID, for the projection
  (replaced) and for the guard (caught) alike.
- Only distinctive IDs are searched for (`searchable`, on the folded ID): at
  least `MIN_ID_LENGTH` (4) characters; an ID made only of letters needs
  `MIN_WORD_ID_LENGTH` (8), one made only of digits `MIN_NUMBER_ID_LENGTH` (6).
  Shorter ones ("1", "a", "npc", "door", "main", "1999") are ordinary words and
  numbers ("option 1", "the main door"); searching for them would refuse
  harmless prompts and rewrite harmless text. Such IDs are kept out of prompts
  by construction (the projection renders aliases, never IDs), not by search.
- A searchable ID matches wherever its folded text occurs, also inside longer
  text ("npc_BP_Goblin_C_7" holds "BP_Goblin_C_7"), except that an all-letter
  ID may not touch a letter on either side ("Blacksmith" is not found in
  "Blacksmiths") and an all-digit ID may not touch a digit; a neighbour that
  is part of another occurrence does not count ("/Game/AGoblinoid" holds both
  "/Game/A" and "Goblinoid").
- Where IDs overlap, the leftmost, then the longest, wins.
- An occurrence that lies inside the text of a `Mask` (the session's aliases;
  for the guard also the generic words and the project's own fixed words) is
  none: `pc_1` inside the alias `npc_1` is the alias, not the ID.
- Replacement is one pass: text the projection wrote is never searched again.

Here are the matcher and its cache, and every public name of the rule: the
folding is in sidecar/idsearch/fold.py, the rule's judgements (searchable
IDs, the edge rule, `Mask`) in rule.py, the automaton and regex in backends.py.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from sidecar.idsearch.backends import BACKEND, AcPart, RegexPart
from sidecar.idsearch.fold import back, fold, folded
from sidecar.idsearch.rule import (
    Mask,
    pick,
    searchable,
    searchable_key,
)

__all__ = ["IdMatcher", "matcher_for"]

_SPACE = re.compile(r"\s")


class IdMatcher:
    """Search for a fixed set of IDs, by the rule above."""

    __slots__ = ("ids", "_keys", "_parts", "_delta_keys", "backend", "_clean", "_clean_chars", "_spaced")

    def __init__(self, ids: Iterable[str], *, backend: str | None = None) -> None:
        self.ids: frozenset[str] = frozenset()
        #: Folded ID -> the IDs that fold to it (usually one).
        self._keys: dict[str, tuple[str, ...]] = {}
        #: Whether an ID holds whitespace (then one could span a seam at a space).
        self._spaced = False
        self.backend = backend or BACKEND
        self._add(ids)
        self._parts = [self._part(self._keys)] if self._keys else []
        self._delta_keys: frozenset[str] = frozenset()
        # Texts known to hold no ID. Game text repeats a lot (field names, names,
        # descriptions across prompts); a set lookup is ~20x cheaper than a search.
        self._clean: set[str] = set()
        self._clean_chars = 0

    def _add(self, ids: Iterable[str]) -> set[str]:
        """Add the searchable `ids`; returns the folded keys that are new."""
        keys = self._keys
        known = self.ids
        new: set[str] = set()
        added: list[str] = []
        for ident in ids:
            key = ident.lower() if ident.isascii() else fold(ident)  # (fold's fast path, inlined: ~10k IDs)
            if not searchable_key(key) or ident in known:
                continue
            got = keys.get(key)
            if got is None:
                keys[key] = (ident,)
                new.add(key)
            elif ident not in got:
                keys[key] = tuple(sorted((*got, ident)))
            else:
                continue
            added.append(ident)
        if added:
            self.ids = known.union(added)
            self._spaced = self._spaced or _SPACE.search("".join(new)) is not None
        return new

    def _part(self, keys: Iterable[str]) -> AcPart | RegexPart:
        return AcPart(keys) if self.backend == "ac" else RegexPart(keys)

    def extended(self, more: Iterable[str]) -> IdMatcher:
        """A matcher for these IDs plus `more`, reusing this one's bulk when the
        addition is small (a rebuild of the whole set costs ~5 us per ID)."""
        more = [i for i in more if i not in self.ids and searchable(i)]
        if not more:
            return self
        out = IdMatcher((), backend=self.backend)
        out.ids = self.ids
        out._keys = dict(self._keys)
        out._spaced = self._spaced
        new = out._add(more)
        if not new:
            out._parts = list(self._parts)
            out._delta_keys = self._delta_keys
            return out
        delta = self._delta_keys | new
        if len(delta) > max(256, len(self._keys) // 8) or not self._parts:
            out._parts = [out._part(out._keys)]
            return out
        # parts[0] holds everything but the current delta (all of self's keys when no delta).
        out._parts = [self._parts[0], out._part(delta)]
        out._delta_keys = delta
        return out

    def _raw(self, folded: str) -> list[tuple[int, int]]:
        if len(self._parts) == 1:
            return self._parts[0].hits(folded)
        return [h for part in self._parts for h in part.hits(folded)]

    def clean(self, text: str) -> bool:
        """Whether `text` is known to hold no ID's text at all (a set lookup)."""
        return text in self._clean

    def spans(self, text: str, mask: Mask | None = None) -> list[tuple[int, int]]:
        """The occurrences in `text` by the rule: (start, end) in `text`, in order,
        without overlaps. `mask`: texts inside which an occurrence is none."""
        return [(start, end) for start, end, _ in self._found(text, mask)]

    def _found(self, text: str, mask: Mask | None) -> list[tuple[int, int, str]]:
        """`spans`, each with the folded ID found there."""
        if not self._parts or not text or text in self._clean:
            return []
        folded_text, starts, ends = folded(text)
        raw = self._raw(folded_text)
        if not raw:
            # Only a text with no ID's text at all is remembered: whether one is masked
            # depends on the caller's mask, and matchers are shared by ID set.
            self._clean_chars += len(text)
            if len(self._clean) >= _CLEAN_LIMIT or self._clean_chars > _CLEAN_CHARS:
                self._clean.clear()
                self._clean_chars = len(text)
            self._clean.add(text)
            return []
        if mask is not None:
            raw = [h for h in raw if not mask.covers(text, *back(h, starts, ends))]
        raw.sort(key=lambda h: (h[0], h[0] - h[1]))  # leftmost, then longest
        chosen = pick(folded_text, raw, None)
        if len(chosen) < len(raw):
            # A candidate left out may touch a letter only because that letter belongs to
            # a chosen occurrence ("/Game/AGoblinoid"): look again with those as neighbours.
            for _ in range(_MAX_PASSES):
                inside = {i for s, e in chosen for i in range(s, e)}
                again = pick(folded_text, raw, inside)
                if again == chosen:
                    break
                chosen = again
        out: list[tuple[int, int, str]] = []
        for hit in chosen:
            start, end = back(hit, starts, ends)
            if out and start < out[-1][1]:
                continue  # two IDs in one folded character ("ß" is "ss"): the first has it
            out.append((start, end, folded_text[hit[0] : hit[1]]))
        return out

    def first(self, text: str, mask: Mask | None = None) -> tuple[int, int] | None:
        """(start, end) of the first ID occurring in `text`, or None."""
        found = self.spans(text, mask)
        return found[0] if found else None

    def find_all(self, text: str, mask: Mask | None = None) -> list[str]:
        """The IDs occurring in `text`, leftmost-longest, without overlaps, in order
        (each as `text` spells it)."""
        return [text[s:e] for s, e in self.spans(text, mask)]

    def _engine_id(self, written: str, key: str) -> str:
        """The ID an occurrence written as `written` (folded: `key`) stands for: itself
        when it is one, else the first (sorted) of the IDs that fold to `key`."""
        if written in self.ids:
            return written
        return self._keys[key][0]

    def sub(self, text: str, replace: Callable[[str], str], mask: Mask | None = None) -> str:
        """`text` with every ID occurrence replaced by `replace(id)`, in one pass: the
        text a replacement writes is never searched again (the generic word "somewhere"
        is not the location whose ID is `somewhere`; the alias `npc_1` does not hold `pc_1`).

        Should a replacement glued to the text around it spell an ID across the seam
        (an ID `npc_12` after `pc_1` in "pc_12" became "npc_1" + "2"), a space goes in
        at that seam, so no ID is written either way."""
        hits = self._found(text, mask)
        if not hits:
            return text
        pieces: list[str] = []
        written: list[tuple[int, int]] = []  # where each replacement sits in the output
        pos = at = 0
        for start, end, key in hits:
            gap = text[pos:start]
            pieces.append(gap)
            at += len(gap)
            new = replace(self._engine_id(text[start:end], key))
            pieces.append(new)
            written.append((at, at + len(new)))
            at += len(new)
            pos = end
        pieces.append(text[pos:])
        out = "".join(pieces)
        if all(_apart(out, ws, we) for ws, we in written) and not self._spaced:
            return out  # every replacement stands between spaces: no ID can span a seam
        return self._unglued(out, written, mask)

    def _unglued(self, out: str, written: list[tuple[int, int]], mask: Mask | None) -> str:
        # The texts written are masked as the guard masks them (aliases and generic words
        # are in its mask): an ID's text inside one ("something", an ID too) would else
        # win the overlap and hide the ID it spells with the text after it ("thing_12"
        # in "something_12"), which the guard, masking the word, then finds.
        own = Mask({out[ws:we] for ws, we in written})
        mask = own if mask is None else mask.plus(own)
        for _ in range(_MAX_PASSES):
            seam = None
            for start, end in self.spans(out, mask):
                if any(ws <= start and end <= we for ws, we in written):
                    continue  # inside what the projection wrote (an alias holding an ID's text)
                for ws, we in written:
                    if start < ws < end:
                        seam = ws
                        break
                    if start < we < end:
                        seam = we
                        break
                if seam is not None:
                    break
            if seam is None:
                return out
            out = out[:seam] + " " + out[seam:]
            written = [(s + (s >= seam), e + (e > seam)) for s, e in written]
        return out


def _apart(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] has whitespace (or the text's edge) on both sides."""
    return (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())


#: Rounds of the edge rule's second look, and of the seam check after a replacement.
_MAX_PASSES = 4
#: Clean-text memo entries, and their characters, per matcher before it starts over
#: (the guard's texts are whole prompt messages).
_CLEAN_LIMIT = 100_000
_CLEAN_CHARS = 8_000_000

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
