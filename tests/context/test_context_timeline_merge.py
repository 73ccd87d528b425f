"""The timeline cache extends its merge when only the transcript grew (so a prompt's
build does not walk the whole session each turn): whatever the sequence of turns,
world events and narrations of those events, the extended timeline is the one a
merge from scratch gives (sidecar/context/timeline.py)."""

from __future__ import annotations

from ctxhelpers import engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from world import World, anchor_tavern

from sidecar.context.context_index import context_index
from sidecar.context.timeline import _events, build_timeline
from sidecar.projection import Projection
from sidecar.projection.session_index import index_for
from sidecar.state.model import TranscriptEntry

NPC = "npc-maerwyn-7"
PLAYER = "player-one-1"
TAVERN = "loc-tavern-01"

# One step of a session: a line, a reply, a narration (of a world event already
# recorded, or of something else), or a new world event (a new revision).
step = st.one_of(
    st.tuples(st.just("player"), st.integers(0, 3)),
    st.tuples(st.just("actor"), st.integers(0, 3)),
    st.tuples(st.just("tell"), st.integers(0, 30)),
    st.tuples(st.just("event"), st.integers(0, 3)),
    st.tuples(st.just("stale"), st.integers(1, 3)),
)


def _view(t):
    return (
        [(h.role, h.content, h.kind, h.relevant) for h in t.items],
        t.newest_event,
        t.recent_events,
        t.entry_at,
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=40))
def test_an_extended_timeline_is_the_timeline_merged_afresh(steps) -> None:
    s = anchor_tavern()
    s.world.events.clear()
    World().event("The door bangs.", at=TAVERN).onto(s)
    eng = engine()
    log = s.transcripts.setdefault(NPC, [])
    for n, (kind, k) in enumerate(steps):
        if kind == "event":
            where = TAVERN if k % 2 else "loc-far-02"
            World().event(f"Event {n}: a patron spills ale.", at=where, about=[PLAYER] if k == 3 else []).onto(s)
        elif kind == "tell":
            texts = [e.text for e in s.world.events]
            text = texts[k % len(texts)] if k < 20 and texts else f"Something else {n}."
            log.append(TranscriptEntry(role="event", text=text, speaker_id="", revision=s.revision))
        elif kind == "stale":  # a reply whose prompt was built before the newest events
            log.append(
                TranscriptEntry(role="actor", text=f"Late reply {n}.", speaker_id=NPC, revision=max(0, s.revision - k))
            )
        else:
            log.append(
                TranscriptEntry(
                    role=kind,
                    text=f"{kind} line {n}.",
                    speaker_id=PLAYER if kind == "player" else NPC,
                    revision=s.revision,
                )
            )
        proj = Projection(s, NPC)
        cidx = context_index(s, index_for(s))
        rendered = eng.history.items(s, proj, cidx.base)
        got = eng.timelines.get(s, proj, cidx, rendered, ())
        fresh = build_timeline(s, proj, _events(s, proj, cidx), rendered)
        assert _view(got) == _view(fresh), (n, kind, k)


def test_a_growing_dialogue_extends_the_merge_instead_of_merging_afresh() -> None:
    s = anchor_tavern()
    eng = engine()
    log = s.transcripts.setdefault(NPC, [])
    proj = Projection(s, NPC)
    cidx = context_index(s, index_for(s))
    seen = []
    for n in range(20):
        log.append(TranscriptEntry(role="player", text=f"Line {n}?", speaker_id=PLAYER, revision=s.revision))
        log.append(TranscriptEntry(role="actor", text=f"Reply {n}.", speaker_id=NPC, revision=s.revision))
        rendered = eng.history.items(s, proj, cidx.base)
        eng.timelines.get(s, proj, cidx, rendered, ())
        merge = next(iter(eng.timelines._merges._items.values()))
        seen.append(id(merge))
        assert merge.entries == len(log)
    assert len(set(seen)) == 1  # one merge object, extended 19 times
