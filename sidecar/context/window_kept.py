"""What a kept history window carries over (sidecar/context/window.py): the items the
previous prompt held, found by number among today's, and whether a relevant item it
left out would still fit. Apart from the selection rules, which read better without them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.context.window import HistoryItem, Selection

__all__ = ["carried", "fits_more"]


def fits_more(
    items: list[HistoryItem],
    held: set[int],
    cost: Callable[[int], int],
    stays: Callable[[int], bool],
    room: int,
    reach: int,
) -> bool:
    """Whether a relevant item left out (among the newest `reach` tokens, and not about to
    leave past the events cap) fits in `room`."""
    seen = 0
    for i in range(len(items) - 1, -1, -1):
        c = cost(i)
        if i not in held and items[i].relevant and c <= room and stays(i):
            return True
        seen += c
        if seen > reach:
            return False
    return False


def carried(items: list[HistoryItem], previous: Selection) -> tuple[list[int], bool]:
    """Indices of the items `previous` held that are still here and of every item new
    since, in order; and whether all it held are still here. Numbers grow along the
    timeline within each kind, so the scan runs back from the newest and stops below
    the oldest item held of each kind: it costs the window, not the transcript."""
    held = {"transcript": frozenset(previous.entries), "event": frozenset(previous.events)}
    end = {"transcript": previous.entries_end, "event": previous.events_end}
    low = {kind: min(numbers, default=end[kind]) for kind, numbers in held.items()}
    # A kind is done once the scan is at (or, holding none of it, below) its oldest held.
    done = {kind: False for kind in held}
    keep: list[int] = []
    for i in range(len(items) - 1, -1, -1):
        it = items[i]
        kind = it.kind
        if it.at >= end[kind] or it.at in held[kind]:
            keep.append(i)
        if it.at < low[kind] or (held[kind] and it.at == low[kind]):
            done[kind] = True
            if all(done.values()):
                break
    keep.reverse()
    found = sum(1 for i in keep if items[i].at < end[items[i].kind])
    return keep, found == len(held["transcript"]) + len(held["event"])
