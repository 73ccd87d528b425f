"""A tight budget once does not stick (issue 31, item 2): after a run at 480 tokens held
a few events, the same actor's next prompt at 3,000 holds all it has room for again."""

from __future__ import annotations

from ctxhelpers import all_text, engine, prepare
from world import World

from sidecar.context.contract import NarrateInput, RunSpec

NPC = "npc-bram-1"
EVENTS = [f"Event number {i}: the wind rattles shutter {i} of the old inn." for i in range(12)]


def session():
    world = (
        World()
        .entity("loc-inn", "location", "The Old Inn", description="A draughty inn.")
        .entity(NPC, "character", "Bram", at="loc-inn", description="The innkeeper.")
        .entity("pc-1", "player", "Mira", at="loc-inn", description="A ranger.")
    )
    for text in EVENTS:
        world = world.event(text, actor="pc-1", at="loc-inn")
    return world.session("s1")


def held(messages) -> int:
    text = all_text(messages)
    return sum(text.count(f"shutter {i} ") for i in range(len(EVENTS)))


def test_a_prompt_with_room_again_takes_the_history_back() -> None:
    s, eng = session(), engine()
    spec = RunSpec("s1", NPC, NarrateInput("Bram looks up."))
    tight = prepare(eng, s, spec, budget=480)  # a run: its window is remembered
    assert held(tight.prompt.messages) < len(EVENTS)
    roomy = prepare(eng, s, RunSpec("s1", NPC, NarrateInput("Bram sighs.")), budget=3000)
    assert held(roomy.prompt.messages) == len(EVENTS), all_text(roomy.prompt.messages)
    assert not [o for o in roomy.prompt.left_out if o.section == "history"]
    # And the window then holds still: the next prompt extends it.
    again = prepare(eng, s, RunSpec("s1", NPC, NarrateInput("Bram yawns.")), budget=3000)
    assert held(again.prompt.messages) == len(EVENTS)


def test_left_out_says_whether_the_window_was_ranked_or_kept() -> None:
    from sidecar.context.window import HistoryItem, select

    items = [HistoryItem("user", f"line {i} " + "word " * 20, at=i) for i in range(10)]

    def count(text: str) -> int:
        return len(text.split())

    ranked = select(items, None, allow=100, share=100, count=count)
    assert ranked.moved and {o.reason for o in ranked.left_out()} == {"ranked below what the history share holds"}
    kept = select(items, ranked.selection(), allow=100, share=100, count=count)
    assert not kept.moved and kept.chosen == ranked.chosen
    kept_reason = "outside the window an earlier prompt held, kept for its cached prefix"
    assert {o.reason for o in kept.left_out()} == {kept_reason}
