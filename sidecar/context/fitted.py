"""The finished prompt (`Fitted`) and its finishing: the parts `budget.fit` sized,
laid out as messages (stable first, docs/context.md), counted again as a whole,
and content given up, least important first, until the whole request fits; then
what was left out, and why.

Kept apart from sidecar/context/budget.py, which decides how many tokens each
part may have; this only lays out and checks what it decided. A prompt over
budget is never returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from sidecar.context.contract import LeftOut, Prompt, PromptSection
from sidecar.context.parts import Layout, Part
from sidecar.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING
from sidecar.context.window import Selection, Window
from sidecar.errors import ContextWindowExceeded

__all__ = ["Entering", "FIT_EXACTLY", "FRAMING", "Fitted", "MEMORY_FULL", "SEP", "finish"]

#: Section name of what the model's prompt format adds (not in any message).
FRAMING = "model_format"
SEP = "\n\n"
MEMORY_FULL = "memory share full"
FIT_EXACTLY = "dropped to fit the budget exactly"


@dataclass
class Fitted:
    prompt: Prompt
    #: The history items the prompt holds (the next prompt extends it while it fits).
    history: Selection
    #: Keys of the lore cards the prompt holds.
    lore_keys: frozenset[str] = frozenset()
    #: Keys of the memories in the memory block.
    memory_keys: frozenset[tuple[int, str]] = frozenset()
    #: The history window did not start where the previous prompt's did.
    window_moved: bool = False
    #: Lore cards wait outside the lore block (see layout.build_layout).
    deferred: bool = False
    #: A line that lore entered the history with is no longer in the window.
    entered_left: bool = False
    has_history: bool = False
    #: The recalled memories (volatile) take more than RECALL_HEAVY of the memory share.
    recall_heavy: bool = False
    #: The waiting lore the volatile block sent after its opening line, if any.
    entering: Entering | None = None


class Entering(NamedTuple):
    """The waiting lore that followed the volatile block's opening line (parts.Entered without the line)."""

    text: str
    cards: frozenset[str]


def finish(layout: Layout, window: Window, parts: dict[str, Part], budget: int, count: Callable[[str], int]) -> Fitted:
    while True:
        messages, sections = _render(layout, window, parts)
        # Each message counted whole; the history's were counted once (Window.costs).
        outer = messages[0]["content"], messages[-1]["content"]
        total = sum(map(count, outer)) + 2 * MESSAGE_OVERHEAD + REPLY_PRIMING + layout.framing_tokens
        total += window.tokens
        if total <= budget:
            return _fitted(layout, window, parts, Prompt(messages, sections, budget, total, []))
        # Tokenization across joins can differ from the parts' sum: give up the
        # least important content until the whole request fits.
        if window.drop_oldest():
            continue
        for name in ["memory_recall", "lore_new", "memory", "lore", *reversed(layout.required_order)]:
            p = parts.get(name)
            if p is not None and p.text:
                p.text, p.tokens, p.dropped, p.reason = "", 0, True, FIT_EXACTLY
                p.shown_keys = frozenset()
                if p.unit:
                    # The body is what the share kept; add what it had left out already.
                    p.omitted = (p.unit, len(p.body) + (p.omitted[1] if p.omitted else 0))
                elif name in layout.required_order:
                    p.omitted = ("section", 1)
                break
        else:
            raise ContextWindowExceeded(
                f"the prompt needs {total} tokens, over the budget of {budget}",
                metadata={"required_tokens": str(total), "budget_tokens": str(budget)},
            )


def _fitted(layout: Layout, window: Window, parts: dict[str, Part], prompt: Prompt) -> Fitted:
    lore = parts.get("lore")
    keys = frozenset(k for k, _ in lore.body) if lore is not None and lore.text else frozenset()
    left_out = [*layout.left_out, *window.left_out()]
    for part in parts.values():
        if part.omitted and part.omitted[1]:
            left_out.append(LeftOut(part.name, *part.omitted, part.reason or "share full"))
    left_out.extend(_memories_left_out(layout, parts))
    prompt.left_out = left_out
    memory = parts.get("memory")
    held = memory.shown_keys if memory is not None and memory.text else frozenset()
    waiting = parts.get("lore_new")
    entering = None
    if waiting is not None and waiting.text:
        entering = Entering(waiting.text, frozenset(k for k, _ in waiting.body))
    return Fitted(prompt, window.selection(), keys, held, deferred=layout.deferred, entering=entering)


def _memories_left_out(layout: Layout, parts: dict[str, Part]) -> list[LeftOut]:
    """The memories relevant to the input that neither memory part holds, and why."""
    shown = frozenset().union(*(p.shown_keys for p in parts.values() if p.text))
    missing = len(layout.memory_matches) - sum(map(shown.__contains__, layout.memory_matches))
    out = []
    if missing:
        exact = any(p.reason == FIT_EXACTLY for p in (parts.get("memory"), parts.get("memory_recall")) if p)
        why = FIT_EXACTLY if exact else MEMORY_FULL
        out.append(LeftOut("memory", "memory", missing, f"relevant to the input; {why}"))
    if layout.memory_unranked:
        out.append(
            LeftOut(
                "memory",
                "memory",
                layout.memory_unranked,
                f"relevant to the input; past the {len(layout.memory_matches)} best matches ranked",
            )
        )
    return out


Rendered = tuple[list[dict[str, str]], list[PromptSection]]


def _render(layout: Layout, window: Window, parts: dict[str, Part]) -> Rendered:
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
    if layout.framing_tokens:
        # Sent right after the system message by the model's own format (the local model's example).
        sections.append(
            PromptSection(FRAMING, layout.framing_tokens, 0, "required", reason="added by the model's prompt format")
        )
    shown = window.shown()
    dropped = len(window.items) - len(shown)
    if shown or dropped:
        reason = f"{dropped} entries or events left out (history share full)" if dropped else ""
        sections.append(
            PromptSection(
                "history",
                window.tokens,
                len(messages),
                "dynamic",
                trimmed=bool(dropped and shown),
                dropped=not shown,
                reason=reason,
            )
        )
    messages += [{"role": h.role, "content": h.content} for h in shown]
    emit(layout.final, "user")
    return messages, sections
