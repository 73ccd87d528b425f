"""History over a long session (issue 31, item 2): the window is remembered by event, not
by position, so events leaving past the cap do not move it; a share with room is filled;
the IDs an event's text names count as involvement; and each left_out reason of the
history says what happened."""

from __future__ import annotations

from ctxhelpers import engine, prepare
from world import World

from sidecar.config import StateLimits
from sidecar.context.budget import HISTORY_SHARE
from sidecar.context.contract import DialogueInput, NarrateInput, RunSpec
from sidecar.context.window import FILL_MIN
from sidecar.state.model import TranscriptSummary

NPC, PLAYER, INN, YARD = "npc-bram-1", "pc-mira-1", "loc-inn", "loc-yard"


def inn() -> World:
    return (
        World()
        .entity(INN, "location", "The Old Inn", description="A draughty inn.")
        .entity(YARD, "location", "The Stable Yard", description="Mud and straw.")
        .entity(NPC, "character", "Bram", at=INN, description="The innkeeper.")
        .entity(PLAYER, "player", "Mira", at=INN, description="A ranger.")
    )


def history(messages: list[dict[str, str]]) -> list[str]:
    return [m["content"] for m in messages[1:-1]]


def test_an_event_whose_text_names_the_actor_is_about_the_actor() -> None:
    world = inn().then().event(f"A courier in the square asks for {NPC} by name.")
    for i in range(40):  # background: no place, nobody the actor knows
        world = world.then().event(f"Far off, bell {i} of the cathedral rings out over the empty market.")
    s = world.session()
    p = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("Anything new?")), budget=900, preview=True)
    text = "\n".join(history(p.prompt.messages))
    assert "asks for npc_1 by name" in text  # older than every bell, yet kept: it is about Bram
    background = [o for o in p.prompt.left_out if o.reason.startswith("background")]
    assert background and background[0].count > 0


def _turns(limits: StateLimits, turns: int, budget: int, *, narrator: bool = False):
    """A dialogue (or narration) of `turns` turns, one event at the inn before each; the
    prompts as each run sent them."""
    s = inn().session()
    eng = engine()
    prompts = []
    for turn in range(turns):
        inn_event = World().event(f"Turn {turn}: a traveller number {turn} shakes rain from a cloak.", at=INN)
        inn_event.onto(s, limits)
        if narrator:
            spec = RunSpec("s1", "", NarrateInput(f"The fire pops ({turn}).", (PLAYER,)))
        else:
            spec = RunSpec("s1", NPC, DialogueInput(f"Question {turn}: who came in?"))
        p = prepare(eng, s, spec, budget=budget)
        p.record(f"Answer {turn}: someone wet and tired.", interrupted=False, run_id=str(turn))
        prompts.append(p.prompt)
    return s, prompts


def _extends(before: list[dict[str, str]], after: list[dict[str, str]]) -> bool:
    """Whether `after` starts with `before`'s system message and whole history."""
    return after[: len(before) - 1] == before[:-1]


def test_past_the_event_cap_the_window_still_extends_turn_after_turn() -> None:
    limits = StateLimits(max_events=20)
    s, prompts = _turns(limits, 70, budget=1400)
    assert s.world.events_dropped == 50
    breaks = [t for t in range(21, 70) if not _extends(prompts[t - 1].messages, prompts[t].messages)]
    # A window moves when it outgrows the allowance, not each time an event leaves the cap
    # (by position every one of these 49 turns broke the prefix).
    assert len(breaks) <= 10, breaks
    for prompt in prompts[20:]:
        turns = history(prompt.messages)
        for i, content in enumerate(turns):
            if content.startswith("Mira says"):  # no player line without the reply that followed it
                assert i + 1 < len(turns) and turns[i + 1].startswith("Answer"), turns


def _share(prompt) -> int:
    """The history's own share of this prompt: the dynamic tier (what the fixed, required and
    volatile parts leave) times HISTORY_SHARE (the session has the memory bank on)."""
    fixed = sum(x.tokens for x in prompt.sections if x.name != "history")
    history_tokens = next((x.tokens for x in prompt.sections if x.name == "history"), 0)
    overhead = prompt.prompt_tokens - fixed - history_tokens
    return int((prompt.budget_tokens - fixed - overhead) * HISTORY_SHARE)


