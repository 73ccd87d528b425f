"""Budget and render: fit the selected parts into an exact token budget
(CONTEXT.md tiers and shares) and lay them out stable-first.

Layout: one system message (system rules, identity, INVIOLABLE rules, story
texts, lore), then the actor's history as alternating user/assistant messages
(append-only, so each turn extends the last prefix), then one final user
message, the volatile block (scene, mood and reminder, recent events,
memories, notes, the input).

Budget: the core (system rules, identity, inviolable rules, mood, the last
event, notes, the input) always goes in whole, or the prompt is refused with
ContextWindowExceeded. The required tier is capped at 70% of the budget: the
trimmable required parts (author's note, plot essentials, instructions, story
summary, then the scene and earlier events) are added in that order, each
trimmed at its end when it does not fit; lower ones are dropped. The remainder
is the dynamic tier: 25% lore, 50% history (75% without the memory bank), 25%
memory; unused share flows to the next, and whatever memory leaves flows back
to history. Every count is the model tokenizer's, and the finished messages
are counted again as a whole; a prompt over budget is never returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sidecar.context.api import Prompt, PromptSection
from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, messages_tokens, trim_lines, trim_text
from sidecar.errors import ContextWindowExceeded

__all__ = ["Part", "HistoryItem", "Layout", "fit", "REQUIRED_SHARE"]

REQUIRED_SHARE = 0.70
LORE_SHARE = 0.25
HISTORY_SHARE = 0.50
HISTORY_SHARE_NO_MEMORY = 0.75
#: A trimmed part smaller than this is not worth its header: it is dropped instead.
MIN_TRIM_TOKENS = 12
#: After the history window must move, it is cut to this share of its allowance,
#: so the following turns append to an unchanged prefix instead of sliding every turn.
HISTORY_REFILL = 0.6
SEP = "\n\n"


@dataclass
class Part:
    name: str
    #: "system" or "final" (the volatile user message).
    place: str
    #: Reported tier: "required", "dynamic" or "volatile".
    tier: str
    header: str
    #: Lines (mode "lines"/"memory"), one paragraph (mode "text"), cards as (key, text) (mode "cards").
    body: list = field(default_factory=list)
    #: "core" | "text" | "lines" | "cards" | "memory".
    mode: str = "core"
    text: str = ""
    tokens: int = 0
    trimmed: bool = False
    dropped: bool = False
    reason: str = ""

    def full(self) -> str:
        if self.mode == "cards":
            return self.header + "\n" + "\n\n".join(t for _, t in sorted(self.body, key=lambda kv: kv[0]))
        return self.header + ("\n" if self.header else "") + "\n".join(self.body)


@dataclass
class HistoryItem:
    role: str
    content: str


@dataclass
class Layout:
    """Everything selected for one prompt, in render order."""

    system: list[Part]
    history: list[HistoryItem]
    final: list[Part]
    #: Names of the required trimmable parts, highest priority first.
    required_order: list[str]
    memory_bank: bool
    #: Index into `history` of the previous window's first entry (None: no previous window).
    sticky_start: int | None = None


@dataclass
class Fitted:
    prompt: Prompt
    history_start: int
    #: Keys of the lore cards the prompt holds.
    lore_keys: frozenset[str] = frozenset()


def _cost(count: Callable[[str], int], text: str) -> int:
    # +1: the separator that joins it to its neighbour in the message.
    return count(text) + 1 if text else 0


def fit(layout: Layout, budget: int, count: Callable[[str], int]) -> Fitted:
    parts = {p.name: p for p in [*layout.system, *layout.final]}
    overhead = 2 * MESSAGE_OVERHEAD + REPLY_PRIMING
    core = [p for p in parts.values() if p.mode == "core"]
    used = overhead
    for p in core:
        p.text = p.full() if p.body else ""
        p.tokens = _cost(count, p.text)
        used += p.tokens
    if used > budget:
        raise ContextWindowExceeded(
            f"the prompt's fixed part (system rules, persona, input) needs {used} tokens, over the budget of {budget}",
            metadata={"required_tokens": str(used), "budget_tokens": str(budget)},
        )
    # Required tier: capped at 70% of the budget.
    room = int(budget * REQUIRED_SHARE) - used
    full_tier = False
    for name in layout.required_order:
        part = parts.get(name)
        if part is None or not part.body:
            continue
        p = part
        if full_tier:
            # Once one part had to be cut, every lower one is dropped (CONTEXT.md).
            p.dropped, p.reason = True, f"required tier is capped at {int(REQUIRED_SHARE * 100)}% of the budget"
            continue
        _fit_required(p, room, count)
        full_tier = p.trimmed or p.dropped
        room -= p.tokens
        used += p.tokens
    # Dynamic tier: the remainder.
    dynamic = budget - used
    lore, memory = parts.get("lore"), parts.get("memory")
    lore_allow = int(dynamic * LORE_SHARE)
    lore_used = _fit_cards(lore, lore_allow, count) if lore is not None else 0
    share = HISTORY_SHARE if layout.memory_bank else HISTORY_SHARE_NO_MEMORY
    history_allow = int(dynamic * share) + (lore_allow - lore_used)
    start = _history_window(layout, history_allow, count, hard_limit=dynamic - lore_used)
    history_used = sum(count(h.content) + MESSAGE_OVERHEAD for h in layout.history[start:])
    memory_used = 0
    if memory is not None:
        memory_used = _fit_lines(memory, max(0, dynamic - lore_used - history_used), count, "memory share full")
    # What memory left over flows back to history (older entries), when the window can grow.
    spare = dynamic - lore_used - history_used - memory_used
    if start > 0 and layout.sticky_start is None:
        while start > 0 and count(layout.history[start - 1].content) + MESSAGE_OVERHEAD <= spare:
            start -= 1
            spare -= count(layout.history[start].content) + MESSAGE_OVERHEAD
    return _finish(layout, parts, start, budget, count)


def _fit_required(p: Part, room: int, count: Callable[[str], int]) -> None:
    full = p.full()
    cost = _cost(count, full)
    if cost <= room:
        p.text, p.tokens = full, cost
        return
    why = f"required tier is capped at {int(REQUIRED_SHARE * 100)}% of the budget"
    if room < MIN_TRIM_TOKENS:
        p.dropped, p.reason, p.text, p.tokens = True, why, "", 0
        return
    if p.mode == "lines":
        text, kept = trim_lines(p.header, p.body, room - 1, count)
        if kept and kept < len(p.body):
            p.reason = f"{why}: kept {kept} of {len(p.body)} lines"
    else:
        body = trim_text("\n".join(p.body), room - 1 - count(p.header) - 1, count)
        text = f"{p.header}\n{body}" if body else ""
        p.reason = f"{why}: cut at its end"
    if not text:
        p.dropped, p.reason, p.text, p.tokens = True, why, "", 0
        return
    p.trimmed, p.text, p.tokens = True, text, _cost(count, text)


def _fit_lines(p: Part, allow: int, count: Callable[[str], int], why: str) -> int:
    if not p.body:
        return 0
    full = p.full()
    cost = _cost(count, full)
    if cost <= allow:
        p.text, p.tokens = full, cost
        return cost
    text, kept = trim_lines(p.header, p.body, allow - 1, count) if allow > MIN_TRIM_TOKENS else ("", 0)
    if not kept:
        p.dropped, p.reason, p.text, p.tokens = True, why, "", 0
        return 0
    p.trimmed, p.reason = True, f"{why}: kept {kept} of {len(p.body)}"
    p.text, p.tokens = text, _cost(count, text)
    return p.tokens


def _fit_cards(p: Part, allow: int, count: Callable[[str], int]) -> int:
    """Cards in rank order while they fit; rendered in key order for a stable prefix."""
    if not p.body:
        return 0
    total = count(p.header) + 1
    kept: list[tuple[str, str]] = []
    for key, text in p.body:
        c = count(text) + 2
        if total + c <= allow:
            kept.append((key, text))
            total += c
    if not kept:
        p.dropped, p.reason, p.text, p.tokens = True, "lore share full", "", 0
        return 0
    if len(kept) < len(p.body):
        p.trimmed, p.reason = True, f"lore share full: kept {len(kept)} of {len(p.body)} triggered cards"
    p.body = kept
    p.text = p.full()
    p.tokens = _cost(count, p.text)
    return p.tokens


def _history_window(layout: Layout, allow: int, count: Callable[[str], int], hard_limit: int) -> int:
    """First history index to include: the newest entry always (when it fits at all),
    the previous window's start while everything since still fits, else a new
    start that leaves room to grow."""
    items = layout.history
    n = len(items)
    if n == 0:
        return 0
    costs = [0] * n

    def cost(i: int) -> int:
        if not costs[i]:
            costs[i] = count(items[i].content) + MESSAGE_OVERHEAD
        return costs[i]

    sticky = layout.sticky_start
    if sticky is not None and 0 <= sticky < n:
        total = sum(cost(i) for i in range(sticky, n))
        if total <= allow:
            return sticky
        target = int(allow * HISTORY_REFILL)
    else:
        target = allow
    start, total = n, 0
    while start > 0 and total + cost(start - 1) <= target:
        start -= 1
        total += cost(start)
    if start == n and cost(n - 1) <= hard_limit:
        start = n - 1  # the newest entry always goes in when the dynamic tier can hold it
    # Begin on a user turn: some chat templates refuse an assistant turn first.
    while start < n - 1 and items[start].role == "assistant":
        start += 1
    return start


def _finish(layout: Layout, parts: dict[str, Part], start: int, budget: int, count: Callable[[str], int]) -> Fitted:
    while True:
        messages, sections = _render(layout, parts, start, count)
        total = messages_tokens(messages, count)
        if total <= budget:
            lore = parts.get("lore")
            keys = frozenset(k for k, _ in lore.body) if lore is not None and lore.text else frozenset()
            return Fitted(Prompt(messages, sections, budget, total), start, keys)
        # Tokenization across joins can differ from the parts' sum: give up the
        # least important content until the whole request fits.
        if start < len(layout.history):
            start += 1
            continue
        for name in ["memory", "lore", *reversed(layout.required_order)]:
            p = parts.get(name)
            if p is not None and p.text:
                p.text, p.tokens, p.dropped, p.reason = "", 0, True, "dropped to fit the budget exactly"
                break
        else:
            raise ContextWindowExceeded(
                f"the prompt needs {total} tokens, over the budget of {budget}",
                metadata={"required_tokens": str(total), "budget_tokens": str(budget)},
            )


def _render(
    layout: Layout, parts: dict[str, Part], start: int, count: Callable[[str], int]
) -> tuple[list[dict[str, str]], list[PromptSection]]:
    sections: list[PromptSection] = []
    messages: list[dict[str, str]] = []

    def emit(group: list[Part], role: str) -> None:
        index = len(messages)
        texts = []
        for p in group:
            if p.text:
                texts.append(p.text)
            if p.text or p.dropped or p.trimmed:
                sections.append(PromptSection(p.name, p.tokens, index, p.tier, p.trimmed, p.dropped, p.reason))
        messages.append({"role": role, "content": SEP.join(texts)})

    emit(layout.system, "system")
    shown = layout.history[start:]
    dropped = start
    if shown or dropped:
        reason = f"{dropped} older entries left out (history share full)" if dropped else ""
        sections.append(
            PromptSection(
                "history",
                sum(count(h.content) + MESSAGE_OVERHEAD for h in shown),
                len(messages),
                "dynamic",
                trimmed=bool(dropped and shown),
                dropped=not shown,
                reason=reason,
            )
        )
    messages.extend({"role": h.role, "content": h.content} for h in shown)
    emit(layout.final, "user")
    return messages, sections
