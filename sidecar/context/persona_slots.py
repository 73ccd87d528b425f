"""The actor's persona for one prompt: which template binds it, the slot values
(through the projection), the mood tag, HP bucket and situational modifiers,
rendered by the shared PersonaRenderer (docs/context.md, Personas and mood).

A game's template (inline or from a file) is game text: its words go through the
projection before the slots are filled, and the filled text does not go through it
again (the slots are projected already, and an alias in one must not be searched
for engine IDs). The default templates are the project's own words: never projected
(an entity whose ID is `narrator` leaves "You are still the narrator" alone).
"""

from __future__ import annotations

import re

import msgspec

from sidecar.context.select import game_text
from sidecar.projection import Projection
from sidecar.prompts.escape import one_line
from sidecar.prompts.mood import condition_holds, hp_description, hp_fraction, pad_to_tag
from sidecar.prompts.persona import DEFAULT_NARRATOR, DEFAULT_NPC, PersonaInputs, PersonaRenderer, PersonaText
from sidecar.prompts.templates import TemplateStore
from sidecar.state.model import Entity, HpDescription, PersonaTemplate, Session, SituationalModifier

__all__ = ["persona_text"]

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: Templates whose slot names were read (by identity: templates are replaced, not edited).
_USED: dict[int, tuple[PersonaTemplate, frozenset[str]]] = {}


def _slots_used(template: PersonaTemplate) -> frozenset[str]:
    hit = _USED.get(id(template))
    if hit is not None and hit[0] is template:
        return hit[1]
    texts = [
        template.identity,
        template.reminder,
        *template.inviolable_rules,
        *template.mood_modifiers.values(),
        *(h.text for h in template.hp_descriptions),
        *(m.text for m in template.situational_modifiers),
    ]
    used = frozenset(m.group(1) for t in texts for m in _SLOT.finditer(t))
    if len(_USED) > 1024:
        _USED.clear()
    _USED[id(template)] = (template, used)
    return used


def persona_text(
    templates: TemplateStore,
    personas: PersonaRenderer,
    session: Session,
    proj: Projection,
    actor: Entity | None,
    last_event: str,
) -> PersonaText:
    world = session.world
    binding = world.personas.get(proj.actor_id)
    template: PersonaTemplate = DEFAULT_NPC if actor is not None else DEFAULT_NARRATOR
    version = "default-npc" if actor is not None else "default-narrator"
    slots: dict[str, str] = {}
    if binding is not None:
        if binding.inline is not None:
            template, version = binding.inline, f"inline:{hash(repr(binding.inline))}"
        elif binding.template_name:
            loaded = templates.get(binding.template_name)
            template, version = loaded.template, loaded.version
        projected = _projected(proj, template)
        if projected != template:
            # How the game's words read depends on what this actor perceives now.
            template, version = projected, f"{version}:{hash(repr(projected))}"
    if actor is not None:
        slots["npcName"] = one_line(proj.text(actor.name)) or proj.alias(actor.id)
        slots["npcDescription"] = game_text(proj, actor.description)
        fields = proj.fields(actor)
        role = fields.get("role")
        if role:
            slots["role"] = one_line(role)
        here = world.entities.get(actor.location_id) if actor.location_id else None
        if here is not None and proj.can_see(here):
            slots["location"] = one_line(proj.text(here.name)) or proj.alias(here.id)
        hp, max_hp = fields.get("hp"), fields.get("max_hp")
        if hp is not None and max_hp is not None:
            slots["currentHp"] = f"{hp}/{max_hp}"
    slots["lastEvent"] = last_event
    if binding is not None:
        for k, v in binding.slots.items():
            slots[k] = one_line(proj.text(v))
    # Only the slots the template renders key its cache: a new event (`{lastEvent}`, always
    # set) rebuilds only a persona that shows it.
    used = _slots_used(template)
    slots = {k: v for k, v in slots.items() if k in used}
    fraction = hp_fraction(actor)
    bucket, hp_text = hp_description(template.hp_descriptions, fraction)
    situational = tuple(m.text for m in template.situational_modifiers if condition_holds(m.condition, actor))
    return personas.render(
        PersonaInputs(
            actor_key=f"{id(session)}:{proj.actor_id}",
            template=template,
            template_version=version,
            slots=tuple(sorted(slots.items())),
            mood_tag=pad_to_tag(world.moods.get(proj.actor_id)) if actor is not None else "neutral",
            hp_bucket=bucket,
            hp_text=hp_text,
            situational=situational,
        )
    )


#: Splits a template text around its `{slot}` placeholders (kept, at odd indexes).
_SLOT_SPLIT = re.compile(r"(\{[A-Za-z_][A-Za-z0-9_]*\})")


def _text(proj: Projection, text: str) -> str:
    """Template text through the projection, its `{slot}` placeholders left whole."""
    if "{" not in text:
        return proj.text(text)
    return "".join(p if i % 2 else proj.text(p) for i, p in enumerate(_SLOT_SPLIT.split(text)))


def _projected(proj: Projection, t: PersonaTemplate) -> PersonaTemplate:
    """A game's template with its words projected (the slots are filled afterwards)."""
    return msgspec.structs.replace(
        t,
        identity=_text(proj, t.identity),
        inviolable_rules=[_text(proj, r) for r in t.inviolable_rules],
        mood_modifiers={k: _text(proj, v) for k, v in t.mood_modifiers.items()},
        hp_descriptions=[HpDescription(h.max_fraction, _text(proj, h.text)) for h in t.hp_descriptions],
        situational_modifiers=[SituationalModifier(m.condition, _text(proj, m.text)) for m in t.situational_modifiers],
        reminder=_text(proj, t.reminder),
    )
