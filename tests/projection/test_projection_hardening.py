"""Issue 24, the privacy guard and projection class (items 1, 5, 6, 9, 10;
docs/privacy.md is the contract):

1. an engine ID inside an issued alias (`pc_1` in `npc_1`) or inside the
   project's own words ("Identity", "Involved") is not a leak: such sessions run;
5. text the projection wrote is never matched again ("somewhere" for a hidden
   place is not the place whose ID is `somewhere`);
6. Unicode and case variants of an ID are replaced and caught alike; an ID of
   only whitespace or invisible characters is refused;
9. a stop sequence naming what the actor cannot perceive is dropped;
10. an entity whose ID is `narrator` leaves the default narrator text alone.

Each check here fails on the code before the fix (the guard refused, the text
read as another entity's alias, the variant reached the model verbatim...)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from world import HIDDEN, PUBLIC, World, apply

from sidecar.config import Config, StateLimits
from sidecar.context import ContextEngine
from sidecar.context.contract import ActionOption, DecisionInput, DescribeInput, DialogueInput, NarrateInput, RunSpec
from sidecar.errors import InvalidDelta, PrivacyLeakBlocked
from sidecar.idsearch import BACKEND, IdMatcher
from sidecar.llm.guard import check_outgoing, check_request
from sidecar.projection import Projection
from sidecar.state import ops as o
from sidecar.state.model import Entity, Event, LoreCard, Relation, Visibility
from sidecar.state.validate import validate_batch

ENGINE = ContextEngine(Config())
BACKENDS = sorted({BACKEND, "regex"})


def count(text: str) -> int:
    return len(text) // 3 + 1


def prepare(session, actor: str, inp):
    spec = RunSpec(session_id=session.id, actor_id=actor, input=inp)
    return ENGINE.prepare(session, spec, count_tokens=count, budget_tokens=100_000)


def guard(prepared) -> None:
    """The guard as a run calls it: the prompt, the session's IDs and its aliases."""
    check_outgoing(prepared.prompt.messages, prepared.engine_ids, aliases=prepared.aliases)


def prompt_text(prepared) -> str:
    return "\n".join(m["content"] for m in prepared.prompt.messages)


# -- 1. an ID inside an alias or the project's own words ------------------------------


def party_beside_an_npc():
    """The issue's case: party members pc_1 and pc_2 beside an NPC, whose alias is npc_1."""
    return (
        World()
        .entity("tavern_main_room", "location", "Tavern")
        .entity("pc_1", "player", "Ada", at="tavern_main_room")
        .entity("pc_2", "player", "Bo", at="tavern_main_room")
        .entity("guard_7", "character", "Guard", at="tavern_main_room", description="Watches pc_1 and pc_2.")
        .session("s1")
    )


@pytest.mark.parametrize("actor", ["", "guard_7", "pc_1"])
def test_party_ids_inside_the_npc_alias_do_not_block(actor: str):
    s = party_beside_an_npc()
    assert s.aliases.by_id["guard_7"] == "npc_1"  # holds "pc_1"
    for inp in (
        NarrateInput(text="pc_1 greets guard_7.", entity_ids=("guard_7", "pc_1")),
        DialogueInput(text="Hello, guard_7!", speaker_id="pc_2"),
        DescribeInput(entity_id="guard_7"),
    ):
        prepared = prepare(s, actor, inp)
        text = prompt_text(prepared)
        assert "npc_1" in text
        guard(prepared)  # refused with PRIVACY_LEAK_BLOCKED before the fix


@pytest.mark.parametrize(
    ("engine_id", "kind", "alias"),
    [
        ("layer_1", "player", "player_1"),
        ("oc_1", "location", "loc_1"),
        ("tem_1", "item", "item_1"),
        ("on_1", "faction", "faction_1"),
    ],
)
def test_an_id_inside_any_kind_of_alias_does_not_block(engine_id: str, kind: str, alias: str):
    s = (
        World()
        .entity("the_thing_0", kind, "Thing", description=f"Near {engine_id}.")
        .entity(engine_id, "other", "Other")
        .session("s1")
    )
    assert s.aliases.by_id["the_thing_0"] == alias
    prepared = prepare(s, "", NarrateInput(text="the_thing_0 shines.", entity_ids=("the_thing_0", engine_id)))
    assert alias in prompt_text(prepared)
    guard(prepared)


