"""The voice benchmark's checker (scripts/bench/voice_metrics.py, voice_scenes.py, voice_report.py)
on hand-written replies, and the shipped scenes' shape. No sidecar, no model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

from voice_metrics import (  # noqa: E402
    CHECKS,
    alias_hits,
    check_reply,
    echo_hit,
    label_hits,
    markup_hits,
    over_length,
    repeated_ngram,
    sentence_count,
    wrong_names,
)
from voice_report import Reply, pick_verbatim, summarize, table  # noqa: E402
from voice_scenes import load_scenes, problems  # noqa: E402

SCENES = load_scenes(ROOT / "scenes")
IDS = ("pc_1", "NPC_Bram_7f3a", "BP_Goblin_C_2147483647", "/Game/Maps/Tavern.Tavern:PersistentLevel")
EVENT = "The goblin lunges at Søren with a rusty blade."
FIXED = ("You voice characters and narrate events in a video game. The game, not you, decides what is true.",)
GOOD = "Steel rings as Søren turns the rusty blade aside. The goblin stumbles back, snarling."

#: For each check: a reply it must fail (and which passes every other check where it can).
BAD = {
    "empty": "  \n ",
    "alias": "The goblin lunges at npc_3 with a rusty blade.",
    "markup": "**Søren** dodges the blade.",
    "label": "Narration: Søren dodges the blade.",
    "echo": "The goblin lunges at Søren with a rusty blade.",
    "repetition": "Søren dodges the blade and the goblin howls, and Søren dodges the blade again.",
    "over_length": "Søren dodges. The goblin howls. Bram shouts. A chair breaks.",
}


def test_a_good_narration_passes_every_check() -> None:
    assert check_reply(GOOD, "narration", IDS, [EVENT], FIXED) == {}


@pytest.mark.parametrize("check", CHECKS)
def test_each_check_fails_its_bad_example(check: str) -> None:
    found = check_reply(BAD[check], "narration", IDS, [EVENT], FIXED)
    assert check in found, found


@pytest.mark.parametrize("reply", [
    "Bram wipes his hands. pc_1 stands there.", "NPC_Bram_7f3a frowns.", "loc_2 is quiet.",
    "He stares at /Game/Maps/Tavern.Tavern:PersistentLevel.",
])
def test_aliases_and_engine_ids_are_found(reply: str) -> None:
    assert alias_hits(reply, IDS)


def test_names_and_numbers_are_not_aliases() -> None:
    assert alias_hits("Bram pours 3 ales for Søren at 10:30; snake_case words are fine.", IDS) == []


@pytest.mark.parametrize("reply", ["# Scene", "a <b>bold</b> move", "[laughs]", "{\"a\": 1}", "x | y", "`code`",
                                   "One line.\n\nAnother."])
def test_markup_is_found(reply: str) -> None:
    assert markup_hits(reply)


def test_plain_prose_has_no_markup() -> None:
    assert markup_hits("Bram grins. \"Out,\" he says, pointing at the door; the goblins go.\nThen silence.") == []


@pytest.mark.parametrize("reply", ["Event: a goblin.", "He falls. Reply: yes", "Bram: Get out!", "Mireille Dœuf: Non.",
                                   "Ok.\nAnswer: no", "Input: Narrate what happens"])
def test_labels_are_found(reply: str) -> None:
    assert label_hits(reply)


@pytest.mark.parametrize("reply", ["He said: no more.", "At 5:30 the bell rings.", "Bram has one rule: pay first."])
def test_prose_with_a_colon_is_not_a_label(reply: str) -> None:
    assert label_hits(reply) == []


def test_echo_of_the_fixed_text_and_of_the_input() -> None:
    assert echo_hit("Listen: you voice characters and narrate events in a video game, friend.", [], FIXED)
    assert echo_hit("the goblin LUNGES at Søren, with a rusty blade", [EVENT], FIXED)
    assert echo_hit("The goblin lunges. Søren parries with a rusty blade.", [EVENT], FIXED) == ""
    assert echo_hit("You narrate the game.", [], FIXED) == ""  # fewer than 8 words in a row


def test_repetition_counts_word_4grams_only() -> None:
    assert repeated_ngram("on and on and on and on") == "on and on and"
    assert repeated_ngram("The cat sat down. The cat sat up.") == ""
    assert repeated_ngram("The cat sat on it. The cat sat on it.") == "the cat sat on"


def test_sentences_and_length_limits() -> None:
    assert sentence_count("Aye. Get out. Now") == 3
    assert sentence_count("Dr. Fenwick waves.") == 1
    assert over_length("One. Two. Three.", "narration") == ""
    assert over_length("One. Two. Three.", "dialogue")
    assert over_length("word " * 100, "narration")
    assert over_length("Get out of my tavern, goblin!", "dialogue") == ""


def test_wrong_names_flags_only_what_the_actor_cannot_perceive() -> None:
    perceived, others = ["Bram", "Søren", "Lantern Taproom"], ["Ólafur", "Lantern Undercroft"]
    assert wrong_names("Bram tosses Søren out of the Lantern Taproom.", perceived, others, IDS) == []
    assert wrong_names("Ólafur watches from the shadows.", perceived, others, IDS) == ["Ólafur"]
    assert wrong_names("npc_2 nods at Bram.", perceived, others, IDS) == ["npc_2"]
    # A perceived name holding an unperceived one is not a wrong name.
    assert wrong_names("Bramble is quiet.", ["Bramble"], ["Bram"]) == []
    assert wrong_names("Ólafurs are rare.", perceived, others) == []


def test_summary_counts_and_the_verbatim_sample_mixes_good_and_bad() -> None:
    replies = [
        Reply("a", "narration", "", EVENT, text=GOOD, completion_tokens=20, first_token_ms=100.0),
        Reply("a", "narration", "", EVENT, text=BAD["label"], problems={"label": "Narration:"}),
        Reply("b", "dialogue", "NPC_Bram_7f3a", "hi", text="Out!", wrong_names=["Ólafur"]),
        Reply("b", "decision", "NPC_Bram_7f3a", "fight", action_id="strike", sensible="strike"),
        Reply("b", "decision", "NPC_Bram_7f3a", "fight", error="INVALID_CHOICE", sensible="strike"),
        Reply("b", "decision", "NPC_Bram_7f3a", "pay", action_id="pay", parameters={"to": "pc_1"},
              with_parameters={"pay": ["coins", "to"]}),
        Reply("b", "decision", "NPC_Bram_7f3a", "pay", action_id="pay", parameters={"to": "pc_1", "coins": "3"},
              with_parameters={"pay": ["coins", "to"]}),
    ]
    summary = summarize(replies, {"a": 2, "b": 3})
    assert summary["clean_ratio"] == round(2 / 3, 3)
    assert summary["unclean_by_check"] == {**dict.fromkeys(CHECKS, 0), "label": 1, "run_error": 0}
    assert summary["names_right_ratio"] == round(6 / 7, 3)
    assert summary["decisions_valid_ratio"] == 0.75
    assert summary["decisions_with_parameters"] == 0.5  # one came back without its "coins"
    assert summary["decisions_sensible_ratio"] == 0.5
    assert summary["replay_identical_ratio"] is None
    assert "n/a (not replayed)" in table(summary)
    assert summarize(replies, {"a": 2, "b": 3}, (3, 4))["replay_identical_ratio"] == 0.75
    assert [r.clean for r in pick_verbatim(replies, 2)] == [True, False]


def test_the_shipped_scenes_meet_the_shape_rules() -> None:
    assert len(SCENES) >= 4
    assert sum(len(s.events) for s in SCENES) >= 40
    assert {s.id for s in SCENES} == {s.id for s in SCENES if s.tone} and len({s.tone for s in SCENES}) == len(SCENES)
    for scene in SCENES:
        assert problems(scene) == [], scene.path
    ids = [e.id for s in SCENES for e in s.entities]
    assert any(i.startswith("pc_") for i in ids) and "pc_2" in ids
    assert any(not i.startswith("pc_") and i.startswith(("NPC_", "BP_")) for i in ids)
    assert any(i.startswith("/Game/Maps/") for i in ids)
    assert any(not e.name.isascii() for s in SCENES for e in s.entities)
    for scene in SCENES:
        for decision in scene.decisions:
            assert decision.sensible in {o.action_id for o in decision.options}


def test_the_shipped_scenes_take_parameters_of_every_kind_and_the_sidecar_reads_them() -> None:
    import json

    from sidecar.context.action_params import parse_schema

    specs = [spec for s in SCENES for d in s.decisions for o in d.options if o.parameters
             for spec in parse_schema(json.dumps(o.parameters), f"{s.id} {o.action_id}")]  # fmt: skip
    assert {spec.kind for spec in specs} == {"enum", "integer", "string", "entity"} and len(specs) >= 8


def test_problems_catch_a_broken_scene(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text(
        '{"player": "pc_1", "entities": [{"id": "pc_1", "kind": "player", "name": "A", "location": "nowhere"}],'
        ' "events": [{"text": "x", "entity_ids": ["ghost"]}],'
        ' "decisions": [{"actor": "pc_1", "options": [{"action_id": "a"}], "sensible": "b"}]}',
        encoding="utf-8",
    )
    found = " / ".join(problems(load_scenes(tmp_path)[0]))
    for expected in ("unknown location", "unknown entity 'ghost'", "fewer than 2 options", "sensible 'b'",
                     "places, fewer", "events, fewer"):
        assert expected in found, found


def test_names_match_without_their_diacritics() -> None:
    assert wrong_names("Olafur peers out of the trapdoor.", ["Bram"], ["Ólafur"]) == ["Ólafur"]
    assert wrong_names("Soren nods.", ["Søren"], ["Ólafur"]) == []


def test_an_earlier_event_repeated_is_an_echo() -> None:
    earlier = "Ólöf hurries over from the bakery with a tray of fresh apple tarts."
    said = "Ólöf hurries over from the bakery with a tray of fresh apple tarts."
    assert check_reply(said, "narration", (), ["Mayor Fenwick tastes the honey cake.", earlier])["echo"] == earlier
