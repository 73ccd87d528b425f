"""Transcript compaction, the context side (docs/context.md, Transcripts and
ReadTranscript): which entries a compaction folds, the messages that ask a
model for the summary, the bound on what it wrote, and what a prompt reports
as left out because a cap or a compaction took it.

The request is projected like a prompt: the entries render as the history
renders them (aliases, engine IDs scrubbed), so a summary request is no leak.
The run package (`sidecar.runs.compaction`) makes the call and stores it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sidecar.context.contract import LeftOut
from sidecar.context.history import render_entry
from sidecar.context.select import event_line, game_text
from sidecar.projection import Projection
from sidecar.state.model import Event, Session, TranscriptEntry, TranscriptSummary

__all__ = [
    "fold_count",
    "summary_messages",
    "bound_summary",
    "summary_lines",
    "cap_left_out",
    "leaving_events",
    "events_to_fold",
    "SUMMARY_HEADER",
]

#: Past the events cap, the oldest 1/LEAVING_SHARE of the events held are "leaving": a new
#: history window leaves them out (it then loses none for that many events instead of one
#: every turn), and a compaction folds them into the actor's summary before they go.
LEAVING_SHARE = 4

SUMMARY_HEADER = "## Earlier in this conversation"

_RULES = (
    "You keep the record of a long conversation in a game. Rewrite the earlier record "
    "and the events and turns below as one summary in plain prose, at most {chars} characters: who "
    "said or did what, what was promised, given, taken or learned, and how the speakers "
    "feel about each other. Keep every name exactly as written (for example npc_2). "
    "Write only the summary."
)
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s|$)")


def leaving_events(session: Session) -> int:
    """The number below which events leave past the events cap within the next quarter of
    the cap's worth of events (0 while nothing has left)."""
    world = session.world
    if not world.events_dropped:
        return 0
    return world.events_dropped + len(world.events) // LEAVING_SHARE


def events_to_fold(session: Session, proj: Projection) -> tuple[list[tuple[int, Event]], int]:
    """The leaving events the actor perceived that its summary does not hold yet, oldest
    first, with their numbers; and the number the summary holds through once they are
    folded. Empty until the oldest of them is within half the leaving share of the cap's
    edge: a compaction then folds them all, well before the first of them leaves."""
    world = session.world
    leaving = leaving_events(session)
    summary = session.summaries.get(proj.actor_id)
    through = summary.events_through if summary is not None else 0
    first = world.events_dropped
    start = max(through, first)
    # Only the leaving ones are looked at (a quarter of the events held), not the whole log.
    zone = world.events[start - first : max(start, leaving) - first]
    out = [(number, ev) for number, ev in enumerate(zone, start) if proj.can_see_event(ev)]
    soon = first + max(1, len(world.events) // (2 * LEAVING_SHARE))
    if not out or out[0][0] >= soon:
        return [], through
    return out, leaving


def fold_count(entries: list[TranscriptEntry], keep: int) -> int:
    """How many of the oldest entries to fold so about `keep` remain: the kept part
    starts on an input (player line or event), never on a reply cut from its line."""
    n = max(0, len(entries) - keep)
    while 0 < n < len(entries) and entries[n].role in ("actor", "narrator"):
        n += 1
    return n if n < len(entries) else 0


def summary_messages(
    session: Session,
    proj: Projection,
    folded: list[TranscriptEntry],
    max_chars: int,
    count: Callable[[str], int],
    budget: int,
    events: Sequence[tuple[int, Event]] = (),
) -> tuple[list[dict[str, str]], int, int]:
    """The summary request: the previous summary (if any), the leaving world `events`
    (`events_to_fold`) and as many of the oldest `folded` turns as fit in `budget`
    tokens (the summary model's window less its reply), with how many turns and events
    that is (0 turns: not even one input and its reply fit)."""
    previous = session.summaries.get(proj.actor_id)
    rules = _RULES.format(chars=max_chars)
    head = []
    if previous is not None and previous.text:
        head += ["Earlier record:", game_text(proj, previous.text), ""]
    used = count(rules) + sum(count(line) + 1 for line in head) + 16  # 16: role markers
    if events:
        head.append("World events to fold in, oldest first:")
        used += count(head[-1]) + 1
        for n, (_, ev) in enumerate(events):
            line = f"Event: {event_line(proj, ev)}"
            used += count(line) + 1
            if used > budget:
                events = events[:n]
                break
            head.append(line)
        head.append("")
    head.append("Turns to fold in, oldest first:")
    used += count(head[-1]) + 1
    me = "You" if proj.actor_id else "Narrator"
    turns: list[str] = []
    taken = 0
    for i, entry in enumerate(folded):
        item = render_entry(proj, entry)
        line = f"{me if item.role == 'assistant' else 'Turn'}: {item.content}"
        used += count(line) + 1
        if used > budget:
            break
        turns.append(line)
        if i + 1 == len(folded) or folded[i + 1].role not in ("actor", "narrator"):
            taken = i + 1  # never stop between an input and its reply
    text = "\n".join(head + turns[:taken])
    return [{"role": "system", "content": rules}, {"role": "user", "content": text}], taken, len(events)


def bound_summary(text: str, max_chars: int) -> str:
    """The model's summary, whitespace collapsed, cut at the last sentence end that
    fits in `max_chars` (at a word when no sentence ends in it)."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= max_chars // 2:
        return head[: ends[-1]]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(",;:") + "…"


def summary_lines(proj: Projection, summary: TranscriptSummary | None) -> list[str]:
    """The prompt's summary part body (empty: no summary)."""
    if summary is None or not summary.text:
        return []
    return [game_text(proj, summary.text)]


def cap_left_out(session: Session, actor_id: str) -> list[LeftOut]:
    """What caps and compaction took from this actor's history, for a prompt's left_out."""
    out = []
    summary = session.summaries.get(actor_id)
    folded = summary.events_summarised if summary is not None else 0
    dropped_events = session.world.events_dropped - folded
    if folded:
        why = "past the session's events cap (state.max_events): the transcript summary holds them"
        out.append(LeftOut("history", "world_event", folded, why))
    if dropped_events > 0:
        out.append(
            LeftOut(
                "history",
                "world_event",
                dropped_events,
                "past the session's events cap (state.max_events): the oldest events are no longer held "
                "(not all of them were perceptible to this actor)",
            )
        )
    if summary is not None:
        if summary.summarised:
            why = "compacted: the transcript summary holds them"
            out.append(LeftOut("history", "transcript_entry", summary.summarised, why))
        if summary.dropped:
            out.append(
                LeftOut(
                    "history",
                    "transcript_entry",
                    summary.dropped,
                    "past the transcript cap ([transcripts] max_entries) before a summary held them",
                )
            )
    return out