@pytest.mark.parametrize("word", ["Identity", "Involved", "Situation", "characters", "instructions"])
def test_an_id_that_is_one_of_the_projects_own_words_does_not_block(word: str):
    s = (
        World()
        .entity("room_0001", "location", "Room")
        .entity("npc_guard_01", "character", "Guard", at="room_0001")
        .entity(word, "item", "Book", at="room_0001", description=f"A book called {word}.")
        .session("s1")
    )
    options = (ActionOption(action_id="a1", label="Wait"), ActionOption(action_id="a2", label="Leave"))
    for actor, inp in (
        ("npc_guard_01", DialogueInput(text="What is that?")),
        ("", NarrateInput(text="The guard reads.", entity_ids=("npc_guard_01", word))),
        ("npc_guard_01", DecisionInput(situation="A noise.", options=options)),
    ):
        prepared = prepare(s, actor, inp)
        text = prompt_text(prepared)
        assert f"A book called {word}." not in text  # game text: the ID became the alias
        guard(prepared)


def test_the_guard_still_finds_an_id_outside_an_alias():
    s = party_beside_an_npc()
    p = Projection(s, "")
    for leaked in ("pc_1 waves", "a pc_1", "npc_1 and pc_2", "xnpc_1x pc_1", "PC_1"):
        with pytest.raises(PrivacyLeakBlocked):
            check_outgoing([{"role": "user", "content": leaked}], p.engine_ids, aliases=p.alias_mask)
    # An ID that merely starts like an alias is still an ID ("npc_12" is not inside "npc_1").
    s2 = World().entity("x_guard_01", "character", "G").entity("npc_12", "item", "Cup").session("s2")
    p2 = Projection(s2, "")
    assert s2.aliases.by_id["x_guard_01"] == "npc_1"
    with pytest.raises(PrivacyLeakBlocked):
        check_outgoing([{"role": "user", "content": "the npc_12"}], p2.engine_ids, aliases=p2.alias_mask)


# -- 5. text the projection wrote is never matched again -----------------------------


def test_a_generic_word_is_not_read_back_as_the_place_of_that_id():
    s = (
        World()
        .entity("/Game/Hidden/Vault", "location", "Vault", visibility=HIDDEN)
        .entity("somewhere", "location", "Square")
        .entity("npc_guard_01", "character", "Guard", at="somewhere", description="Came from /Game/Hidden/Vault.")
        .session("s1")
    )
    p = Projection(s, "npc_guard_01")
    square = p.alias("somewhere")
    assert p.text("Came from /Game/Hidden/Vault.") == "Came from somewhere."
    assert p.text("Back to somewhere.") == f"Back to {square}."
    assert square not in p.text("Came from /Game/Hidden/Vault.")


def test_an_alias_written_is_not_searched_for_ids():
    s = party_beside_an_npc()
    p = Projection(s, "guard_7")
    assert p.text("guard_7 stands still.") == "npc_1 stands still."  # not "nplayer_1"
    # A model-written transcript line holds aliases: they are left alone too.
    assert p.text("npc_1 nods to player_1.") == "npc_1 nods to player_1."


def test_a_persona_slot_is_not_projected_twice():
    """The rendered persona (slots filled with aliases) went through the projection
    a second time, so the npcName slot `npc_1` read as "n" + pc_1's alias."""
    s = party_beside_an_npc()
    prepared = prepare(s, "guard_7", DialogueInput(text="Hi"))
    text = prompt_text(prepared)
    assert "You are Guard." in text  # the name slot
    assert "nplayer" not in text
    guard(prepared)


