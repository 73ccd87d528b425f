"""Per-revision lookup tables the context engine needs beyond the projection's:
relations by entity, players, lore trigger words, memory words per actor.

Built once per session revision (keyed by the projection's SessionIndex object,
which is replaced on every revision), so selecting context for one prompt
touches only what is relevant, never all 10,000 entities or all memories.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable

from sidecar.projection.session_index import SessionIndex
from sidecar.state.model import LoreCard, Memory, Relation, Session

__all__ = ["ContextIndex", "LoreMatcher", "STOPWORDS", "context_index", "memory_key", "words"]

_WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its me my no not of on or our she "
    "so that the their them they this to was we were what when where who why will with you your".split()
)


@functools.lru_cache(maxsize=8192)
def words(text: str) -> tuple[str, ...]:
    """Lower-case word tokens (Unicode-aware), the unit of trigger and memory matching.
    Memoized: the same transcript lines are scanned for triggers turn after turn. 8,192
    texts (at 65,536 every new input filled it on: RSS grew all session, issue 31)."""
    return tuple(_WORD.findall(text.lower()))


def memory_key(mem: Memory) -> tuple[int, str]:
    """Identifies a memory across revisions and snapshots (the sticky memory block);
    sorts memories oldest first."""
    return (mem.revision, mem.text)


class LoreMatcher:
    """Trigger lookup over a set of cards, with the matches per text memoized
    (the same transcript lines are scanned turn after turn)."""

    __slots__ = ("by_word", "_memo")

    def __init__(self, cards: Iterable[LoreCard] = ()) -> None:
        #: First word of a trigger -> (card, the whole trigger as words).
        self.by_word: dict[str, list[tuple[LoreCard, tuple[str, ...]]]] = {}
        for card in cards:
            for trigger in card.triggers:
                tw = words(trigger)
                if tw:
                    self.by_word.setdefault(tw[0], []).append((card, tw))
        self._memo: dict[str, tuple[LoreCard, ...]] = {}

    def match(self, text: str) -> tuple[LoreCard, ...]:
        """Cards with a trigger in `text` (whole words; a phrase as consecutive words)."""
        hit = self._memo.get(text)
        if hit is not None:
            return hit
        tokens = words(text)
        joined = ""
        found: dict[str, LoreCard] = {}
        for w in set(tokens):
            for card, trigger in self.by_word.get(w, ()):
                if card.id in found:
                    continue
                if len(trigger) > 1:
                    joined = joined or " " + " ".join(tokens) + " "
                    if " " + " ".join(trigger) + " " not in joined:
                        continue
                found[card.id] = card
        result = tuple(found.values())
        if len(self._memo) > 16_384:
            self._memo.clear()
        self._memo[text] = result
        return result


class ContextIndex:
    """Tables for one revision. Each part is rebuilt only when what it indexes
    changed (same objects = same table), so a delta that moves one entity does
    not re-index 4,000 memories and lore cards: the first prompt after a delta
    stays cheap."""

    __slots__ = (
        "base",
        "relations_by_entity",
        "player_ids",
        "lore",
        "_lore_fp",
        "_rel_fp",
        "_memories",
        "_mem_fp",
        "_by_actor",
        "_world_memories",
    )
    base: SessionIndex
    #: Engine ID -> relations it takes part in, in world order.
    relations_by_entity: dict[str, list[Relation]]
    player_ids: list[str]
    lore: LoreMatcher
    _rel_fp: tuple[int, ...]
    _lore_fp: tuple[int, ...]
    _mem_fp: tuple[int, ...]
    _by_actor: dict[str, list[Memory]] | None
    _memories: dict[str, _MemoryIndex]
    _world_memories: list[Memory]

    def __init__(self, session: Session, base: SessionIndex, previous: ContextIndex | None = None) -> None:
        self.base = base
        world = session.world
        rel_fp = tuple(map(id, world.relations))
        if previous is not None and previous._rel_fp == rel_fp:
            self.relations_by_entity = previous.relations_by_entity
        else:
            self.relations_by_entity = {}
            for rel in world.relations:
                self.relations_by_entity.setdefault(rel.source_id, []).append(rel)
                if rel.target_id != rel.source_id:
                    self.relations_by_entity.setdefault(rel.target_id, []).append(rel)
        self._rel_fp = rel_fp
        self.player_ids = [eid for eid, e in world.entities.items() if e.kind == "player"]
        lore_fp = tuple(map(id, world.lore.values()))
        if previous is not None and previous._lore_fp == lore_fp:
            self.lore = previous.lore
        else:
            self.lore = LoreMatcher(world.lore.values())
        self._lore_fp = lore_fp
        self._mem_fp = tuple(map(id, world.memories))
        self._by_actor = None
        # Per-actor memory indexes survive revisions while the memories are the same objects.
        self._memories = {}
        if previous is not None and previous._mem_fp == self._mem_fp:
            self._by_actor = previous._by_actor
            self._memories = previous._memories
        self._world_memories = world.memories

    def memories(self, actor_id: str) -> _MemoryIndex | None:
        """The actor's memory index, built on first use."""
        index = self._memories.get(actor_id)
        if index is not None:
            return index
        if self._by_actor is None:
            by_actor: dict[str, list[Memory]] = {}
            for mem in self._world_memories:
                by_actor.setdefault(mem.actor_id, []).append(mem)
            self._by_actor = by_actor
        mems = self._by_actor.get(actor_id)
        if not mems:
            return None
        index = self._memories[actor_id] = _MemoryIndex(mems)
        return index


