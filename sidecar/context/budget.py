"""Budget and render: fit the selected parts into an exact token budget
(docs/context.md, Budget: tiers and shares) and lay them out stable-first.

Layout: one system message (system rules, identity, INVIOLABLE rules, story
texts, lore, setting, memory block), then the history (the actor's transcript
and the world events it perceived, append-only, so each turn extends the last
prefix), then one final user message, the volatile block (the line or narrated
event, waiting lore, scene, mood and reminder, recalled memories, notes, the input).

Budget: the core (system rules, identity, inviolable rules, mood, the line or
narrated event, notes, the input, the model's prompt format) always goes in whole, or
the prompt is refused with ContextWindowExceeded. Then the required parts in priority
order: the scene (scene, setting: seed 000), with all the budget left after the core and
the newest history item; then the story's texts (author's note, plot essentials,
instructions, story summary), capped with everything above at 70% of the budget. The
first part that does not fit is trimmed at its end (what was cut goes to left_out) and
every lower one is dropped. The remainder is the dynamic tier: 25% lore, 25% memory
(both in steps of 32 tokens; the recalled memories fill what the block leaves of the
memory share), and the history gets the rest (window.py chooses its items). Every count
is the model tokenizer's, and the finished messages are counted again as a whole; a
prompt over budget is never returned. docs/context.md has the why of each rule.

The layout as messages, the count of the whole and what is given up to fit it
exactly are in sidecar/context/fitted.py (`finish`, which `fit` ends with).
"""

from __future__ import annotations

from collections.abc import Callable

from sidecar.context.fitted import MEMORY_FULL, Fitted, finish
from sidecar.context.parts import Layout, Part
from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, fit_lines, trim_text
from sidecar.context.window import select
from sidecar.errors import ContextWindowExceeded

__all__ = ["fit", "REQUIRED_SHARE"]

REQUIRED_SHARE = 0.70
LORE_SHARE = 0.25
MEMORY_SHARE = 0.25
#: Lore and memory allowances are multiples of this (see fit).
ALLOWANCE_STEP = 32
HISTORY_SHARE = 0.50
HISTORY_SHARE_NO_MEMORY = 0.75
#: The scene (seed 000): before the story texts and the lore, and not held to the cap.
SCENE_PARTS = frozenset({"scene", "setting"})
#: A trimmed part smaller than this is not worth its header: it is dropped instead.
MIN_TRIM_TOKENS = 12
_CAPPED = f"the story's texts are capped at {int(REQUIRED_SHARE * 100)}% of the budget"
#: Share of the memory allowance the recall may take before the block takes the memories.
RECALL_HEAVY = 0.5


def _cost(count: Callable[[str], int], text: str) -> int:
    # +1: the separator that joins it to its neighbour in the message.
    return count(text) + 1 if text else 0


def fit(layout: Layout, budget: int, count: Callable[[str], int]) -> Fitted:
    parts = {p.name: p for p in [*layout.system, *layout.final]}
    overhead = 2 * MESSAGE_OVERHEAD + REPLY_PRIMING + layout.framing_tokens
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
    # The newest history item (the last event, or the last turn) is part of the scene:
    # its room is kept before the scene parts take theirs.
    newest = count(layout.history[-1].content) + MESSAGE_OVERHEAD if layout.history else 0
    cut = ""
    for name in layout.required_order:
        part = parts.get(name)
        if part is None or not part.body:
            continue
        p = part
        if cut:
            # A part is trimmed before a lower one is kept whole (docs/context.md, Budget).
            p.dropped, p.reason = True, f"a higher part ({cut}) was trimmed to fit"
            p.omitted = ("section", 1)
            continue
        if name in SCENE_PARTS:
            # The scene goes before the story's texts and is not held to the tier's cap.
            room, why = budget - used - newest, "the budget holds no more after the fixed part and the last event"
        else:
            room, why = int(budget * REQUIRED_SHARE) - used, _CAPPED
        _fit_required(p, room, count, why)
        if p.trimmed or p.dropped:
            cut = name
        used += p.tokens
    # Dynamic tier: the remainder. Lore and memory allowances move in steps, so a few
    # tokens more or less in the input do not reshuffle the blocks before the history;
    # what they leave unused goes to the history.
    dynamic = budget - used
    lore, memory, recall = parts.get("lore"), parts.get("memory"), parts.get("memory_recall")
    recall_heavy = False
    lore_allow = _step(dynamic * LORE_SHARE)
    lore_used = _fit_cards(lore, lore_allow, count) if lore is not None else 0
    deferred = parts.get("lore_new")
    if deferred is not None:
        lore_used += _fit_cards(deferred, lore_allow - lore_used, count)
    # What lore leaves goes to the history, not to the memory block: a bigger block before
    # the history would leave the history less room to grow, and the window would move
    # (re-caching it) more often.
    memory_allow = _step(dynamic * MEMORY_SHARE)
    memory_used = _fit_cards(memory, memory_allow, count) if memory is not None else 0
    if recall is not None:
        # The input's best memories the block does not hold fill the rest of the memory share.
        held = {k for k, _ in memory.body} if memory is not None and memory.text else set()
        wanted = [(key, text) for key, text in recall.body if key not in held]
        recall.body = [text for _, text in wanted]
        recall_used = _fit_ranked(recall, memory_allow - memory_used, count, MEMORY_FULL)
        memory_used += recall_used
        # Sent uncached every turn: past half the share, the engine has the block take them
        # instead (re-caching the history once rather than resending them each turn).
        recall_heavy = recall_used > memory_allow * RECALL_HEAVY
        recall.shown_keys = frozenset(k for k, _ in wanted[: recall.text.count("\n")])
    if memory is not None and memory.text:
        memory.shown_keys = frozenset(k for k, _ in memory.body)
    # History: what lore and memory leave (at least 50%, 75% without the memory bank).
    history_allow = dynamic - lore_used - memory_used
    own = int(dynamic * (HISTORY_SHARE if layout.memory_bank else HISTORY_SHARE_NO_MEMORY))
    window = select(layout.history, layout.sticky, history_allow, own, count, layout.asked, layout.leaving)
    fitted = finish(layout, window, parts, budget, count)
    fitted.window_moved = window.moved
    held = set(window.chosen)
    fitted.entered_left = any(pos not in held for pos in layout.entered_at)
    fitted.recall_heavy = recall_heavy
    fitted.has_history = bool(layout.history)
    return fitted