def test_an_id_glued_to_a_replaced_one_is_replaced_in_one_pass():
    s = World().entity("/Game/A", "location", "A").entity("Goblinoid", "character", "G").session("s1")
    p = Projection(s, "")
    assert p.text("/Game/AGoblinoid") == p.alias("/Game/A") + p.alias("Goblinoid")


def test_a_replacement_never_spells_an_id_across_its_seam():
    # pc_1's alias is npc_1; glued to the "2" after it, it would spell the ID npc_12.
    s = World().entity("pc_1", "character", "Ada").entity("npc_12", "item", "Cup").session("s1")
    p = Projection(s, "")
    out = p.text("pc_12")
    assert out == "npc_1 2"
    check_outgoing([{"role": "user", "content": out}], p.engine_ids, aliases=p.alias_mask)


def test_a_generic_word_never_hides_an_id_across_its_seam():
    # Situation is out of sight: it reads "something", an ID too, which would win the
    # overlap with "thing_12" that it spells with the "_12" after it (the guard, which
    # masks generic words, then found thing_12; a hypothesis case of the realistic-ID test).
    s = (
        World()
        .entity("Situation", "other", "S", visibility=HIDDEN)
        .entity("something", "other", "T")
        .entity("thing_12", "character", "U")
        .session("s1")
    )
    p = Projection(s, "")
    out = p.text("Situation_12_sees")
    assert out == "something _12_sees"
    check_outgoing([{"role": "user", "content": out}], p.engine_ids, aliases=p.alias_mask)


GLUE = ["", "", "_", "_1", "_12", "2", "1", "x", "s", " ", ":", "thing", "one", "where", "npc", "pc_"]
ROOTS = ["pc_1", "pc_12", "npc_1", "npc_12", "thing_1", "thing_12", "item_1", "loc_2", "one_2", "where_1"]
WORD_IDS = ["something", "someone", "somewhere", "Situation", "Identity", "narrator", "Blacksmith"]


@settings(max_examples=1500, deadline=None)
@given(
    ids=st.lists(st.sampled_from(ROOTS + WORD_IDS), min_size=1, max_size=7, unique=True),
    hidden=st.sets(st.integers(0, 6)),
    kinds=st.lists(st.sampled_from(["character", "location", "item", "other"]), min_size=7, max_size=7),
    parts=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(GLUE)), min_size=1, max_size=6),
)
def test_projected_text_never_holds_an_id_by_the_guards_rule(ids, hidden, kinds, parts):
    # The class of the two cases above: whatever IDs a text glues together, and
    # whichever of them read as aliases or as generic words, what the projection
    # writes passes the guard (which masks aliases and generic words alike).
    w = World()
    for n, eid in enumerate(ids):
        w.entity(eid, kinds[n], "N", visibility=HIDDEN if n in hidden else PUBLIC)
    p = Projection(w.session("s1"), "")
    text = "".join(ids[n % len(ids)] + glue for n, glue in parts)
    out = p.text(text)
    check_outgoing([{"role": "user", "content": out}], p.engine_ids, aliases=p.alias_mask)


# -- 6. Unicode and case forms of an ID ------------------------------------------------

ASCII_ID = "BP_Goblin_C_7"
WIDE_ID = "Kötter_Hof_01"  # an NFC ID with a composed letter


def variants() -> list[tuple[str, str]]:
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in ASCII_ID)
    return [
        ("upper case", ASCII_ID.upper()),
        ("lower case", ASCII_ID.lower()),
        ("zero-width space", "BP_Gob\u200blin_C_7"),
        ("soft hyphen", "BP_Gob\u00adlin_C_7"),
        ("word joiner and BOM", "BP\u2060_Goblin\ufeff_C_7"),
        ("full-width", fullwidth),
        ("NFD of an NFC ID", unicodedata.normalize("NFD", WIDE_ID)),
        ("compatibility character (Roman numeral one hundred)", "BP_Goblin_\u216d_7"),
    ]