class _MemoryIndex:
    """An inverted index over one actor's memories, with idf weights."""

    __slots__ = ("memories", "postings", "idf", "_by_key")

    def __init__(self, memories: list[Memory]) -> None:
        self.memories = memories
        self.postings: dict[str, list[int]] = {}
        for i, mem in enumerate(memories):
            for w in set(words(mem.text)) - STOPWORDS:
                self.postings.setdefault(w, []).append(i)
        n = len(memories)
        self.idf = {w: math.log(1 + n / len(p)) for w, p in self.postings.items()}
        self._by_key: dict[tuple[int, str], Memory] | None = None

    def by_key(self) -> dict[tuple[int, str], Memory]:
        """Memories by (revision, text): the key the sticky memory block keeps."""
        if self._by_key is None:
            self._by_key = {memory_key(m): m for m in self.memories}
        return self._by_key

    def rank(self, query: str, limit: int) -> tuple[list[tuple[float, Memory]], int]:
        """The `limit` memories sharing most with `query`, most relevant first (ties: newest
        first), and how many share a word with it in all."""
        scores: dict[int, float] = {}
        for w in set(words(query)) - STOPWORDS:
            posting = self.postings.get(w)
            if posting is None:
                continue
            weight = self.idf[w]
            for i in posting:
                scores[i] = scores.get(i, 0.0) + weight
        mems = self.memories
        # Plain tuples sort in C: a key function per candidate cost more than the rest of the rank.
        keyed = [(-score, -mems[i].revision, -i) for i, score in scores.items()]
        ranked = heapq.nsmallest(limit, keyed) if limit < len(keyed) // 4 else sorted(keyed)[:limit]
        return [(-score, mems[-i]) for score, _, i in ranked], len(scores)


_lock = threading.Lock()
# Entries hold their SessionIndex (ContextIndex.base), so an id is never reused while cached.
_cache: OrderedDict[int, ContextIndex] = OrderedDict()
#: Session object id -> its newest index, the base for reusing unchanged tables.
_latest: OrderedDict[int, ContextIndex] = OrderedDict()


def context_index(session: Session, base: SessionIndex) -> ContextIndex:
    key = id(base)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit.base is base:
            _cache.move_to_end(key)
            return hit
        previous = _latest.get(id(session))
    built = ContextIndex(session, base, previous if previous is not None and previous.base.session is session else None)
    with _lock:
        _cache[key] = built
        _latest[id(session)] = built
        while len(_cache) > 64:
            _cache.popitem(last=False)
        while len(_latest) > 256:
            _latest.popitem(last=False)
    return built
