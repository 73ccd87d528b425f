"""Issue 23 (the budget/layout/selection side): the scene before the story's texts,
shares filled, relevance-ranked history, memories that fill their share, narration
fixes, and a session imported from its own export building the same prompts.
Each test failed on the code before the fix."""

from __future__ import annotations

from ctxhelpers import all_text, count_messages, engine, prepare
from world import ANCHOR, ARIA, MAERWYN, World, anchor_tavern, known_to

from sidecar.context.contract import DialogueInput, NarrateInput, RunSpec
from sidecar.state import codec
from sidecar.state.model import PersonaTemplate

HOLLIS = "npc-hollis-12"


def _crowded_tavern():
    """The anchor tavern as the audit rebuilt it: 15 characters, 50 events (the oldest
    about Captain Hollis, the watch captain), long story texts."""
    world = World().entity(HOLLIS, "character", "Captain Hollis", at=ANCHOR, description="Captain of the watch.")
    for i in range(13):
        world.entity(f"npc-patron-{i:02d}", "character", f"Patron {i}", at=ANCHOR, description=f"A dockhand, {i}.")
    world.story(
        plot_essentials="The king's seal was stolen. " + "The guilds argue over the harbour tolls. " * 25,
        story_summary="Aria arrived by ship. " + "Days passed in rain and rumour along the quays. " * 40,
    )
    for i in range(6):
        world.then().event(f"{HOLLIS} posts watchmen at the door, order {i}.", actor=HOLLIS, at=ANCHOR)
    for i in range(44):
        world.then().event(f"npc-patron-{i % 13:02d} sings a sea shanty about the tides, verse {i}.", at=ANCHOR)
    world.then().event("Thunder rolls over Veldria.")
    s = anchor_tavern()
    s.world.events.clear()
    return world.onto(s)


def test_the_scene_is_kept_at_small_budgets_before_the_story_texts() -> None:
    s = _crowded_tavern()
    for budget in (500, 800, 1200):
        p = prepare(engine(), s, RunSpec("s1", MAERWYN, DialogueInput("Who keeps the watch?")), budget=budget)
        text = all_text(p.prompt.messages)
        assert count_messages(p.prompt.messages) <= budget
        for line in ("Location: loc_1 (The Rusty Anchor)", "Conditions: time_of_day: dusk", "You are npc_1 [hp: 30",
                     "Player: player_1 [hp: 12", "Present: ", "Thunder rolls over Veldria"):  # fmt: skip
            assert line in text, (budget, line)
        sections = {x.name: x for x in p.prompt.sections}
        assert not sections["scene"].dropped and not sections["setting"].dropped
        assert sections["story_summary"].dropped or sections["story_summary"].trimmed, budget
        # What was cut is said in left_out, also a part trimmed by lines.
        for name in ("setting", "plot_essentials", "story_summary"):
            sec = sections.get(name)
            if sec is not None and (sec.trimmed or sec.dropped):
                assert any(x.section == name and x.count > 0 for x in p.prompt.left_out), (budget, name)


def test_the_history_fills_its_share_and_ranks_by_relevance_to_the_input() -> None:
    s = _crowded_tavern()
    p = prepare(engine(), s, RunSpec("s1", MAERWYN, DialogueInput("What of the watch captain?")), budget=1500)
    text = all_text(p.prompt.messages)
    # The older events about the captain beat newer unrelated ones.
    assert all(f"order {i}." in text for i in range(6))
    assert "verse 0." not in text and any(x.section == "history" for x in p.prompt.left_out)
    assert "Thunder rolls over Veldria" in text  # the last event, always
    assert count_messages(p.prompt.messages) >= 0.9 * 1500
    assert count_messages(p.prompt.messages) <= 1500


def _silk_memories(n: int):
    s = anchor_tavern()
    world = World()
    for i in range(n):
        world.then().memory(MAERWYN, f"Silk bale number {i} went missing from the quay.")
    return world.onto(s)


def _reasons_are_true(prompt) -> None:
    """A memory left out "memory share full" means a memory part was cut by its share."""
    full = [x for x in prompt.left_out if x.section == "memory" and "memory share full" in x.reason]
    cut = [x for x in prompt.sections if x.name in ("memory", "memory_recall") and (x.trimmed or x.dropped)]
    assert not full or cut, (prompt.left_out, prompt.sections)


