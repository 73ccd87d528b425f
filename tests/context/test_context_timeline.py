"""Issue 15, items 4-8: world events in the history share, a setting that does not
follow the focus, the memory bank filling its share, a crowd ranked by the input,
and the model's prompt format counted in the budget."""

from __future__ import annotations

from ctxhelpers import all_text, count_messages, engine, prepare, tiktoken_counter
from world import HIDDEN, World, anchor_tavern

from sidecar.context.contract import DialogueInput, NarrateInput, RunSpec
from sidecar.state.model import Memory

NPC = "npc-maerwyn-7"
PLAYER = "player-one-1"
TAVERN = "loc-tavern-01"


def _tavern_with_events(n: int):
    """The anchor tavern with only these `n` events, one delta (revision) each."""
    s = anchor_tavern()
    s.world.events.clear()
    world = World()
    for i in range(n):
        world.then().event(f"Tavern event {i:02d}: a patron spills ale.", at=TAVERN, about=[PLAYER] if i % 2 else [])
    return world.onto(s)


def _left_out(prompt, section: str, kind: str) -> int:
    return sum(x.count for x in prompt.left_out if x.section == section and x.kind == kind)


# -- item 4: perceivable world events in the history share -------------------------------------


def test_every_perceivable_event_reaches_the_history_when_it_fits() -> None:
    s = _tavern_with_events(50)
    # One the actor cannot perceive: elsewhere, involving nobody it sees.
    far = World().entity("loc-far-02", "location", "Far away")
    far.then().event("A secret meeting far away.", at="loc-far-02")
    far.then().event("Hidden plotting.", visibility=HIDDEN).onto(s)
    p = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("What happened tonight?")), budget=7680)
    text = all_text(p.prompt.messages)
    assert all(f"Tavern event {i:02d}" in text for i in range(50))
    assert "secret meeting" not in text and "Hidden plotting" not in text
    # In order, as history turns, the newest last, right before the volatile block.
    history = [m["content"] for m in p.prompt.messages[1:-1]]
    assert history == [f"Event: Tavern event {i:02d}: a patron spills ale." for i in range(50)]
    assert "## Earlier events" not in text
    assert p.prompt.left_out == []
    assert count_messages(p.prompt.messages) == p.prompt.prompt_tokens <= 7680


def test_events_and_turns_interleave_in_order_and_each_turn_extends_the_last() -> None:
    s, eng = _tavern_with_events(3), engine()
    previous = None
    for turn in range(6):
        if turn % 2:
            # The game reports something while the dialogue goes on.
            World().event(f"Thunder number {turn}.", at=TAVERN).onto(s)
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(f"Line {turn}?")))
        msgs = p.prompt.messages
        if previous is not None:
            assert msgs[: len(previous) - 1] == previous[:-1]
        previous = msgs
        p.record(f"Reply {turn}.", interrupted=False, run_id=str(turn))
    history = [m["content"] for m in previous[1:-1]]
    assert history.index("Event: Thunder number 1.") < history.index('player_1 says: "Line 1?"')
    assert history.index("Reply 0.") < history.index("Event: Thunder number 1.")
    assert history.index("Reply 2.") < history.index("Event: Thunder number 3.")
    assert history.index("Event: Thunder number 3.") < history.index('player_1 says: "Line 3?"')


def test_narrated_event_appears_once() -> None:
    s, eng = _tavern_with_events(2), engine()
    text = "The guard drops his spear."
    World().event(text, at=TAVERN, about=["npc-guard-33"]).onto(s)
    p = prepare(eng, s, RunSpec("s1", "", NarrateInput(text, ("npc-guard-33",))))
    p.record("Clang.", interrupted=False, run_id="n1")
    q = prepare(eng, s, RunSpec("s1", "", NarrateInput("Silence.", ("npc-guard-33",))))
    assert all_text(q.prompt.messages).count("drops his spear") == 1


