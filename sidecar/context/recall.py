"""Recall: the lore cards and memories one input brings up (docs/context.md,
Lore and Memory bank), ranked so the blocks before the history change as little
as possible from one prompt to the next (prefix caching).
"""

from __future__ import annotations

from sidecar.context.context_index import ContextIndex, LoreMatcher, memory_key, words
from sidecar.projection import Projection
from sidecar.state.model import LoreCard, Memory

__all__ = ["LORE_STICKY", "MAX_MEMORIES", "rank_lore", "rank_memories"]

#: Matching memories ranked at most (the memory share decides how many go in).
MAX_MEMORIES = 256
#: A card stays while it matched within this many trigger windows (see rank_lore).
LORE_STICKY = 4


def rank_lore(
    cidx: ContextIndex,
    proj: Projection,
    actions: list[str],
    window: int,
    previous: frozenset[str] = frozenset(),
    extra: LoreMatcher | None = None,
) -> list[LoreCard]:
    """Cards whose triggers occur in the last `window` actions (`actions` is newest
    first), ranked by recency and frequency of their matches.

    Hysteresis for prompt caching: a card the actor's previous prompt held stays
    eligible while it matched within the last LORE_STICKY x `window` actions, and
    ranks first, so the lore block (which sits before the history) does not
    change every time a trigger word scrolls out of the short window."""
    matchers = [m for m in (cidx.lore, extra) if m is not None and m.by_word]
    if not matchers or not actions:
        return []
    scores: dict[str, float] = {}
    recent: set[str] = set()
    cards: dict[str, LoreCard] = {}
    span = actions[: window * LORE_STICKY] if previous else actions[:window]
    for rank, text in enumerate(span):
        for matcher in matchers:
            for card in matcher.match(text):
                cards[card.id] = card
                # Every match counts (frequency), newer matches count more (recency).
                scores[card.id] = scores.get(card.id, 0.0) + 1.0 / (1 + rank)
                if rank < window:
                    recent.add(card.id)
    eligible = [c for c in scores if c in recent or c in previous]
    ranked = sorted(eligible, key=lambda c: (c not in previous, -scores[c], c))
    return [cards[c] for c in ranked if proj.can_see_card(cards[c])]


def rank_memories(
    cidx: ContextIndex,
    actor_id: str,
    query: str,
    recent_words: frozenset[str],
    previous: frozenset[tuple[int, str]],
    grow: bool = True,
    limit: int = MAX_MEMORIES,
) -> tuple[list[Memory], list[Memory], int]:
    """The memory bank for one prompt: (block, matches, how many match in all).

    `matches`: the memories sharing a word with the input, most relevant first
    (docs/context.md, Memory bank: relevance to the latest input). `block`: the candidates for the
    memory block, in fill order: the actor's previous block first, each while it
    still shares a word with the recent actions, then (when `grow`) the matches.
    The block sits before the history, so keeping what it held keeps the prefix
    (the volatile block recalls the input's best that it lacks: budget.py)."""
    index = cidx.memories(actor_id)
    if index is None:
        return [], [], 0
    ranked, total = index.rank(query, min(limit, MAX_MEMORIES))
    matches = [mem for _, mem in ranked]
    kept = []
    for key in sorted(previous):
        mem = index.by_key().get(key)
        if mem is not None and recent_words.intersection(words(mem.text)):
            kept.append(mem)
    if not grow:
        return kept, matches, total
    held = {memory_key(m) for m in kept}
    return kept + [m for m in matches if memory_key(m) not in held], matches, total