def test_memories_fill_their_share_in_a_continuing_dialogue() -> None:
    s, eng = _silk_memories(12), engine()
    for turn, line in enumerate(["Evening.", "Busy night?"]):
        prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput(line))).record(f"R{turn}.", interrupted=False, run_id="r")
    p = prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Where did the silk go?")))
    _reasons_are_true(p.prompt)
    text = all_text(p.prompt.messages)
    assert all(f"Silk bale number {i} " in text for i in range(12))
    assert not any(x.section == "memory" for x in p.prompt.left_out)
    # The next turn: the history holds them with the line, they are not sent again.
    p.record("Gone, all of it.", interrupted=False, run_id="r2")
    q = prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("And the silk merchant?")))
    assert all(all_text(q.prompt.messages).count(f"Silk bale number {i} ") == 1 for i in range(12))


def test_memories_left_out_say_true_reasons() -> None:
    s, eng = _silk_memories(300), engine()
    # A continuing dialogue: the block holds what the first turn matched.
    prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Evening.")), budget=1200).record(
        "R.", interrupted=False, run_id="r"
    )
    p = prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Where did the silk go?")), budget=1200)
    _reasons_are_true(p.prompt)
    memory = [x for x in p.prompt.left_out if x.section == "memory"]
    assert memory and all("memory share full" in x.reason or "best matches ranked" in x.reason for x in memory)
    text = all_text(p.prompt.messages)
    shown = text.count("Silk bale number") + ("paid twice for the silk" in text)
    assert shown + sum(x.count for x in memory) == 301  # with Maerwyn's own silk memory


def test_the_narrator_can_be_given_memories() -> None:
    from sidecar.config import StateLimits
    from sidecar.state import ops as o
    from sidecar.state.model import Memory
    from sidecar.state.validate import validate_batch

    s = anchor_tavern()
    # The wire's validation accepted no empty actor ID, though the narrator is actor "".
    validate_batch(s.world, [o.RecordMemory(Memory(actor_id="", text="The great flood."))], StateLimits())
    World().memory("", "The narrator recalls the great flood.").onto(s)
    p = prepare(engine(), s, RunSpec("s1", "", NarrateInput("The flood waters rise.", (ARIA,))))
    assert "The narrator recalls the great flood." in all_text(p.prompt.messages)


def test_the_narrated_event_is_sent_once() -> None:
    s = anchor_tavern()
    World().event("The guard drops his spear.", at=ANCHOR, about=["npc-guard-33"]).onto(s)
    p = prepare(engine(), s, RunSpec("s1", "", NarrateInput("The guard drops his spear.", ("npc-guard-33",))))
    assert all_text(p.prompt.messages).count("drops his spear") == 1


def test_the_narrator_scene_follows_the_event_place_not_the_first_entity_named() -> None:
    s = anchor_tavern()
    World().entity("loc-forest-02", "location", "Dark Forest").entity(
        "npc-wolf-5", "character", "Grey wolf", at="loc-forest-02"
    ).then().event("A howl is heard; the wolf is far away.", at=ANCHOR, about=["npc-wolf-5"]).onto(s)
    eng = engine()
    near = prepare(eng, s, RunSpec("s1", "", NarrateInput("Aria sits down.", (ARIA,))))
    far = prepare(eng, s, RunSpec("s1", "", NarrateInput("A howl is heard; the wolf is far away.", ("npc-wolf-5",))))
    assert "Location: loc_1 (The Rusty Anchor)" in far.prompt.messages[0]["content"]
    assert far.prompt.messages[0] == near.prompt.messages[0]  # the cached prefix holds


def test_items_the_player_carries_are_visible_to_the_narrator() -> None:
    s = anchor_tavern()
    World().entity("item-sword-9", "item", "iron sword", at=ARIA).entity("npc-goblin-1", "character", "Goblin",
                                                                         at=ANCHOR).onto(s)  # fmt: skip
    event = 'do(player-one-1, "attack")~"with item-sword-9"->target(npc-goblin-1)->damage(15)'
    p = prepare(engine(), s, RunSpec("s1", "", NarrateInput(event, (ARIA, "npc-goblin-1"))))
    text = all_text(p.prompt.messages)
    sword = s.aliases.by_id["item-sword-9"]
    assert f'"with {sword}"' in text and "with something" not in text
    assert f"{sword} (iron sword)" in text
    # Only what is public: a carried thing the game keeps from the narrator stays out.
    World().entity("item-letter-3", "item", "secret letter", at=ARIA, visibility=known_to(ARIA)).onto(s)
    p = prepare(engine(), s, RunSpec("s1", "", NarrateInput("Aria waits.", (ARIA,))))
    assert "secret letter" not in all_text(p.prompt.messages)


def test_the_narrator_gets_one_length_instruction_with_tone_and_senses() -> None:
    s = anchor_tavern()
    p = prepare(engine(), s, RunSpec("s1", "", NarrateInput("Aria sits down.", (ARIA,))))
    system = p.prompt.messages[0]["content"]
    assert system.count("sentences") == 1
    assert "tone" in system and "smell" in system


