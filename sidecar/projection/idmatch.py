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
"""

from __future__ import annotations

import re
import threading
import unicodedata
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
    "Mask",
    "fold",
    "invisible_only",
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

_SPACE = re.compile(r"\s")


def fold(text: str) -> str:
    """The form IDs are compared in: NFKC, case folded, invisible characters left out."""
    return _folded(text)[0]


def invisible_only(text: str) -> bool:
    """Whether `text` holds nothing visible (only whitespace and invisible characters)."""
    return not _INVISIBLE.sub("", text).strip()


#: A folded text and, when it is not the original character for character, where each
#: of its characters came from: (start, end) in the original per folded character.
_Folded: TypeAlias = tuple[str, list[int] | None, list[int] | None]


def _folded(text: str) -> _Folded:
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


def _fold_runs(text: str) -> _Folded:
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


def searchable(ident: str) -> bool:
    """Whether `ident` is distinctive enough to be searched for in text (judged folded)."""
    return _searchable_key(fold(ident))


def _searchable_key(key: str) -> bool:
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


class _AcPart:
    """All occurrences (overlapping too) of a set of folded IDs, by Aho-Corasick."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._a = _ac.Automaton()
        for key in keys:
            self._a.add_word(key, len(key))
        self._a.make_automaton()

    def hits(self, text: str) -> list[tuple[int, int]]:
        return [(last - length + 1, last + 1) for last, length in self._a.iter(text)]


class _RegexPart:
    """Occurrences of a set of folded IDs, by a trie-shaped regex: the longest at each
    place an occurrence starts (overlaps included, so both backends see the same)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._re = _compile(frozenset(keys))

    def hits(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.start() + len(m.group(1))) for m in self._re.finditer(text)]


class IdMatcher:
    """Search for a fixed set of IDs, by the rule above."""

    __slots__ = ("ids", "_keys", "_parts", "_delta_keys", "backend", "_clean", "_clean_chars", "_spaced")

    def __init__(self, ids: Iterable[str], *, backend: str | None = None) -> None:
        self.ids: frozenset[str] = frozenset()
        #: _Folded ID -> the IDs that fold to it (usually one).
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
            if not _searchable_key(key) or ident in known:
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

    def _part(self, keys: Iterable[str]) -> _AcPart | _RegexPart:
        return _AcPart(keys) if self.backend == "ac" else _RegexPart(keys)

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
        folded_text, starts, ends = _folded(text)
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
            raw = [h for h in raw if not mask.covers(text, *_back(h, starts, ends))]
        raw.sort(key=lambda h: (h[0], h[0] - h[1]))  # leftmost, then longest
        chosen = _pick(folded_text, raw, None)
        if len(chosen) < len(raw):
            # A candidate left out may touch a letter only because that letter belongs to
            # a chosen occurrence ("/Game/AGoblinoid"): look again with those as neighbours.
            for _ in range(_MAX_PASSES):
                inside = {i for s, e in chosen for i in range(s, e)}
                again = _pick(folded_text, raw, inside)
                if again == chosen:
                    break
                chosen = again
        out: list[tuple[int, int, str]] = []
        for hit in chosen:
            start, end = _back(hit, starts, ends)
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


def _back(hit: tuple[int, int], starts: list[int] | None, ends: list[int] | None) -> tuple[int, int]:
    """A span of the folded text as the span of the original it came from."""
    if starts is None or ends is None:
        return hit
    return starts[hit[0]], ends[hit[1] - 1]


def _pick(folded: str, raw: list[tuple[int, int]], inside: set[int] | None) -> list[tuple[int, int]]:
    """Leftmost-longest occurrences that obey the edge rule, without overlaps."""
    out: list[tuple[int, int]] = []
    taken_to = -1
    for start, end in raw:
        if start >= taken_to and _bounded(folded, start, end, inside):
            out.append((start, end))
            taken_to = end
    return out


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


_LETTER = "[^\\W\\d_]"


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
