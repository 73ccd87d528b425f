"""Render: from the selected, projected context to the parts of one prompt, in
the docs/context.md order (system rules, identity, INVIOLABLE rules, story, lore |
history | scene, mood and reminder, recent events, memories, notes, input).

Every game string goes through the Projection (`proj.text`, aliases); player
text and notes are escaped quoted strings (`sidecar.prompts.escape.quote`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sidecar.context.budget import LORE_SHARE, MAX_RECALL, REQUIRED_SHARE
from sidecar.context.context_index import STOPWORDS, ContextIndex, memory_key, words
from sidecar.context.contract import DecisionInput, DescribeInput, DialogueInput, LeftOut, NarrateInput, RunSpec
from sidecar.context.parts import Layout, Part
from sidecar.context.recall import LORE_STICKY, rank_lore, rank_memories
from sidecar.context.select import Shown, game_text
from sidecar.projection import Projection
from sidecar.prompts.escape import one_line, quote
from sidecar.prompts.mood import condition_holds, hp_description, hp_fraction, pad_to_tag
from sidecar.prompts.persona import DEFAULT_NARRATOR, DEFAULT_NPC, PersonaInputs, PersonaText
from sidecar.prompts.system import DECISION_FORMAT, system_rules
from sidecar.state.model import Entity, LoreCard, PersonaTemplate, Session

if TYPE_CHECKING:
    from sidecar.context.context_engine import ContextEngine


@dataclass(frozen=True)
class Sticky:
    """What the actor's previous prompt held, kept to preserve its prefix."""

    history_start: int | None = None
    lore: frozenset[str] = frozenset()
    #: Keys of the memory block (sidecar.context.context_index.memory_key).
    memories: frozenset[tuple[int, str]] = frozenset()


__all__ = ["build_layout", "input_text", "named_ids", "REQUIRED_ORDER", "Sticky"]

REQUIRED_ORDER = [
    "author_note",
    "plot_essentials",
    "instructions",
    "story_summary",
    "scene",
    "setting",
]


def named_ids(spec: RunSpec) -> list[str]:
    """Engine IDs the input names: the projection makes them perceivable."""
    named = list(spec.focus_ids)
    inp = spec.input
    if isinstance(inp, NarrateInput):
        named.extend(inp.entity_ids)
    elif isinstance(inp, DialogueInput):
        if inp.speaker_id:
            named.append(inp.speaker_id)
    elif isinstance(inp, DecisionInput):
        named.extend(o.target_id for o in inp.options if o.target_id)
    elif isinstance(inp, DescribeInput):
        named.append(inp.entity_id)
    return named


def input_text(spec: RunSpec) -> str:
    """The input's words, for lore triggers and memory relevance."""
    inp = spec.input
    if isinstance(inp, DialogueInput | NarrateInput):
        return inp.text
    if isinstance(inp, DecisionInput):
        return " ".join([inp.situation, *(o.label for o in inp.options)])
    if isinstance(inp, DescribeInput):
        return inp.aspect
    return ""


