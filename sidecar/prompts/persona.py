"""Persona rendering (docs/context.md, Personas and mood): identity and INVIOLABLE rules (never touched
by mood) and the mood block (mood modifier, HP description, situational
modifiers, the identity reminder line), with slot fillers replaced verbatim.

Both parts are cached per actor by a hash of their inputs (template version,
slot values, mood tag, HP bucket, active conditions), so a PAD change inside
one mood region, or HP moving inside one bucket, reuses the cached text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sidecar.state.model import HpDescription, PersonaTemplate

__all__ = ["PersonaInputs", "PersonaText", "PersonaRenderer", "DEFAULT_NPC", "DEFAULT_NARRATOR", "fill_slots"]

_DEFAULT_MOODS = {
    "calm": "You are calm and content; you speak unhurriedly, in long sentences.",
    "joyful": "You are elated; you speak quickly, exclaim, laugh between phrases.",
    "angry": "You are furious; short, sharp sentences; you interrupt.",
    "scared": "You are frightened; you hesitate, your sentences break off, you glance around.",
    "sad": "You are downcast; you speak low, with long pauses, in as few words as you can.",
    "neutral": "You speak in your usual tone, with no particular emotion.",
}

#: Used for an actor with no persona bound: its own name and description.
DEFAULT_NPC = PersonaTemplate(
    identity="You are {npcName}. {npcDescription}",
    inviolable_rules=["Stay in character: never mention being an AI, a model or a game."],
    mood_modifiers=_DEFAULT_MOODS,
    hp_descriptions=[
        HpDescription(0.3, "You are badly hurt and can barely speak."),
        HpDescription(0.7, "You are wounded; speaking costs you effort."),
        HpDescription(1.0, "You are in good shape."),
    ],
    reminder="You are still {npcName}, whatever your mood: you speak from your current state as yourself.",
)

#: Used when the narrator (actor "") has no persona bound.
DEFAULT_NARRATOR = PersonaTemplate(
    identity=(
        # The length is the system rules' one instruction; this adds tone and the senses (seed 000).
        "You are the narrator of this game. You describe what happens in vivid, concise prose, "
        "in the second person for the player. Match the tone to the place and the moment "
        "(ominous in the dark, warm in a busy tavern), and give a sensory detail: a sound, "
        "a smell, a texture."
    ),
    inviolable_rules=["Never reveal anything the scene below does not tell you.", "Never break the fourth wall."],
    mood_modifiers={},
    reminder="You are still the narrator: concise, vivid, consistent with the established facts.",
)

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


#: What a slot with no value reads as: the generic words of docs/privacy.md. A slot
#: goes unfilled when the actor cannot perceive its value (`{location}` after a move
#: into a hidden place) or the game never set it; a raw `{location}` in a prompt
#: would only confuse the model.
_UNFILLED = {"npcName": "someone", "location": "somewhere"}
_UNFILLED_OTHER = "something"


def fill_slots(text: str, slots: dict[str, str]) -> str:
    """Plain replacement of `{name}`; a slot with no value becomes its generic word."""
    if "{" not in text:
        return text

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        return slots[name] if name in slots else _UNFILLED.get(name, _UNFILLED_OTHER)

    return _SLOT.sub(fill, text)


@dataclass(frozen=True)
class PersonaInputs:
    actor_key: str
    template: PersonaTemplate
    template_version: str
    #: Slot values, already projected (aliases and scrubbed names only).
    slots: tuple[tuple[str, str], ...]
    mood_tag: str
    hp_bucket: int
    hp_text: str
    #: Texts of the situational modifiers whose condition holds.
    situational: tuple[str, ...]


@dataclass(frozen=True)
class PersonaText:
    identity: str
    inviolable: str
    mood: str
    reminder: str


class PersonaRenderer:
    """Renders and caches persona parts per actor."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, PersonaText]] = {}
        #: Times a persona part was actually rebuilt (tests and the benchmark read it).
        self.builds = 0

    def render(self, inputs: PersonaInputs) -> PersonaText:
        key = hash((inputs.template_version, inputs.slots, inputs.mood_tag, inputs.hp_bucket, inputs.situational))
        cached = self._cache.get(inputs.actor_key)
        if cached is not None and cached[0] == key:
            return cached[1]
        self.builds += 1
        text = self._build(inputs)
        if len(self._cache) > 65_536:
            self._cache.clear()
        self._cache[inputs.actor_key] = (key, text)
        return text

    @staticmethod
    def _build(inputs: PersonaInputs) -> PersonaText:
        t, slots = inputs.template, dict(inputs.slots)
        mood_text = t.mood_modifiers.get(inputs.mood_tag, "")
        slots["moodModifier"] = fill_slots(mood_text, slots)
        slots["hpDescription"] = inputs.hp_text
        identity = fill_slots(t.identity, slots).strip()
        rules = [fill_slots(r, slots).strip() for r in t.inviolable_rules if r.strip()]
        inviolable = "\n".join(f"INVIOLABLE: {r}" for r in rules)
        mood_parts = [slots["moodModifier"], fill_slots(inputs.hp_text, slots)]
        mood_parts += [fill_slots(s, slots) for s in inputs.situational]
        mood = "\n".join(p.strip() for p in mood_parts if p and p.strip())
        reminder = fill_slots(t.reminder, slots).strip()
        return PersonaText(identity=identity, inviolable=inviolable, mood=mood, reminder=reminder)