def test_what_the_history_leaves_out_is_reported_background_first() -> None:
    s = _tavern_with_events(40)
    # Background: visible (no place, involves a visible character) but involving neither the actor nor a player.
    rumours = World()
    for i in range(10):
        rumours.then().event(f"Background rumour {i}.", about=["npc-guard-33"])
    rumours.onto(s)
    whole = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("And?")), budget=8000)
    assert "Background rumour 3" in all_text(whole.prompt.messages) and whole.prompt.left_out == []
    p = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("And?")), budget=1100)
    text = all_text(p.prompt.messages)
    kept = sum(f"Tavern event {i:02d}" in text for i in range(40))
    assert 0 < kept < 40
    assert "Background rumour" not in text.replace("Background rumour 9", "")  # the newest is the last event
    reasons = {(x.section, x.kind, x.reason): x.count for x in p.prompt.left_out}
    background = [c for (sec, kind, why), c in reasons.items() if sec == "history" and why.startswith("background")]
    assert background == [9]
    assert _left_out(p.prompt, "history", "world_event") == 9 + (40 - kept)
    history = next(x for x in p.prompt.sections if x.name == "history")
    assert history.trimmed and "left out" in history.reason
    assert count_messages(p.prompt.messages) <= 1100


# -- item 5: the stable setting does not follow the focus ------------------------------------


def test_narrator_setting_is_the_same_whatever_the_event_involves() -> None:
    s, eng = anchor_tavern(), engine()
    systems = []
    for ids in ((PLAYER,), ("npc-guard-33", NPC), ("item-key-0042",), (PLAYER, "npc-guard-33")):
        p = prepare(eng, s, RunSpec("s1", "", NarrateInput("Something happens.", ids)))
        systems.append(p.prompt.messages[0]["content"])
        last = p.prompt.messages[-1]["content"]
        for eid in ids:
            assert f"Focus: {s.aliases.by_id[eid]}" in last  # what the event brings is in the volatile block
    assert len(set(systems)) == 1
    assert "Present: npc_2 (Bored guard)" in systems[0] and "Player: player_1 (Aria)" in systems[0]


def test_focus_on_someone_described_in_the_setting_does_not_repeat_the_description() -> None:
    s = anchor_tavern()
    p = prepare(engine(), s, RunSpec("s1", "", NarrateInput("Aria stands.", (PLAYER,))))
    last = p.prompt.messages[-1]["content"]
    assert "Focus: player_1 (Aria) [hp: 12; max_hp: 20]" in last
    assert "young sellsword" not in last and "young sellsword" in p.prompt.messages[0]["content"]


# -- item 7: the memory bank fills its share; a crowd is ranked by the input -------------------


def test_memory_bank_holds_as_many_matching_memories_as_fit() -> None:
    memories = World()
    for i in range(30):
        memories.then().memory(NPC, f"The silk trader number {i} cheated me.")
    s = memories.then().memory(NPC, "Nothing to do with it.").onto(anchor_tavern())
    p = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("Any news of the silk trader?")), budget=4000)
    last = all_text(p.prompt.messages)
    assert sum(f"silk trader number {i} cheated" in last for i in range(30)) == 30
    assert "Aria paid twice for the silk." in last and "Nothing to do with it" not in last
    small = prepare(engine(), s, RunSpec("s1", NPC, DialogueInput("Any news of the silk trader?")), budget=600)
    lines = all_text(small.prompt.messages).splitlines()
    shown = sum(line.startswith("- ") and ("cheated me" in line or "paid twice" in line) for line in lines)
    assert 0 < shown < 31
    assert _left_out(small.prompt, "memory", "memory") == 31 - shown  # 31 memories match
    assert count_messages(small.prompt.messages) <= 600


