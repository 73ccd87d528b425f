"""Mood (docs/context.md, Personas and mood): PAD regions -> tags, persona caching by region, hot-reloaded templates."""

from __future__ import annotations

import json
import os

import pytest
from ctxhelpers import engine, prepare
from world import World, anchor_tavern

from sidecar.context.contract import DialogueInput, RunSpec
from sidecar.errors import InvalidRequest
from sidecar.prompts.mood import condition_holds, hp_description, pad_to_tag
from sidecar.state.model import Entity, Field, HpDescription, Pad, PersonaBinding

NPC = "npc-maerwyn-7"


@pytest.mark.parametrize(
    ("pad", "tag"),
    [
        (Pad(-0.8, 0.9, 0.5), "angry"),
        (Pad(-0.31, 0.41, 0.01), "angry"),
        (Pad(-0.8, 0.9, -0.5), "scared"),
        (Pad(-0.8, 0.9, 0.0), "neutral"),  # dominance exactly 0: neither angry nor scared
        (Pad(0.8, -0.5, 0.0), "calm"),
        (Pad(0.8, 0.5, 0.0), "joyful"),
        (Pad(0.8, 0.2, 0.0), "neutral"),  # pleasant, arousal between the calm and joyful cuts
        (Pad(-0.8, -0.5, -0.5), "sad"),
        (Pad(-0.8, 0.2, 0.0), "neutral"),
        (Pad(0.0, 0.0, 0.0), "neutral"),
        (Pad(0.3, -0.5, 0.0), "neutral"),  # thresholds are strict
        (Pad(-0.3, 0.9, 0.9), "neutral"),
    ],
)
def test_pad_regions_give_the_seed_tags(pad: Pad, tag: str) -> None:
    assert pad_to_tag(pad) == tag


def test_hp_descriptions_pick_the_tightest_bucket() -> None:
    descs = [HpDescription(1.0, "healthy"), HpDescription(0.3, "dying"), HpDescription(0.7, "hurt")]
    assert hp_description(descs, 0.2) == (0, "dying")
    assert hp_description(descs, 0.5) == (1, "hurt")
    assert hp_description(descs, 0.95) == (2, "healthy")
    assert hp_description(descs, None) == (-1, "")


def test_conditions() -> None:
    e = Entity(id="x", tags=["poisoned"], fields={"hp": Field(2), "max_hp": Field(10), "drunk": Field(True)})
    assert condition_holds("tag:poisoned", e)
    assert not condition_holds("not tag:poisoned", e)
    assert condition_holds("hp_fraction < 0.3", e)
    assert not condition_holds("hp_fraction >= 0.3", e)
    assert condition_holds("hp <= 2", e)
    assert condition_holds("drunk", e)
    assert not condition_holds("sober", e)
    assert not condition_holds("gibberish ~~ 3", e)


def _mood_text(prepared) -> str:
    return prepared.prompt.messages[-1]["content"]


def _say(eng, s, text="Hello"):
    return prepare(eng, s, RunSpec("s1", NPC, DialogueInput(text)))


def test_moving_inside_a_region_does_not_rebuild_crossing_does() -> None:
    s, eng = anchor_tavern(), engine()
    World().mood(NPC, 0.5, -0.2, 0.3).onto(s)
    first = _say(eng, s)
    builds = eng.personas.builds
    assert "You are calm" in _mood_text(first)
    World().mood(NPC, 0.9, -0.8, 0.1).onto(s)  # still calm
    again = _say(eng, s)
    assert eng.personas.builds == builds
    assert "You are calm" in _mood_text(again)
    World().mood(NPC, -0.7, 0.8, 0.6).onto(s)  # angry
    angry = _say(eng, s)
    assert eng.personas.builds == builds + 1
    assert "You are furious" in _mood_text(angry)
    assert "You are calm" not in _mood_text(angry)
    # Mood lives in the volatile block: the system message (identity, rules) is unchanged.
    assert angry.prompt.messages[0] == first.prompt.messages[0]


def test_hp_bucket_change_rebuilds_and_shows(tmp_path) -> None:
    s, eng = anchor_tavern(), engine()
    s.world.personas[NPC].inline.hp_descriptions = [HpDescription(0.3, "You are dying."), HpDescription(1.0, "Fine.")]
    s.world.personas[NPC].inline.situational_modifiers = []
    assert "Fine." in _mood_text(_say(eng, s))
    s.world.entities[NPC].fields["hp"] = Field(5)
    s.revision += 1
    assert "You are dying." in _mood_text(_say(eng, s))


def _write(path, data: dict) -> None:
    path.write_text(json.dumps(data))
    # Make sure the change is visible even on filesystems with coarse mtimes.
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_editing_a_template_file_changes_the_next_prompt(tmp_path) -> None:
    path = tmp_path / "maerwyn.json"
    _write(path, {"identityBlock": "You are {npcName} the FIRST.", "moodModifiers": {"calm": "Serene."}})
    s, eng = anchor_tavern(), engine(str(tmp_path))
    s.world.personas[NPC] = PersonaBinding(actor_id=NPC, template_name="maerwyn")
    one = _say(eng, s)
    assert "You are Maerwyn the FIRST." in one.prompt.messages[0]["content"]
    assert "Serene." in _mood_text(one)
    _write(path, {"identity": "You are {npcName} the SECOND.", "mood_modifiers": {"calm": "Placid."}})
    two = _say(eng, s)
    assert "You are Maerwyn the SECOND." in two.prompt.messages[0]["content"]
    assert "Placid." in _mood_text(two)
    # A half-written file keeps the last good template instead of failing the run.
    path.write_text("{ not json")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    three = _say(eng, s, "Still there?")
    assert "the SECOND." in three.prompt.messages[0]["content"]


def test_toml_templates_and_bad_names(tmp_path) -> None:
    (tmp_path / "guard.toml").write_text(
        'identity = "You are {npcName}, a guard."\ninviolable_rules = ["Never open the gate."]\n'
        '[mood_modifiers]\ncalm = "Bored."\n'
    )
    s, eng = anchor_tavern(), engine(str(tmp_path))
    s.world.personas[NPC] = PersonaBinding(actor_id=NPC, template_name="guard")
    p = _say(eng, s)
    assert "INVIOLABLE: Never open the gate." in p.prompt.messages[0]["content"]
    for bad in ("../etc/passwd", "missing"):
        s.world.personas[NPC] = PersonaBinding(actor_id=NPC, template_name=bad)
        with pytest.raises(InvalidRequest):
            _say(eng, s)
