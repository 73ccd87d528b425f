"""What one prompt is made of before the budget: the Parts and the Layout.

`layout.build_layout` selects and renders the context into a Layout (system
parts, the history, the volatile final parts, in render order); `budget.fit`
then fits it into the token budget. The types live here, apart from both, so
neither module reaches into the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sidecar.context.contract import LeftOut
from sidecar.context.window import HistoryItem, Selection


class Entered(NamedTuple):
    """Lore cards that entered the history with a dialogue line: the volatile block
    that sent them opened with the line, so the history renders the line's entry as
    line + lore text and that prefix is cached from the next turn on (docs/context.md,
    Lore cards)."""

    #: Index of the line's transcript entry.
    entry: int
    #: The line as sent (the entry must still render so, or the cards wait again).
    said: str
    #: The `## Lore` text sent after it.
    text: str
    cards: frozenset[str]


@dataclass
class Part:
    name: str
    #: "system" or "final" (the volatile user message).
    place: str
    #: Reported tier: "required", "dynamic" or "volatile".
    tier: str
    header: str
    #: Lines (mode "lines"), one paragraph (mode "text"), cards or memories as (key, text) (mode "cards").
    body: list[Any] = field(default_factory=list)
    #: "core" | "text" | "lines" | "cards".
    mode: str = "core"
    text: str = ""
    tokens: int = 0
    trimmed: bool = False
    dropped: bool = False
    reason: str = ""
    #: What budgeting left out of it: (kind, count), e.g. ("lore_card", 2).
    omitted: tuple[str, int] | None = None
    #: Mode "cards": what one card is, for the left-out report ("" = not reported here).
    unit: str = ""
    #: Mode "cards": what joins two cards.
    sep: str = "\n\n"
    #: Keys of the entries the prompt holds (memory parts).
    shown_keys: frozenset[tuple[int, str]] = frozenset()
    #: Mode "lines": each body line's short form (its label, no description), what the
    #: budget keeps before it drops a line ([] = the lines have none).
    short: list[str] = field(default_factory=list)

    def full(self) -> str:
        if self.mode == "cards":
            return self.header + "\n" + self.sep.join(t for _, t in sorted(self.body, key=lambda kv: kv[0]))
        return self.header + ("\n" if self.header else "") + "\n".join(self.body)


@dataclass
class Layout:
    """Everything selected for one prompt, in render order."""

    system: list[Part]
    history: list[HistoryItem]
    final: list[Part]
    #: Names of the required trimmable parts, highest priority first.
    required_order: list[str]
    memory_bank: bool
    #: The history items the actor's previous prompt held (None: no previous prompt).
    sticky: Selection | None = None
    #: Engine IDs the input is about: history items involving them rank first.
    asked: frozenset[str] = frozenset()
    #: Events numbered below this leave past the session's events cap within the next
    #: few events: a new window leaves them out (window.select).
    leaving: int = 0
    #: Tokens the serving model's prompt format sends beyond the messages (counted as fixed).
    framing_tokens: int = 0
    #: What selection left out before the budget (characters past the cap...).
    left_out: list[LeftOut] = field(default_factory=list)
    #: New lore cards were kept out of the lore block before the history.
    deferred: bool = False
    #: Keys of the memories relevant to the input (left out when in neither memory part).
    memory_matches: list[tuple[int, str]] = field(default_factory=list)
    #: Memories matching the input beyond those ranked (left out: more than the share can hold).
    memory_unranked: int = 0
    #: Lore that entered the history with an earlier line and is in `history` with it.
    entered: tuple[Entered, ...] = ()
    #: Where each of `entered` is in `history`.
    entered_at: tuple[int, ...] = ()
    #: This turn's dialogue line (or narrated event) as the volatile block opens with it ("" for other inputs).
    said: str = ""
