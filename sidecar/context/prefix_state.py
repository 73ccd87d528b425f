"""What an actor's last prompt held (the history items it kept, its lore and memory
blocks, lore and memories that entered the history with a line), kept in the session
(`Session.prompt_state`) so the next prompt extends that prefix.

It lives in the session, not in the engine, so that a session exported and imported
(ExportSession / ImportSession) builds byte-identical prompts for the same input: the
prompt depends on what was sent before (docs/context.md, History window; docs/privacy.md).
Each part is checked against the session when used (a selection past the history's
end, a memory no longer there, a line that no longer renders as sent are dropped).
"""

from __future__ import annotations

from collections import OrderedDict

import msgspec

from sidecar.context.parts import Entered
from sidecar.context.window import Selection
from sidecar.state.model import Session

__all__ = ["PrefixState", "read", "write"]


class PrefixState(msgspec.Struct, frozen=True):
    #: The history the last prompt held (None: it held no history).
    history: Selection | None = None
    lore: frozenset[str] = frozenset()
    memories: frozenset[tuple[int, str]] = frozenset()
    entered: tuple[Entered, ...] = ()


class _Wire(msgspec.Struct, array_like=True):
    #: The history's kept transcript entries (None: the prompt held no history) and world
    #: events, by number (`HistoryItem.at`), as [start, stop) runs (a window is mostly a few).
    entries: list[tuple[int, int]] | None
    events: list[tuple[int, int]]
    #: The first entry and event numbers the prompt had not seen.
    ends: tuple[int, int]
    lore: list[str]
    memories: list[tuple[int, str]]
    entered: list[tuple[int, str, str, list[str]]]


_enc = msgspec.msgpack.Encoder()
_dec = msgspec.msgpack.Decoder(_Wire)
#: Decoded states kept: a few per actor in play is what the cache is for (a preview and
#: its run read the same bytes); 4,096 held about 12 MB of number tuples by turn 3,000.
_DECODED_MAX = 64
_decoded: OrderedDict[bytes, PrefixState] = OrderedDict()


def _runs(kept: tuple[int, ...]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i in kept:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def write(session: Session, actor_id: str, state: PrefixState) -> None:
    sel = state.history
    wire = _Wire(
        _runs(sel.entries) if sel is not None else None,
        _runs(sel.events) if sel is not None else [],
        (sel.entries_end, sel.events_end) if sel is not None else (0, 0),
        sorted(state.lore),
        sorted(state.memories),
        [(e.entry, e.said, e.text, sorted(e.cards)) for e in state.entered],
    )
    session.prompt_state[actor_id] = _enc.encode(wire)


def _keys(pairs: list[tuple[int, str]]) -> frozenset[tuple[int, str]]:
    return frozenset((int(r), str(t)) for r, t in pairs)


def read(session: Session, actor_id: str) -> PrefixState:
    """The actor's state; a fresh one when there is none, or when it does not decode or
    names history items past what the session has had (an imported blob is the game's
    input: a state that claims a billion items must not make us build a billion)."""
    raw = session.prompt_state.get(actor_id)
    if not raw:
        return PrefixState()
    summary = session.summaries.get(actor_id)
    entries, events = len(session.transcripts.get(actor_id, ())), len(session.world.events)
    hit = _decoded.get(raw)
    if hit is None:
        try:
            w = _dec.decode(raw)
            # Never more items than the session holds: runs are expanded, and a hostile save
            # may claim a billion of them.
            if sum(b - a for a, b in (*(w.entries or ()), *w.events)) > entries + events:
                return PrefixState()
            hit = _state(w)
        except (msgspec.DecodeError, msgspec.ValidationError):
            # A save from another version: start afresh (the prompt is still valid, only less cached).
            return PrefixState()
        _decoded[raw] = hit
        if len(_decoded) > _DECODED_MAX:
            _decoded.popitem(last=False)
    # Numbers count from the first entry and event ever: none can reach past what the
    # session has had (the same bytes may come with another session: checked each read).
    sel = hit.history
    entries_had = entries + (summary.removed if summary is not None else 0)
    events_had = events + session.world.events_dropped
    if sel is not None and (sel.entries_end > entries_had or sel.events_end > events_had):
        return PrefixState()
    return hit


def _state(w: _Wire) -> PrefixState:
    history = None
    if w.entries is not None:
        entries_end, events_end = w.ends
        entries, events = _numbers(w.entries, entries_end), _numbers(w.events, events_end)
        history = Selection(entries, events, entries_end, events_end)
    return PrefixState(
        history,
        frozenset(w.lore),
        _keys(w.memories),
        tuple(Entered(n, said, text, frozenset(c)) for n, said, text, c in w.entered),
    )


def _numbers(runs: list[tuple[int, int]], end: int) -> tuple[int, ...]:
    """The numbers of `runs`, each within [0, end) (else the state is not one we wrote)."""
    if any(not 0 <= a < b <= end for a, b in runs):
        raise msgspec.ValidationError("a history run past its end")
    return tuple(i for a, b in runs for i in range(a, b))