def test_a_crowd_past_the_cap_keeps_those_the_input_is_about() -> None:
    crowd = World()
    for i in range(40):
        description = "A sailor." if i != 37 else "A one-eyed smuggler."
        crowd.entity(f"npc-extra-{i:03d}", "character", f"Patron{i}", description=description, at=TAVERN)
    s = crowd.onto(anchor_tavern())
    eng = engine()
    p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("Who is Patron35, and where is the smuggler?")))
    setting = p.prompt.messages[0]["content"]
    assert "(Patron35)" in setting and "one-eyed smuggler" in setting
    assert sum(line.startswith("Present: ") for line in setting.splitlines()) == 24
    assert _left_out(p.prompt, "setting", "character") == 41 - 24
    # Those kept read in world order (the setting is part of the cached prefix).
    present = [line for line in setting.splitlines() if line.startswith("Present: ")]
    assert present.index(next(x for x in present if "(Patron35)" in x)) < present.index(
        next(x for x in present if "smuggler" in x)
    )


# -- item 8: the model's prompt format is counted -----------------------------------------------


def test_the_local_models_example_block_is_inside_an_explicit_budget() -> None:
    from sidecar.llm.local_prompt import EXAMPLE, format_prompt

    count = tiktoken_counter()
    s = _tavern_with_events(60)
    for budget in (700, 900, 1500, 3000):
        spec = RunSpec("s1", NPC, DialogueInput("Tell me everything."))
        p = prepare(engine(), s, spec, budget=budget, framing=EXAMPLE)
        sent = format_prompt(p.prompt.messages)
        assert count(sent) <= p.prompt.prompt_tokens <= budget
        framing = [x for x in p.prompt.sections if x.name == "model_format"]
        assert len(framing) == 1 and framing[0].tokens >= count(EXAMPLE)
        assert p.prompt.prompt_tokens == count_messages(p.prompt.messages) + framing[0].tokens


def test_the_gateway_names_the_local_formats_extra_text_and_nothing_for_chat_apis() -> None:
    from sidecar.config import Config, ModelProfile
    from sidecar.llm import ModelGateway
    from sidecar.llm.local_prompt import EXAMPLE

    gateway = ModelGateway(Config(profiles={"api": ModelProfile(model="openai/x")}, default_profile="api"))
    assert gateway.framing_text("local") == EXAMPLE
    assert gateway.framing_text("api") == ""


def test_memory_block_keeps_what_it_held_and_recalls_the_inputs_best_in_the_volatile_block() -> None:
    """The memory block sits before the history: a new topic does not reshuffle it while
    what it holds is still relevant to the recent actions; the input's best memories it
    lacks come in the volatile block."""
    s, eng = anchor_tavern(), engine()
    for i in range(40):
        s.world.memories.append(Memory(actor_id=NPC, text=f"The silk bale {i} was damp.", revision=10 + i))
    s.world.memories.append(Memory(actor_id=NPC, text="The lighthouse keeper owes me money.", revision=90))
    first = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("How is the silk?")), budget=1200)
    first.record("Damp, mostly.", interrupted=False, run_id="1")
    second = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("And the lighthouse keeper?")), budget=1200)
    assert second.prompt.messages[0] == first.prompt.messages[0]  # same memory block: the prefix holds
    assert "The silk bale" in first.prompt.messages[0]["content"]
    last = second.prompt.messages[-1]["content"]
    assert "## This brings to mind\n- The lighthouse keeper owes me money." in last
    assert any(x.section == "memory" and x.kind == "memory" for x in first.prompt.left_out)
    assert count_messages(second.prompt.messages) <= 1200


# -- item 6: what a turn brings stays out of the cached prefix ---------------------------------