def unicode_world():
    return (
        World()
        .entity("room_0001", "location", "Room")
        .entity(ASCII_ID, "character", "Grub", at="room_0001")
        .entity(WIDE_ID, "location", "Farm")
        .session("s1")
    )


@pytest.mark.parametrize(("what", "written"), variants(), ids=[v[0] for v in variants()])
def test_a_variant_of_an_id_is_replaced_and_caught(what: str, written: str):
    s = unicode_world()
    p = Projection(s, "", named_ids=(ASCII_ID,))
    target = WIDE_ID if "Hof" in unicodedata.normalize("NFKC", written) else ASCII_ID
    assert written != target
    out = p.text(f"Look: {written}!")
    assert out == f"Look: {p.alias(target)}!", what
    check_outgoing([{"role": "user", "content": out}], p.engine_ids, aliases=p.alias_mask)
    with pytest.raises(PrivacyLeakBlocked):
        check_outgoing([{"role": "user", "content": f"Look: {written}!"}], p.engine_ids, aliases=p.alias_mask)
    with pytest.raises(PrivacyLeakBlocked):  # in any field the guard searches
        check_request({"messages": [], "stop": [written]}, p.engine_ids, aliases=p.alias_mask)


def test_variants_through_the_context_engine():
    s = unicode_world()
    for _, written in variants():
        apply(s, o.PatchEntity("room_0001", description=f"Grub once met {written} here."))
        prepared = prepare(s, "", NarrateInput(text=f"{written} laughs.", entity_ids=(ASCII_ID,)))
        text = prompt_text(prepared)
        assert written not in text
        guard(prepared)


@pytest.mark.parametrize("bad", [" ", "\t\n", "\u200b", "\u00ad", "\u200b \ufeff", "\u2060\u200d", "\U000e0041"])
@pytest.mark.parametrize("where", ["entity", "reference", "known_to", "lore", "relation", "event"])
def test_an_id_of_only_whitespace_or_invisible_characters_is_refused(bad: str, where: str):
    s = World().entity("room_0001", "location", "Room").session("s1")
    op: o.Op
    if where == "entity":
        op = o.UpsertEntity(Entity(id=bad, kind="item", name="X"))
    elif where == "reference":
        op = o.UpsertEntity(Entity(id="cup_0001", kind="item", name="Cup", location_id=bad))
    elif where == "known_to":
        op = o.UpsertEntity(Entity(id="cup_0001", kind="item", name="Cup", visibility=Visibility("known_to", (bad,))))
    elif where == "lore":
        op = o.UpsertLoreCard(LoreCard(id=bad, title="T", text="x"))
    elif where == "relation":
        op = o.SetRelation(Relation("room_0001", bad, "owns"))
    else:
        op = o.RecordEvent(Event(text="x", actor_id=bad))
    with pytest.raises(InvalidDelta, match="only whitespace or invisible characters"):
        validate_batch(s.world, [op], StateLimits())


def test_an_id_with_visible_text_around_invisible_characters_is_accepted():
    s = World().entity("room_0001", "location", "Room").session("s1")
    validate_batch(s.world, [o.UpsertEntity(Entity(id="cup\u200b_0001", kind="item", name="Cup"))], StateLimits())


# -- 9. stop sequences naming what the actor cannot perceive -----------------------------


def test_a_stop_sequence_naming_a_hidden_entity_is_dropped():
    s = (
        World()
        .entity("room_0001", "location", "Room")
        .entity("BP_Guard_C_0001", "character", "Guard", at="room_0001")
        .entity("BP_Spy_C_0002", "character", "Spy", at="room_0001", visibility=HIDDEN)
        .entity("BP_Wolf_C_0003", "character", "Wolf", at="elsewhere_0009")
        .entity("elsewhere_0009", "location", "Forest")
        .session("s1")
    )
    prepared = prepare(s, "BP_Guard_C_0001", DialogueInput(text="Hm?"))
    stops = ("BP_Spy_C_0002:", "BP_Guard_C_0001:", "THE END", "BP_Wolf_C_0003 says", "room_0001")
    guard_alias = s.aliases.by_id["BP_Guard_C_0001"]
    room_alias = s.aliases.by_id["room_0001"]
    # The spy (hidden) and the wolf (elsewhere) would read "someone": both dropped.
    assert prepared.stop_sequences(stops) == (f"{guard_alias}:", "THE END", room_alias)


