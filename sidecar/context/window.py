"""The history window: which items of the timeline (sidecar/context/timeline.py) a
prompt holds, and in what order (always the timeline's). docs/context.md ("History
window") has the why of each rule.

- A selection is remembered by item (`HistoryItem.at`), not by position: when the
  oldest events leave past the session's events cap, or a compaction folds the oldest
  entries, the same items are still the ones it held (issue 31: by position, every
  event past the cap moved the window).
- While everything since the previous prompt's selection still fits, the window
  keeps that selection and appends what is new: each turn extends the cached prefix;
  unless that selection holds less than FILL_MIN of the history's own share while
  relevant items are left out: a tight budget once does not stick, and a share is
  never left part-empty to keep a prefix.
- A selection made anew fills the history's allowance (FRESH_FILL of it for a first
  window, REFILL of the history's own share when a window has to move, so the
  following turns have some room to append), taking items by relevance,
  then recency: first what involves an entity the input is about, then what involves
  the actor, a player or the actor's place, then background events; newest first
  within each. The newest item always goes in when it fits at all.
- A player line and the reply that follows it are taken or left together.
- Past the events cap, a new selection leaves out the events about to leave (`leaving`):
  a window that held them would lose one, and its cached prefix, with every new event.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter, countOf
from typing import NamedTuple

from sidecar.context.contract import LeftOut
from sidecar.context.tokens import MESSAGE_OVERHEAD
from sidecar.context.window_kept import carried, fits_more

__all__ = ["FILL_MIN", "FRESH_FILL", "REFILL", "HistoryItem", "Selection", "Window", "select"]

#: A window that must move is filled to this share of the history's own share: full
#: (issue 31: at 60% the narrator's prompts left most perceivable events out), with what
#: the allowance holds beyond the share left for the following turns to append.
REFILL = 0.95
#: A kept window under this share of the history's own share, while a relevant item is
#: left out, is selected anew. Below REFILL, so a few tokens more or less of budget from
#: one turn to the next (the input's length) do not move the window.
FILL_MIN = 0.9
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
    #: The item's number among its kind ("transcript" or "event"), counted from the first
    #: ever (compacted entries and events past the cap included): a selection names items
    #: by it, so the oldest leaving does not shift what it names (-1: none).
    at: int = -1


class Selection(NamedTuple):
    """A prompt's history, by item (`HistoryItem.at`): the transcript entries and the
    world events it held, and for each kind the first number it had not seen. The next
    prompt keeps them and appends what came after, however many of the oldest left."""

    entries: tuple[int, ...] = ()
    events: tuple[int, ...] = ()
    entries_end: int = 0
    events_end: int = 0


@dataclass
class Window:
    """The selected history of one prompt."""

    items: list[HistoryItem]
    #: Indices into `items` that the prompt holds, ascending.
    chosen: list[int]
    #: Tokens of each chosen item as a message (content + MESSAGE_OVERHEAD).
    costs: list[int]
    #: The selection is not the previous one extended (the cached prefix breaks).
    moved: bool
    #: The items were ranked this turn (else kept from the previous prompt, or all fit).
    ranked: bool = False
    #: Events numbered below this leave past the events cap soon (see `select`).
    leaving: int = 0

    @property
    def tokens(self) -> int:
        return sum(self.costs)

    def shown(self) -> list[HistoryItem]:
        return [self.items[i] for i in self.chosen]

    def selection(self) -> Selection:
        held: dict[str, list[int]] = {"transcript": [], "event": []}
        ends = {"transcript": 0, "event": 0}
        for it in self.items:
            ends[it.kind] = max(ends[it.kind], it.at + 1)
        for i in self.chosen:
            it = self.items[i]
            held[it.kind].append(it.at)
        return Selection(tuple(held["transcript"]), tuple(held["event"]), ends["transcript"], ends["event"])

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

        def leaves(it: HistoryItem) -> bool:
            return it.kind == "event" and it.at < self.leaving

        leaving = sum(map(leaves, out_items))
        out_items = list(itertools.filterfalse(leaves, out_items))
        background = sum(1 for it in out_items if it.kind == "event" and not it.relevant)
        events = countOf(map(_kind, out_items), "event") - background
        entries = len(out_items) - events - background
        out = []
        # Each reason says what happened: a window kept from an earlier prompt did not rank
        # anything this turn (issue 31: the text claimed a ranking that never ran).
        why = ("ranked below what the history share holds" if self.ranked
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
        if leaving:
            why = "about to leave past the session's events cap (state.max_events): not taken into a new window"
            out.append(LeftOut("history", "world_event", leaving, why))
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
    leaving: int = 0,
) -> Window:
    """The window over `items` for a history allowance of `allow` tokens (`share`: the
    history's own share, what a window fills). `asked`: engine IDs the input is about.
    `leaving`: events numbered below it leave past the events cap soon; a new selection
    leaves them out (kept ones stay while they are held)."""
    n = len(items)
    cost_of: dict[int, int] = {}

    def cost(i: int) -> int:
        c = cost_of.get(i)
        if c is None:
            c = cost_of[i] = count(items[i].content) + MESSAGE_OVERHEAD
        return c

    if n == 0:
        return Window(items, [], [], previous is not None and bool(previous.entries or previous.events))
    own = min(share, allow)

    def stays(i: int) -> bool:
        return items[i].kind != "event" or items[i].at >= leaving

    if previous is not None:
        keep, intact = carried(items, previous)
        # A kept window that lost its oldest events past the cap moves once, clear of the
        # events about to leave, rather than losing one (and its prefix) every turn.
        used = sum(map(cost, keep))
        if keep and (intact or not leaving) and used <= allow and items[keep[0]].role != "assistant":
            # Kept for its cached prefix, unless that costs relevant history: a window under
            # FILL_MIN of the share that leaves a relevant item out is selected anew (a run
            # at budget 480 held 3 of 12 events in every later prompt at 3,000, issue 31).
            room = allow - used
            if used >= own * FILL_MIN or not fits_more(items, set(keep), cost, stays, room, LOOKBACK * allow):
                return Window(items, keep, [cost(i) for i in keep], not intact)
    # Everything, when it fits.
    total, first = 0, n
    reach = LOOKBACK * max(allow, 0)
    while first > 0:
        total += cost(first - 1)
        if total > reach:
            break
        first -= 1
    everything = first == 0
    # A reply whose line is out of reach is no unit: taken, it would be cut again (the
    # window starts on a user turn) and leave the window under its target.
    while first < n - 1 and items[first].role == "assistant":
        first += 1
    candidates = [i for i in range(first, n) if stays(i)]
    if everything and sum(map(cost, candidates)) <= allow:
        return Window(items, candidates, [cost(i) for i in candidates], previous is not None, leaving=leaving)
    target = int(own * REFILL)
    if previous is None:
        target = min(allow, max(target, int(allow * FRESH_FILL)))
    units = [u for u in _units(items, first) if all(map(stays, u))]

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
    taken = [False] * len(units)
    # To the target; then, when units too big for what the target left kept the window
    # under it, smaller ones within the allowance until it is reached.
    for limit in (target, allow):
        for u in ranked:
            if used >= target:
                break
            c = sum(map(cost, units[u]))
            if not taken[u] and used + c <= limit:
                chosen.extend(units[u])
                used += c
                taken[u] = True
    chosen.sort()
    while len(chosen) > 1 and items[chosen[0]].role == "assistant":
        chosen.pop(0)
    return Window(items, chosen, [cost(i) for i in chosen], True, ranked=True, leaving=leaving)
