"""The history window: which items of the timeline (sidecar/context/timeline.py) a
prompt holds, and in what order (always the timeline's). docs/context.md ("History
window") has the why of each rule.

- While everything since the previous prompt's selection still fits, the window
  keeps that selection and appends what is new: each turn extends the cached prefix;
  unless that selection holds less than a moved window would (HISTORY_REFILL of the
  share) while relevant items are left out: a tight budget once does not stick.
- A selection made anew fills the history's allowance (FRESH_FILL of it for a first
  window, HISTORY_REFILL of the history's own share when a window has to move, so the
  following turns append instead of sliding every turn), taking items by relevance,
  then recency: first what involves an entity the input is about, then what involves
  the actor, a player or the actor's place, then background events; newest first
  within each. The newest item always goes in when it fits at all.
- A player line and the reply that follows it are taken or left together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter, countOf
from typing import NamedTuple

from sidecar.context.contract import LeftOut
from sidecar.context.tokens import MESSAGE_OVERHEAD

__all__ = ["FRESH_FILL", "HISTORY_REFILL", "HistoryItem", "Selection", "Window", "select"]

#: A window that must move is cut to this share of the history's own share, so the
#: following turns append to an unchanged prefix instead of sliding every turn.
HISTORY_REFILL = 0.6
#: A first window (no previous prompt of the actor to extend) fills this much of the
#: history's allowance: full enough that what is cut is cut for want of room, with the
#: rest left for the next few turns to append before the window has to move.
FRESH_FILL = 0.9
#: Items ranked for a new selection: the newest, up to this many times the allowance in
#: tokens. Older ones cannot be reached, so a build costs what the window can hold, not
#: the whole transcript.
LOOKBACK = 3


@dataclass
class HistoryItem:
    role: str
    content: str
    #: "transcript" (the actor's own entries) or "event" (a world event it perceived).
    kind: str = "transcript"
    #: False for a background event: the last taken when the history share is full.
    relevant: bool = True
    #: Engine IDs the item involves (an event's actor and entities; never rendered): an
    #: item about an entity the input is about ranks first.
    about: frozenset[str] = field(default_factory=frozenset)
    #: An event's own text, as the game sent it (a narration of it is matched by it; never rendered).
    source: str = ""


class Selection(NamedTuple):
    """A prompt's history: the indices (into the layout's history) it held, and the
    history's length then. The next prompt keeps them and appends what came after."""

    kept: tuple[int, ...]
    end: int


@dataclass
class Window:
    """The selected history of one prompt."""

    items: list[HistoryItem]
    #: Indices into `items` that the prompt holds, ascending.
    chosen: list[int]
    #: Tokens of each chosen item as a message (content + MESSAGE_OVERHEAD).
    costs: list[int]
    #: The selection is not the previous one extended.
    moved: bool

    @property
    def tokens(self) -> int:
        return sum(self.costs)

    def shown(self) -> list[HistoryItem]:
        return [self.items[i] for i in self.chosen]

    def selection(self) -> Selection:
        return Selection(tuple(self.chosen), len(self.items))

    def drop_oldest(self) -> bool:
        """Give up the oldest chosen item (the whole prompt must fit); False when none is left."""
        if not self.chosen:
            return False
        self.chosen.pop(0)
        self.costs.pop(0)
        self.moved = True
        # Begin on a user turn: some chat templates refuse an assistant turn first.
        while len(self.chosen) > 1 and self.items[self.chosen[0]].role == "assistant":
            self.chosen.pop(0)
            self.costs.pop(0)
        return True

    def left_out(self) -> list[LeftOut]:
        held = set(self.chosen)
        out_items = [it for i, it in enumerate(self.items) if i not in held]
        background = sum(1 for it in out_items if it.kind == "event" and not it.relevant)
        events = countOf(map(_kind, out_items), "event") - background
        entries = len(out_items) - events - background
        out = []
        # Each reason says what happened: a window kept from an earlier prompt did not rank
        # anything this turn (issue 31: the text claimed a ranking that never ran).
        why = ("ranked below what the history share holds" if self.moved
               else "outside the window an earlier prompt held, kept for its cached prefix")  # fmt: skip
        for n, label in ((entries, "transcript_entry"), (events, "world_event")):
            if n:
                out.append(LeftOut("history", label, n, why))
        if background:
            out.append(
                LeftOut(
                    "history",
                    "world_event",
                    background,
                    "background (involves neither the actor nor a player, elsewhere): history share full",
                )
            )
        return out