def test_the_persona_is_rebuilt_only_when_what_it_renders_changes() -> None:
    s, eng = anchor_tavern(), engine()
    prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Hello.")))
    before = eng.personas.builds
    World().event("A gull screeches outside.", at=ANCHOR).onto(s)
    prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Hello again.")))
    assert eng.personas.builds == before
    # A template that shows the last event is rebuilt.
    World().persona(MAERWYN, PersonaTemplate(identity="You are {npcName}. Just now: {lastEvent}")).onto(s)
    prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Hello.")))
    built = eng.personas.builds
    World().event("A bell rings.", at=ANCHOR).onto(s)
    p = prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput("Hello.")))
    assert eng.personas.builds == built + 1 and "Just now: A bell rings." in p.prompt.messages[0]["content"]


def test_an_imported_session_previews_byte_identical_prompts() -> None:
    s, eng = _crowded_tavern(), engine()
    World().memory(MAERWYN, "The watch captain owes me silk.").lore(
        "lore-watch", "The Watch", "The harbour watch answers to the crown.", triggers=["watch"]
    ).onto(s)
    lines = ["Evening.", "Is the watch about?", "The silk, again?", "Who is the captain?", "Go on."]
    for turn, line in enumerate(lines):
        p = prepare(eng, s, RunSpec("s1", MAERWYN, DialogueInput(line)), budget=1500)
        p.record(f"Reply {turn}.", interrupted=False, run_id=str(turn))
        World().event(f"A patron leaves, {turn}.", at=ANCHOR).onto(s)
    narr = prepare(eng, s, RunSpec("s1", "", NarrateInput("The door bangs.", (ARIA,))), budget=1500)
    narr.record("Wind howls in.", interrupted=False, run_id="n")
    copy = codec.import_blob(codec.export_blob(s))
    for actor, inp in ((MAERWYN, DialogueInput("And the watch captain's silk?")), ("", NarrateInput("Rain.", ()))):
        a = prepare(eng, s, RunSpec("s1", actor, inp), budget=1500, preview=True).prompt
        b = prepare(engine(), copy, RunSpec("s1", actor, inp), budget=1500, preview=True).prompt
        assert a.messages == b.messages and a.left_out == b.left_out


def test_lore_a_narration_triggers_is_cached_from_its_second_turn() -> None:
    s, eng = anchor_tavern(), engine()  # its world event gives the first prompt a history
    card = "A red dragon sleeps under the hill."
    previous = None
    for turn, text in enumerate(["Aria sits down.", "A dragon roars beyond the hill.", "Silence.", "Rain falls."]):
        p = prepare(eng, s, RunSpec("s1", "", NarrateInput(text, (ARIA,))))
        msgs = p.prompt.messages
        if previous is not None:
            assert msgs[: len(previous) - 1] == previous[:-1], turn  # each prompt extends the last
        if turn == 1:
            assert card in msgs[-1]["content"]  # sent once, uncached, after the event it came with
        if turn > 1:
            assert card not in msgs[-1]["content"] and all_text(msgs).count(card) == 1, turn
        previous = msgs
        p.record(f"Narration {turn}.", interrupted=False, run_id=str(turn))


def test_a_prompt_state_from_a_blob_that_claims_too_much_is_ignored() -> None:
    from sidecar.context import prefix_state
    from sidecar.context.window import Selection

    s = anchor_tavern()
    baseline = prepare(engine(), s, RunSpec("s1", MAERWYN, DialogueInput("Hi.")), preview=True).prompt
    prefix_state.write(s, MAERWYN, prefix_state.PrefixState(Selection((0, 1, 2), (), 10**9, 0)))
    assert prefix_state.read(s, MAERWYN) == prefix_state.PrefixState()
    # Runs that claim a billion items within an end the session could have reached.
    s.world.events_dropped = 10**9
    prefix_state.write(s, MAERWYN, prefix_state.PrefixState(Selection((), (10**9,), 0, 10**9 + 1)))
    raw = bytearray(s.prompt_state[MAERWYN])
    assert prefix_state.read(s, MAERWYN).history is not None  # a true one reads
    s.prompt_state[MAERWYN] = prefix_state._enc.encode([[], [[0, 10**9]], [0, 10**9], [], [], []])
    assert prefix_state.read(s, MAERWYN) == prefix_state.PrefixState()
    s.prompt_state[MAERWYN], s.world.events_dropped = bytes(raw), 0
    s.prompt_state[MAERWYN] = b"\xc1 not msgpack"
    assert prepare(engine(), s, RunSpec("s1", MAERWYN, DialogueInput("Hi.")), preview=True).prompt == baseline
