"""Seed 002's own hot-reload template JSON loads as the seed writes it (issue 23,
item 8): `hpDescriptions` is an object of bucket name -> text there."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctxhelpers import all_text, engine, prepare
from world import World

from sidecar.context.contract import DialogueInput, RunSpec
from sidecar.errors import InvalidRequest
from sidecar.prompts.templates import parse_template

# Verbatim from seed 002, section 2.8.
SEED_JSON = """{
  "identityBlock": "Eres Maerwyn, mercader nómada de 50 años en Veldria...",
  "moodModifiers": {
    "calm":   "Estás tranquilo y satisfecho, hablas con voz pausada.",
    "angry":  "Estás furioso. Frases cortas, vocabulario seco.",
    "scared": "Estás asustado. Dudas, balbuceas, miras hacia atrás."
  },
  "hpDescriptions": {
    "healthy": "Estás en plena forma.",
    "hurt":    "Tienes heridas visibles, hablas con esfuerzo.",
    "dying":   "Estás al borde del colapso, apenas puedes hablar."
  }
}
"""


def test_the_seed_json_parses_with_its_hp_buckets() -> None:
    t = parse_template(SEED_JSON.encode(), ".json")
    assert t.identity.startswith("Eres Maerwyn")
    assert set(t.mood_modifiers) == {"calm", "angry", "scared"}
    assert sorted((h.max_fraction, h.text[:12]) for h in t.hp_descriptions) == [
        (0.3, "Estás al bor"),
        (0.7, "Tienes herid"),
        (1.0, "Estás en ple"),
    ]


@pytest.mark.parametrize(("hp", "line"), [(20, "al borde del colapso"), (55, "heridas visibles"), (95, "plena forma")])
def test_the_seed_template_renders_the_hp_bucket(tmp_path: Path, hp: int, line: str) -> None:
    (tmp_path / "maerwyn.json").write_text(SEED_JSON, encoding="utf-8")
    world = World().entity("inn", "location", "Inn").entity("npc", name="Maerwyn", at="inn", hp=hp, max_hp=100)
    session = world.entity("pc", "player", "Aren", at="inn").persona("npc", template="maerwyn").session()
    p = prepare(engine(str(tmp_path)), session, RunSpec("s1", "npc", DialogueInput("Hola", "pc")))
    text = all_text(p.prompt.messages)
    assert "Eres Maerwyn" in text and line in text


def test_numeric_keys_are_fractions_and_an_unknown_bucket_is_named() -> None:
    t = parse_template(b'{"hpDescriptions": {"0.25": "Low.", "1": "Fine."}}', ".json")
    assert [(h.max_fraction, h.text) for h in t.hp_descriptions] == [(0.25, "Low."), (1.0, "Fine.")]
    with pytest.raises(InvalidRequest) as err:
        parse_template(b'{"hpDescriptions": {"bruised": "Ow."}}', ".json")
    assert "'bruised'" in err.value.message and "healthy" in err.value.message


# Seed 002's PromptTemplate ScriptableObject as Unity's JsonUtility exports it: lists of pairs.
UNITY_JSON = """{
  "identityBlock": "Eres Maerwyn, mercader nómada.",
  "inviolableRules": ["Nunca reveles el secreto del rey."],
  "moodModifiers": [
    {"tag": "calm", "text": "Estás tranquilo."},
    {"tag": "angry", "text": "Estás furioso."}
  ],
  "situationalModifiers": [
    {"conditionTag": "raining", "text": "La lluvia te pone de mal humor."}
  ],
  "hpDescriptions": [{"maxFraction": 0.3, "text": "Apenas puedes hablar."}]
}
"""


def test_the_seed_template_as_unity_exports_it_loads_like_the_object_form() -> None:
    """Issue 31: "Expected object, got array - at $.mood_modifiers" for Unity's own export."""
    t = parse_template(UNITY_JSON.encode(), ".json")
    assert t.mood_modifiers == {"calm": "Estás tranquilo.", "angry": "Estás furioso."}
    assert [(m.condition, m.text) for m in t.situational_modifiers] == [("raining", "La lluvia te pone de mal humor.")]
    assert [(h.max_fraction, h.text) for h in t.hp_descriptions] == [(0.3, "Apenas puedes hablar.")]
    as_object = parse_template(b'{"situationalModifiers": {"raining": "La lluvia te pone de mal humor."}}', ".json")
    assert as_object.situational_modifiers == t.situational_modifiers
    with pytest.raises(InvalidRequest, match=r"mood_modifiers\[0\] must be"):
        parse_template(b'{"moodModifiers": [{"mood": "calm", "text": "x"}]}', ".json")