_kind = attrgetter("kind")


def _units(items: list[HistoryItem], first: int) -> list[list[int]]:
    """Items from `first` on, in units: a reply goes with the line before it."""
    units: list[list[int]] = []
    for i in range(first, len(items)):
        item = items[i]
        if item.role == "assistant" and units and items[units[-1][-1]].role == "user" and (
            items[units[-1][-1]].kind == "transcript" and len(units[-1]) == 1
        ):
            units[-1].append(i)
        else:
            units.append([i])
    return units


def select(
    items: list[HistoryItem],
    previous: Selection | None,
    allow: int,
    share: int,
    count: Callable[[str], int],
    asked: frozenset[str] = frozenset(),
) -> Window:
    """The window over `items` for a history allowance of `allow` tokens (`share`: the
    history's own share, what a moving window refills to a part of). `asked`: engine
    IDs the input is about."""
    n = len(items)
    cost_of: dict[int, int] = {}

    def cost(i: int) -> int:
        c = cost_of.get(i)
        if c is None:
            c = cost_of[i] = count(items[i].content) + MESSAGE_OVERHEAD
        return c

    if n == 0:
        return Window(items, [], [], previous is not None and bool(previous.kept))
    if previous is not None and previous.end <= n and all(i < n for i in previous.kept):
        keep = [*previous.kept, *range(previous.end, n)]
        if keep and sum(map(cost, keep)) <= allow and items[keep[0]].role != "assistant":
            # Kept for its cached prefix, unless a smaller prompt's window would now cost
            # relevant history: a window under what a move refills to, leaving out a
            # relevant item, is selected anew (a run at budget 480 held 3 of 12 events in
            # every later prompt at 3,000, issue 31).
            held = set(keep)
            small = sum(map(cost, keep)) < int(min(share, allow) * HISTORY_REFILL)
            if not (small and any(items[i].relevant for i in range(previous.end) if i not in held)):
                return Window(items, keep, [cost(i) for i in keep], False)
    # Everything, when it fits.
    total, first = 0, n
    reach = LOOKBACK * max(allow, 0)
    while first > 0:
        total += cost(first - 1)
        if total > reach:
            break
        first -= 1
    whole = sum(cost(i) for i in range(first, n))
    if first == 0 and whole <= allow:
        every = list(range(n))
        return Window(items, every, [cost(i) for i in every], previous is not None)
    target = int(allow * FRESH_FILL) if previous is None else int(min(share, allow) * HISTORY_REFILL)
    units = _units(items, first)

    def tier(unit: list[int]) -> int:
        its = [items[i] for i in unit]
        if asked and any(asked & it.about for it in its):
            return 2
        return 1 if any(it.relevant for it in its) else 0

    newest = units.pop() if units else []
    chosen: list[int] = []
    used = 0
    if newest and sum(map(cost, newest)) <= allow:
        chosen, used = list(newest), sum(map(cost, newest))
    ranked = sorted(range(len(units)), key=lambda u: (-tier(units[u]), -u))
    for u in ranked:
        c = sum(map(cost, units[u]))
        if used + c <= target:
            chosen.extend(units[u])
            used += c
    chosen.sort()
    while len(chosen) > 1 and items[chosen[0]].role == "assistant":
        chosen.pop(0)
    return Window(items, chosen, [cost(i) for i in chosen], True)