def _step(tokens: float) -> int:
    return int(tokens) // ALLOWANCE_STEP * ALLOWANCE_STEP


def _fit_required(p: Part, room: int, count: Callable[[str], int], why: str) -> None:
    """The part whole, else trimmed at its end (a line list by whole lines, lowest first;
    prose at a word boundary), else dropped; what was cut is in `p.omitted`."""
    full = p.full()
    cost = _cost(count, full)
    if cost <= room:
        p.text, p.tokens = full, cost
        return
    if room < MIN_TRIM_TOKENS:
        p.dropped, p.reason, p.text, p.tokens, p.omitted = True, why, "", 0, ("section", 1)
        return
    if p.mode == "lines":
        text, kept, intact = fit_lines(p.header, p.body, p.short, room - 1, count)
        if kept < len(p.body):
            p.reason = f"{why}: kept {kept} of {len(p.body)} lines"
            p.omitted = ("line", len(p.body) - kept)
        elif intact < len(p.body):
            # Every line kept; the lowest ones as their label alone (issue 31: the place's
            # name and who is present went while older events stayed).
            p.reason = f"{why}: {len(p.body) - intact} of {len(p.body)} lines shortened to their label"
            p.omitted = ("description", len(p.body) - intact)
    else:
        whole = "\n".join(p.body)
        body = trim_text(whole, room - 1 - count(p.header) - 1, count)
        text = f"{p.header}\n{body}" if body else ""
        cut = len(whole.split()) - len(body.removesuffix(" …").split())
        p.reason = f"{why}: cut at its end ({cut} words)"
        p.omitted = ("words", cut)
    if not text:
        p.dropped, p.reason, p.text, p.tokens, p.omitted = True, why, "", 0, ("section", 1)
        return
    p.trimmed, p.text, p.tokens = True, text, _cost(count, text)


def _fit_ranked(p: Part, allow: int, count: Callable[[str], int], why: str) -> int:
    """The best lines (`p.body`, best first) while they fit: counted one by one (each count
    is memoized per text), so a hundred candidates cost no count of their joined text."""
    if not p.body:
        return 0
    total, kept = _cost(count, p.header), 0
    for line in p.body:
        c = count(line) + 1
        if total + c > allow:
            break
        total, kept = total + c, kept + 1
    if not kept:
        p.dropped, p.reason, p.text, p.tokens = True, why, "", 0
        return 0
    if kept < len(p.body):
        p.trimmed, p.reason = True, f"{why}: kept {kept} of {len(p.body)}"
    p.text = "\n".join([p.header, *p.body[:kept]])
    p.tokens = total
    return total


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
    why = f"{p.name} share full"
    if len(kept) < len(p.body) and p.unit:
        p.omitted = (p.unit, len(p.body) - len(kept))
    if not kept:
        p.dropped, p.reason, p.text, p.tokens = True, why, "", 0
        return 0
    if len(kept) < len(p.body):
        p.trimmed, p.reason = True, f"{why}: kept {len(kept)} of {len(p.body)}"
    p.body = kept
    p.text = p.full()
    p.tokens = _cost(count, p.text)
    return p.tokens
