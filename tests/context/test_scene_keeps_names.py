"""The scene keeps what it must (issue 31, item 3): the place's name and who is present
are never dropped while older events stay; a long description is cut within its line."""

from __future__ import annotations

from ctxhelpers import all_text, engine, prepare
from world import World

from sidecar.context.contract import DialogueInput, RunSpec
from sidecar.errors import ContextWindowExceeded

HALL = "loc-hall"
LONG = "A vast hall of black stone whose walls are carved with the deeds of forty kings, " * 6


def hall():
    world = (
        World()
        .entity(HALL, "location", "The Hall of Kings", description=LONG)
        .entity("npc-1", "character", "Bram", at=HALL, description="The steward, old and watchful.")
        .entity("npc-2", "character", "Edda", at=HALL, description="A guard with a scarred face and a long spear.")
        .entity("npc-3", "character", "Tobin", at=HALL, description="A page who runs errands for the steward.")
        .entity("pc-1", "player", "Mira", at=HALL, description="A ranger.")
    )
    for i in range(6):
        world = world.then().event(f"Event {i}: a torch gutters.", at=HALL)
    return world.session()


def test_the_place_and_who_is_present_outlast_every_older_event() -> None:
    s, eng = hall(), engine()
    cut_within = 0
    for budget in range(400, 760, 5):
        try:
            p = prepare(eng, s, RunSpec("s1", "npc-1", DialogueInput("Who is here?")), budget=budget, preview=True)
        except ContextWindowExceeded:
            continue
        text = all_text(p.prompt.messages)
        older = sum(f"Event {i}:" in text for i in range(5))  # event 5 is the newest
        if older:
            assert "Location: loc_1 (The Hall of Kings)" in text, budget
            for name in ("Edda", "Tobin"):
                assert f"({name})" in text, (budget, name)
        line = next((x for x in text.splitlines() if x.startswith("Location:")), "")
        if line and line != f"Location: loc_1 (The Hall of Kings) — {LONG.strip()}":
            cut_within += line.endswith("…") and len(line) > len("Location: loc_1 (The Hall of Kings)") + 20
    assert cut_within, "a long description is cut within its line at some budget"


def test_a_shortened_setting_says_what_it_left_out() -> None:
    s = hall()
    p = prepare(engine(), s, RunSpec("s1", "npc-1", DialogueInput("Who is here?")), budget=480, preview=True)
    setting = next(x for x in p.prompt.sections if x.name == "setting")
    assert setting.trimmed and not setting.dropped
    assert [o.kind for o in p.prompt.left_out if o.section == "setting"] == ["description"]