# -- 10. the project's fixed words are not engine IDs ---------------------------------------


@pytest.mark.parametrize("fixed_word", ["narrator", "INVIOLABLE", "Identity"])
def test_an_entity_named_like_a_fixed_word_leaves_the_default_texts_alone(fixed_word: str):
    s = (
        World()
        .entity("room_0001", "location", "Room")
        .entity(fixed_word, "character", "Odo", at="room_0001")
        .entity("npc_guard_01", "character", "Guard", at="room_0001")
        .session("s1")
    )
    alias = s.aliases.by_id[fixed_word]
    narrate = prepare(s, "", NarrateInput(text="Rain.", entity_ids=("room_0001",)))
    text = prompt_text(narrate)
    assert "You are the narrator of this game." in text
    assert "You are still the narrator: concise" in text
    assert f"You are still the {alias}" not in text
    guard(narrate)
    npc = prepare(s, "npc_guard_01", DialogueInput(text="Hi"))
    text = prompt_text(npc)
    assert "INVIOLABLE: Stay in character" in text and "## Identity" in text
    guard(npc)


def test_a_games_template_is_still_projected():
    """Inline and file templates are game text: their IDs still become aliases
    (once: the slots filled afterwards are not searched again)."""
    from sidecar.state.model import PersonaBinding, PersonaTemplate

    s = party_beside_an_npc()
    template = PersonaTemplate(
        identity="You are {npcName}, who guards pc_1.",
        inviolable_rules=["Never hurt pc_2."],
        reminder="Remember pc_1, {npcName}.",
    )
    apply(s, o.SetPersona(PersonaBinding(actor_id="guard_7", inline=template)))
    text = prompt_text(prepare(s, "guard_7", DialogueInput(text="Hi")))
    p1, p2 = s.aliases.by_id["pc_1"], s.aliases.by_id["pc_2"]
    assert f"who guards {p1}." in text and f"Never hurt {p2}." in text and f"Remember {p1}, Guard." in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_fold_alike(backend: str):
    m = IdMatcher([ASCII_ID, WIDE_ID], backend=backend)
    for what, written in variants():
        assert m.find_all(f"x {written} y") == [written], what
    # One folded character holding the end of one ID and the start of another ("ß" is
    # "ss"): the first ID has it, the text is replaced without overlap.
    m = IdMatcher(["ab_s", "s_12x"], backend=backend)
    assert m.sub("ab_ß_12x", lambda i: f"<{i}>") == "<ab_s>_12x"


def test_a_rejection_reasons_own_words_are_not_rewritten():
    """The reason mixes our words with a quoted value: only the value is game text."""
    s = (
        World()
        .entity("room_0001", "location", "Room")
        .entity("npc_guard_01", "character", "Guard", at="room_0001")
        .entity("characters", "item", "Book", at="room_0001")
        .entity("BP_Chest_C_0777", "item", "Chest", at="room_0001")
        .session("s1")
    )
    options = (ActionOption(action_id="a1", label="Wait"), ActionOption(action_id="a2", label="Leave"))
    prepared = prepare(s, "npc_guard_01", DecisionInput(situation="A noise.", options=options))
    long_value = '{"action": "' + "x" * 60 + '"}'
    verdict = prepared.evaluate(long_value, 1)
    assert verdict.reason == '"action" must be an option number, got a text of 60 characters'
    verdict = prepared.evaluate('{"action": "BP_Chest_C_0777"}', 1)
    assert verdict.reason == f'"action" must be an option number, got "{s.aliases.by_id["BP_Chest_C_0777"]}"'
