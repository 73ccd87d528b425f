"""The history window: which part of the timeline (sidecar/context/timeline.py) a
prompt holds. Newest first; where the previous prompt's window started while all
since still fits (so each turn extends the cached prefix); a new window starts
with room to grow. Background events go first when the whole does not fit.
docs/context.md ("History window") has the why.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, countOf

from sidecar.context.contract import LeftOut
from sidecar.context.tokens import MESSAGE_OVERHEAD

__all__ = ["HISTORY_REFILL", "HistoryItem", "Window", "window_start"]

#: A window that must start anew is cut to this share of the history's own share,
#: so the following turns append to an unchanged prefix instead of sliding every turn.
HISTORY_REFILL = 0.6


@dataclass
class HistoryItem:
    role: str
    content: str
    #: "transcript" (the actor's own entries) or "event" (a world event it perceived).
    kind: str = "transcript"
    #: False for a background event: the first left out when the history share is full.
    relevant: bool = True


@dataclass
class Window:
    """The history the window slides over: the whole timeline, or only its relevant
    items when the whole does not fit the share (background events go first)."""

    items: list[HistoryItem]
    #: Tokens of each item as a message (content + MESSAGE_OVERHEAD), counted once per
    #: prompt, from the newest back to the first past the history's allowance (`_costs`).
    costs: list[int]
    #: Index in `layout.history` of each item.
    origin: list[int]
    #: The previous window's start, as an index into `items`.
    sticky: int | None
    #: Background events set aside.
    background: int
    #: len(layout.history).
    size: int

    @classmethod
    def of(cls, items: list[HistoryItem], sticky: int | None, allow: int, count: Callable[[str], int]) -> Window:
        costs = _costs(items, allow, count)
        if sum(costs) <= allow or all(map(_relevant, items)):
            return cls(items, costs, list(range(len(items))), sticky, 0, len(items))
        origin = list(compress(range(len(items)), map(_relevant, items)))
        if sticky is not None:
            sticky = bisect.bisect_left(origin, sticky)
        kept = list(map(items.__getitem__, origin))
        return cls(kept, _costs(kept, allow, count), origin, sticky, len(items) - len(origin), len(items))

    def start_in_layout(self, start: int) -> int:
        """`start` as an index into layout.history (the sticky state is kept in those)."""
        return self.origin[start] if start < len(self.origin) else self.size

    def left_out(self, start: int) -> list[LeftOut]:
        events = countOf(map(_kind, self.items[:start]), "event")  # the rest are transcript entries
        out = []
        for n, label in ((start - events, "transcript_entry"), (events, "world_event")):
            if n:
                out.append(LeftOut("history", label, n, "older than what the history share holds"))
        if self.background:
            out.append(
                LeftOut(
                    "history",
                    "world_event",
                    self.background,
                    "background (involves neither the actor nor a player, elsewhere): history share full",
                )
            )
        return out


_relevant = attrgetter("relevant")
_kind = attrgetter("kind")


def _costs(items: list[HistoryItem], allow: int, count: Callable[[str], int]) -> list[int]:
    """Each item's tokens as a message, counted from the newest back to the first one
    past `allow`: no window reaches further (`window_start` stops there, and a previous
    start beyond it no longer fits), so the older ones are never read and stay 0. A
    long session's prompt costs what its window holds, not its whole transcript."""
    costs = [0] * len(items)
    total = 0
    for i in range(len(items) - 1, -1, -1):
        costs[i] = count(items[i].content) + MESSAGE_OVERHEAD
        total += costs[i]
        if total > allow:
            break
    return costs


def window_start(items: list[HistoryItem], costs: list[int], sticky: int | None, allow: int, share: int) -> int:
    """First history index to include: the newest entry always (when it fits at all),
    the previous window's start while everything since still fits, else a new
    start that leaves room to grow."""
    n = len(items)
    if n == 0:
        return 0
    cost = costs.__getitem__
    if sticky is not None and 0 <= sticky < n:
        total = sum(costs[sticky:])
        if total <= allow:
            return sticky
    # A new window (none before, or it must move) holds everything when that fits the
    # history's own share; else it is cut to HISTORY_REFILL of that share, so the following
    # turns append (into what lore and memory leave) instead of sliding every turn.
    whole = 0
    for i in range(n - 1, -1, -1):
        whole += cost(i)
        if whole > share:
            break
    target = whole if whole <= share else int(share * HISTORY_REFILL)
    start, total = n, 0
    while start > 0 and total + cost(start - 1) <= target:
        start -= 1
        total += cost(start)
    if start == n and cost(n - 1) <= allow:
        start = n - 1  # the newest entry always goes in when the dynamic tier can hold it
    # Begin on a user turn: some chat templates refuse an assistant turn first.
    while start < n - 1 and items[start].role == "assistant":
        start += 1
    return start