def test_the_history_share_is_filled_at_every_budget_narrator_included() -> None:
    for narrator in (False, True):
        s, _ = _turns(StateLimits(max_events=60), 90, budget=700, narrator=narrator)
        eng = engine()
        actor = "" if narrator else NPC
        for budget in (700, 1500, 3000, 5000, 8000, 3000, 1000):
            spec = RunSpec("s1", actor, NarrateInput("The door bangs.", (PLAYER,)))
            p = prepare(eng, s, spec, budget=budget)  # a run: its window is remembered
            held = next(x.tokens for x in p.prompt.sections if x.name == "history")
            if any(o.section == "history" and o.kind == "world_event" and "cap" not in o.reason
                   for o in p.prompt.left_out):  # fmt: skip
                assert held >= FILL_MIN * _share(p.prompt), (narrator, budget, held, _share(p.prompt))
            p.record("The door settles.", interrupted=False, run_id=f"b{budget}")


def _reasons(prompt) -> set[str]:
    return {o.reason for o in prompt.left_out if o.section == "history"}


def test_each_reason_the_history_gives_is_what_happened() -> None:
    limits = StateLimits(max_events=12)
    s, prompts = _turns(limits, 30, budget=900)
    eng = engine()
    # Ranked this turn: the narrator's first prompt ranks its window; past the cap it leaves
    # out the oldest quarter of the events held, which leave within the next few events.
    first = prepare(eng, s, RunSpec("s1", "", NarrateInput("Rain.", (PLAYER,))), budget=500, preview=True)
    assert "ranked below what the history share holds" in _reasons(first.prompt)
    leaving = [o for o in first.prompt.left_out if o.reason.startswith("about to leave")]
    assert [o.count for o in leaving] == [12 // 4]
    # Kept: a window that still fits is extended, and what it left out is said to be so.
    kept = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("And now?")), budget=900, preview=True)
    assert "outside the window an earlier prompt held, kept for its cached prefix" in _reasons(kept.prompt)
    assert "ranked below what the history share holds" not in _reasons(kept.prompt)
    # The cap: 18 events left it, and the prompt says so.
    cap = [o for o in kept.prompt.left_out if "events cap" in o.reason]
    assert [o.count for o in cap] == [18] and s.world.events_dropped == 18
    # Background: an event elsewhere that involves neither the actor nor a player.
    for i in range(30):
        World().event(f"In the yard, horse {i} stamps and snorts at the rain for a while.", at=YARD).onto(s, limits)
    World().entity(NPC, "character", "Bram", at=YARD, description="The innkeeper.").onto(s, limits)
    World().entity(NPC, "character", "Bram", at=INN, description="The innkeeper.").onto(s, limits)
    # Compaction and the transcript cap: what a summary holds, and what was dropped unsummarised.
    s.summaries[NPC] = TranscriptSummary("Mira asked who came in; Bram told her.", summarised=6, dropped=2)
    last = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("Still raining?")), budget=900, preview=True)
    reasons = _reasons(last.prompt)
    assert "compacted: the transcript summary holds them" in reasons
    assert "past the transcript cap ([transcripts] max_entries) before a summary held them" in reasons


def test_a_compaction_leaves_no_stale_timeline_behind() -> None:
    """Each compaction replaces the transcript list; a timeline keyed by that list stayed
    cached (hundreds of items each) after every compaction: RSS grew all session."""
    s, eng = inn().session(), engine()
    for turn in range(40):
        World().event(f"Turn {turn}: a traveller comes in.", at=INN).onto(s)
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(f"Who is that ({turn})?")), budget=1500)
        p.record(f"A traveller ({turn}).", interrupted=False, run_id=str(turn))
        if turn % 5 == 4:  # what the store does on a compaction: a new, shorter list
            s.transcripts[NPC] = s.transcripts[NPC][4:]
            old = s.summaries.get(NPC) or TranscriptSummary()
            s.summaries[NPC] = TranscriptSummary("Travellers came.", old.summarised + 4, old.dropped)
    # One timeline, one event list and one merge for the one actor and input kind.
    assert len(eng.timelines) == 3


def test_a_line_renders_by_what_this_input_names_not_what_an_earlier_one_did() -> None:
    """Issue 31: "player_1 says" in the original's prompt, "someone says" in its import's.
    A dialogue names its speaker, who is then perceivable; the rendered history was cached
    without that, so the next input (naming nobody) reused "player_1 says", while a fresh
    engine (an imported session) rendered "someone says". The player is elsewhere here."""
    from sidecar.state import codec

    s = inn().entity(PLAYER, "player", "Mira", at=YARD, description="A ranger.").session()
    eng = engine()
    for i in range(2):
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(f"Hello {i}?", PLAYER)))
        p.record(f"Hi {i}.", interrupted=False, run_id=str(i))
    spec = RunSpec("s1", NPC, NarrateInput("Bram sighs."))
    here = prepare(eng, s, spec, preview=True).prompt
    copy = codec.import_blob(codec.export_blob(s))
    fresh = prepare(engine(), copy, spec, preview=True).prompt
    assert here.messages == fresh.messages
    assert 'someone says: "Hello 0?"' in "\n".join(history(here.messages))