def test_a_newly_triggered_lore_card_enters_the_history_behind_its_line() -> None:
    """A card triggered mid-dialogue would re-cache the whole history if it entered the
    system message: it is sent once, right after the line that triggered it, and from
    the next turn on the history holds it there, so each prompt extends the last."""
    s, eng = anchor_tavern(), engine()
    s.world.events.clear()  # a new world event opens the next turn instead of the line
    previous = None
    card = "## Lore\n### The Dragon\nA red dragon sleeps"
    for turn, line in enumerate(["Evening.", "Busy night?", "Any word of the dragon?", "Go on.", "And then?"]):
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(line)))
        msgs = p.prompt.messages
        if previous is not None:
            assert msgs[: len(previous) - 1] == previous[:-1], turn
            # What the last prompt sent after its history opens this one's new turn.
            said = msgs[len(previous) - 1]["content"]
            assert previous[-1]["content"].startswith(said + "\n\n"), turn
        assert "A red dragon sleeps" not in msgs[0]["content"]
        sections = {x.name: x for x in p.prompt.sections}
        if turn == 2:
            assert msgs[-1]["content"].startswith('player_1 says: "Any word of the dragon?"\n\n' + card)
            # Issue 23: the directly relevant memory is not held back the turn a card enters;
            # it follows the card, and the history holds both with the line from then on.
            assert "lore_new" in sections
            assert "## This brings to mind\n- The dragon burned my caravan." in msgs[-1]["content"]
            assert not any(x.section == "memory" for x in p.prompt.left_out)
        if turn > 2:
            assert card not in msgs[-1]["content"] and "lore_new" not in sections
            assert any(m["content"].startswith('player_1 says: "Any word of the dragon?"\n\n' + card) for m in msgs)
        previous = msgs
        p.record(f"Reply {turn}.", interrupted=False, run_id=str(turn))


def test_lore_sent_with_a_line_that_was_never_recorded_waits_again() -> None:
    """The run failed before recording: the history has no such line, so the card is sent again."""
    s, eng = anchor_tavern(), engine()
    for turn, line in enumerate(["Evening.", "Busy night?"]):
        prepare(eng, s, RunSpec("s1", NPC, DialogueInput(line))).record(f"R{turn}.", interrupted=False, run_id="r")
    first = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("Any word of the dragon?")))
    assert "A red dragon sleeps" in first.prompt.messages[-1]["content"]
    again = prepare(eng, s, RunSpec("s1", NPC, DialogueInput("Hello? The dragon?")))
    assert again.prompt.messages[-1]["content"].startswith('player_1 says: "Hello? The dragon?"\n\n## Lore\n')
    assert all("A red dragon sleeps" not in m["content"] for m in again.prompt.messages[:-1])


def test_waiting_lore_joins_the_block_when_the_history_window_moves() -> None:
    s, eng = anchor_tavern(), engine()
    moved_with_card = False
    previous = None
    for turn in range(40):
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(f"The dragon, part {turn}: tell me more.")), budget=1200)
        msgs = p.prompt.messages
        assert count_messages(msgs) <= 1200
        if previous is not None and msgs[: len(previous) - 1] != previous[:-1]:
            # The window moved: the prefix re-caches anyway, so the card is in the block now.
            assert "A red dragon sleeps" in msgs[0]["content"]
            assert "A red dragon sleeps" not in msgs[-1]["content"]
            moved_with_card = True
        previous = msgs
        p.record(f"Part {turn}: the wyrm sleeps under the hill, they say.", interrupted=False, run_id=str(turn))
    assert moved_with_card


def test_a_new_window_starts_with_room_to_grow() -> None:
    """A long event log fills the history at once (issue 23: a first window fills 90% of
    the history's allowance, no longer 60%); the window moves at most once in the next
    turns, and after a move the following turns append."""
    s, eng = _tavern_with_events(200), engine()
    extended = 0
    previous = None
    for turn in range(10):
        p = prepare(eng, s, RunSpec("s1", NPC, DialogueInput(f"And then, {turn}?")), budget=3000)
        msgs = p.prompt.messages
        if turn == 0:
            assert count_messages(msgs) >= 0.9 * 3000
        extended += previous is not None and msgs[: len(previous) - 1] == previous[:-1]
        previous = msgs
        p.record(f"Then more ale, {turn}.", interrupted=False, run_id=str(turn))
    assert extended >= 8
