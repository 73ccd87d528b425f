"""A perceived world event's line is rendered once and kept across revisions while
it still reads the same: the same ID matcher (so the same engine IDs are found in
its text), the same moment options, and every ID found reading as it did
(sidecar/context/timeline.py). Whatever the deltas, the kept lines equal lines
rendered afresh; a delta that touches nothing an event names re-renders nothing."""

from __future__ import annotations

from ctxhelpers import engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from world import HIDDEN, PRIVATE, PUBLIC, World, known_to

from sidecar.context.context_index import context_index
from sidecar.context.timeline import _events
from sidecar.projection import Projection
from sidecar.projection.session_index import index_for
from sidecar.state.model import Moment, MomentExposure, Session

NPC, PLAYER, TAVERN, GOBLIN, LATER = "NPC_Maerwyn_7", "PLAYER_One_1", "LOC_Tavern_01", "BP_Goblin_C_42", "NPC_Later_9"


def _start() -> Session:
    w = World().entity(TAVERN, "location", "The Tavern").entity(NPC, at=TAVERN).entity(PLAYER, "player", at=TAVERN)
    w.entity(GOBLIN, "character", "Goblin", at=TAVERN)
    w.event(f"{GOBLIN} spills ale on {PLAYER}.", at=TAVERN, about=[GOBLIN, PLAYER])
    w.event(f"A letter signed {LATER} arrives.", at=TAVERN, moment=Moment(timeline="main", tick=7, calendar="Day 3"))
    w.event("The fire crackles.", at=TAVERN)
    return w.session()


def _seen(eng, s, proj, cidx):
    return eng.timelines._events.get((s.id, id(s), proj.actor_id, ()))[1]


STEPS = st.sampled_from(
    [
        ("hide", GOBLIN),
        ("show", GOBLIN),
        ("private", GOBLIN),
        ("known", GOBLIN),
        ("away", GOBLIN),
        ("back", GOBLIN),
        ("add", LATER),
        ("remove", LATER),
        ("remove", GOBLIN),
        ("moment", "calendar"),
        ("moment", "none"),
        ("field", PLAYER),
        ("event", GOBLIN),
    ]
)


def _step(s: Session, step: tuple[str, str], n: int) -> None:
    kind, eid = step
    ents = s.world.entities
    w = World()
    if kind in ("hide", "show", "private", "known", "away", "back") and eid in ents:
        vis = {"hide": HIDDEN, "show": PUBLIC, "private": PRIVATE, "known": known_to(PLAYER)}.get(
            kind, ents[eid].visibility
        )
        at = {"away": "", "back": TAVERN}.get(kind, ents[eid].location_id)
        w.entity(eid, ents[eid].kind, ents[eid].name, at=at, visibility=vis)
    elif kind == "add":
        w.entity(eid, "character", "Later", at=TAVERN)
    elif kind == "remove" and eid in ents:
        from sidecar.state import ops as o

        w.add(o.RemoveEntity(eid))
    elif kind == "moment":
        s.options.expose_moment = MomentExposure(calendar=eid == "calendar")
        s.revision += 1
        return
    elif kind == "field":
        w.entity(PLAYER, "player", at=TAVERN, hp=n)
    elif kind == "event":
        w.event(f"{GOBLIN} and {LATER} argue, step {n}.", at=TAVERN)
    if w.ops:
        w.onto(s)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEPS, min_size=1, max_size=25), st.sampled_from([NPC, PLAYER, ""]))
def test_kept_event_lines_equal_lines_rendered_afresh(steps, actor: str) -> None:
    s, eng = _start(), engine()
    for n, step in enumerate(steps):
        _step(s, step, n)
        proj = Projection(s, actor)
        cidx = context_index(s, index_for(s))
        eng.timelines.get(s, proj, cidx, [], ())
        kept = [seen.line for seen in _seen(eng, s, proj, cidx)]
        assert kept == [seen.line for seen in _events(s, proj, cidx)], (n, step)


def test_a_delta_that_touches_no_event_re_renders_none() -> None:
    s, eng = _start(), engine()

    def lines() -> list[str]:
        proj = Projection(s, NPC)
        cidx = context_index(s, index_for(s))
        eng.timelines.get(s, proj, cidx, [], ())
        return [seen.line for seen in _seen(eng, s, proj, cidx)]

    before = lines()
    _step(s, ("field", PLAYER), 1)
    after = lines()
    assert after == before and all(a is b for a, b in zip(after, before, strict=True))  # kept, not re-rendered
    _step(s, ("hide", GOBLIN), 2)
    hidden = lines()
    assert hidden[0] != before[0] and hidden[0].startswith("someone spills ale")
    assert hidden[1] is after[1] and hidden[2] is after[2]  # the others still read the same