def _persona(
    engine: ContextEngine, session: Session, proj: Projection, actor: Entity | None, last_event: str
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
            loaded = engine.templates.get(binding.template_name)
            template, version = loaded.template, loaded.version
    if actor is not None:
        slots["npcName"] = one_line(proj.text(actor.name)) or proj.alias(actor.id)
        slots["npcDescription"] = game_text(proj, actor.description)
        role = proj.fields(actor).get("role")
        if role:
            slots["role"] = one_line(role)
        here = world.entities.get(actor.location_id) if actor.location_id else None
        if here is not None and proj.can_see(here):
            slots["location"] = one_line(proj.text(here.name)) or proj.alias(here.id)
        hp, max_hp = proj.fields(actor).get("hp"), proj.fields(actor).get("max_hp")
        if hp is not None and max_hp is not None:
            slots["currentHp"] = f"{hp}/{max_hp}"
    slots["lastEvent"] = last_event
    if binding is not None:
        for k, v in binding.slots.items():
            slots[k] = one_line(proj.text(v))
    fraction = hp_fraction(actor)
    bucket, hp_text = hp_description(template.hp_descriptions, fraction)
    situational = tuple(m.text for m in template.situational_modifiers if condition_holds(m.condition, actor))
    return engine.personas.render(
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


def _input_part(spec: RunSpec, proj: Projection, shown: Shown, cidx: ContextIndex, session: Session) -> Part:
    inp = spec.input
    ents = session.world.entities
    me = shown.ref(proj, spec.actor_id) if spec.actor_id else "the narrator"
    if isinstance(inp, DialogueInput):
        speaker = inp.speaker_id or (cidx.player_ids[0] if cidx.player_ids else "")
        who = shown.ref(proj, speaker) if speaker else "The player"
        lines = [f"{who} says to you: {quote(proj.text(inp.text))}", f"Answer as {me}, in character."]
        return Part("input", "final", "volatile", "## Input", lines)
    if isinstance(inp, NarrateInput):
        lines = [f"Narrate what happens: {game_text(proj, inp.text)}"]
        involved = [shown.ref(proj, e) for e in inp.entity_ids]
        if involved:
            lines.append("Involved: " + ", ".join(involved))
        return Part("input", "final", "volatile", "## Input", lines)
    if isinstance(inp, DecisionInput):
        lines = []
        if inp.situation.strip():
            lines.append(f"Situation: {game_text(proj, inp.situation)}")
        lines.append(f"Choose what {me} does. Options:")
        for i, opt in enumerate(inp.options, 1):
            target = f" (target: {shown.ref(proj, opt.target_id)})" if opt.target_id else ""
            lines.append(f"{i}. {one_line(proj.text(opt.label)) or 'option ' + str(i)}{target}")
        lines.append(f"End your reply with {DECISION_FORMAT}, N being the option number (1 to {len(inp.options)}).")
        return Part("input", "final", "volatile", "## Decision", lines)
    assert isinstance(inp, DescribeInput)
    subject = ents[inp.entity_id]
    label = shown.label(proj, subject) if proj.can_see(subject) else shown.ref(proj, inp.entity_id)
    aspect = f", focusing on its {one_line(proj.text(inp.aspect))}" if inp.aspect.strip() else ""
    return Part("input", "final", "volatile", "## Input", [f"Describe {label} as {me} perceives it{aspect}."])


def _cards(proj: Projection, cards: list[LoreCard]) -> list[tuple[str, str]]:
    return [(c.id, f"### {one_line(proj.text(c.title)) or 'Note'}\n{game_text(proj, c.text)}") for c in cards]


def build_layout(
    engine: ContextEngine,
    session: Session,
    spec: RunSpec,
    proj: Projection,
    cidx: ContextIndex,
    sticky: Sticky,
    budget: int,
    fold: bool = False,
) -> tuple[Layout, Shown]:
    """The selected, rendered parts of one prompt. While there is a history to
    protect, lore cards and memories the actor's previous prompt did not hold wait
    in the volatile block (new lines before the history would re-cache all of it)
    until `fold`: the engine folds them in when the history window moves, since the
    prefix breaks there anyway."""
    world = session.world
    shown = Shown()
    actor = world.entities.get(spec.actor_id) if spec.actor_id else None
    named = tuple(sorted(named_ids(spec)))
    rendered = engine.history.items(session, proj, cidx.base)
    # The actor's transcript and the world events it perceived, in order (docs/context.md).
    timeline = engine.timelines.get(session, proj, cidx, rendered, named)
    persona = _persona(engine, session, proj, actor, timeline.newest_event)

    # Template texts come from the game or its files: scrub them like any game text.
    identity = [game_text(proj, persona.identity)] if persona.identity else []
    if actor is not None:
        identity.append(f"Your handle in this game: {shown.ref(proj, actor.id)}.")
    system = [
        Part("system_rules", "system", "required", "", [system_rules(proj.holds_engine_id)]),
        Part("identity", "system", "required", "## Identity", identity),
        Part(
            "inviolable", "system", "required", "## Inviolable rules", game_text(proj, persona.inviolable).splitlines()
        ),
    ]
    story = world.story
    for name, header, text in (
        ("instructions", "## Instructions", story.instructions),
        ("plot_essentials", "## Plot essentials", story.plot_essentials),
        ("story_summary", "## Story so far", story.story_summary),
        ("author_note", "## Author's note", story.author_note),
    ):
        if text.strip():
            system.append(Part(name, "system", "required", header, [game_text(proj, text)], mode="text"))

    # Lore: triggers in the last max(4, lore tokens / 100) actions, newest first.
    query = input_text(spec)
    window = max(4, int(budget * (1 - REQUIRED_SHARE) * LORE_SHARE) // 100)
    actions = [query]
    transcript = session.transcripts.get(spec.actor_id, [])
    actions.extend(e.text for e in reversed(transcript[-(window * LORE_STICKY - 1) :]))
    actions.extend(reversed(timeline.recent_events))
    cards = rank_lore(cidx, proj, actions, window, sticky.lore, engine.lore_files.matcher)
    stable = engine.config.context.stable_setting
    # Only a history is worth protecting: with none (a first prompt) every card goes in the block.
    defer = stable and sticky.history_start is not None and not fold
    held = [c for c in cards if not defer or c.id in sticky.lore]
    new = [c for c in cards if defer and c.id not in sticky.lore]
    # Keys are engine-side card IDs used only for ordering; they never reach the text.
    if held:
        system.append(Part("lore", "system", "dynamic", "## Lore", _cards(proj, held), mode="cards", unit="lore_card"))
    deferred = Part("lore_new", "final", "dynamic", "## Lore", _cards(proj, new), mode="cards", unit="lore_card")

    focus = list(spec.focus_ids)
    if isinstance(spec.input, DescribeInput):
        focus.insert(0, spec.input.entity_id)
    elif isinstance(spec.input, NarrateInput):
        # The entities an event involves are what its narration is about.
        focus.extend(e for e in spec.input.entity_ids if e not in focus)
    picked = engine.scene_for(session, proj, cidx, shown, actor, focus, proj.moment_text(spec.moment), named, query)
    setting, scene = picked.setting, picked.scene
    # The setting (where, who and what is there) changes with the world, not per turn: by
    # default it sits before the history so a dialogue's prefix survives (docs/context.md).
    setting_part = Part(
        "setting",
        "system" if stable else "final",
        "required" if stable else "volatile",
        "## Setting",
        setting,
        mode="lines",
    )
    if stable:
        system.append(setting_part)
    final = [deferred] if stable else [setting_part]
    final.append(Part("scene", "final", "volatile", "## Scene", scene, mode="lines"))
    mood_lines = [game_text(proj, x) for x in (persona.mood, persona.reminder) if x]
    if mood_lines:
        final.append(Part("mood", "final", "volatile", "## Mood", mood_lines))
    # Earlier events are in the history (the timeline); only one the actor has not lived past is here.
    if timeline.last_event:
        final.append(Part("last_event", "final", "volatile", "## Last event", [f"- {timeline.last_event}"]))
    matches: list[tuple[int, str]] = []
    unranked = 0
    if session.options.memory_bank:
        # Stable layout: the block sits before the history and keeps what it held while it
        # is still relevant to the recent actions; the input's best it lacks are recalled
        # in the volatile block (docs/context.md, "Memory bank").
        recent = frozenset().union(*(words(a) for a in actions)) - STOPWORDS
        previous = sticky.memories if stable else frozenset()
        # The share (25% of at most the budget) holds at most this many lines of 10+ tokens.
        most = max(8, budget // 40)
        block, found, unranked = rank_memories(cidx, spec.actor_id, query, recent, previous, not defer, most)
        unranked -= len(found)
        matches = [memory_key(m) for m in found]
        line = engine.memory_lines(cidx, proj, named)
        remembered = [(memory_key(m), line(m)) for m in block[:most]]
        place = "system" if stable else "final"
        memory = Part("memory", place, "dynamic", "## You remember", remembered, mode="cards", sep="\n")
        (system if stable else final).append(memory)
        if stable and found:
            recall = [(memory_key(m), line(m)) for m in found[: 4 * MAX_RECALL]]
            final.append(Part("memory_recall", "final", "dynamic", "## This brings to mind", recall, mode="lines"))
    notes = session.notes.get(spec.actor_id, "")
    if notes:
        final.append(Part("notes", "final", "volatile", "## Your notes", [quote(proj.text(notes))]))
    final.append(_input_part(spec, proj, shown, cidx, session))

    layout = Layout(
        system=[p for p in system if p.body],
        history=timeline.items,
        final=[p for p in final if p.body or p.name == "input"],
        required_order=REQUIRED_ORDER,
        memory_bank=session.options.memory_bank,
        sticky_start=sticky.history_start,
        left_out=[LeftOut("setting", kind, n, why) for kind, n, why in picked.left_out],
        memory_matches=matches,
        memory_unranked=unranked,
        deferred=bool(new) or (defer and any(k not in sticky.memories for k in matches)),
    )
    return layout, shown
