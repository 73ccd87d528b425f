"""Render: from the selected, projected context to the parts of one prompt, in
the docs/context.md order (system rules, identity, INVIOLABLE rules, story, lore |
history | scene, mood and reminder, recent events, memories, notes, input).

Every game string goes through the Projection (`proj.text`, aliases); player
text and notes are escaped quoted strings (`sidecar.prompts.escape.quote`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from sidecar.context.budget import LORE_SHARE, MAX_RECALL, REQUIRED_SHARE, SEP
from sidecar.context.context_index import STOPWORDS, ContextIndex, LoreMatcher, memory_key, words
from sidecar.context.contract import DecisionInput, DescribeInput, DialogueInput, LeftOut, NarrateInput, RunSpec
from sidecar.context.history import render_entry
from sidecar.context.parts import Entered, Layout, Part
from sidecar.context.recall import LORE_STICKY, rank_lore, rank_memories
from sidecar.context.select import SceneLines, Shown, game_text
from sidecar.context.timeline import Timeline
from sidecar.context.window import HistoryItem
from sidecar.projection import Projection
from sidecar.prompts.escape import one_line, quote
from sidecar.prompts.persona import PersonaText
from sidecar.prompts.system import DECISION_FORMAT, system_rules
from sidecar.state.model import LoreCard, Memory, Session, TranscriptEntry


@dataclass(frozen=True)
class Sticky:
    """What the actor's previous prompt held, kept to preserve its prefix."""

    history_start: int | None = None
    lore: frozenset[str] = frozenset()
    #: Keys of the memory block (sidecar.context.context_index.memory_key).
    memories: frozenset[tuple[int, str]] = frozenset()
    #: Lore cards that entered the history with a line, oldest first.
    entered: tuple[Entered, ...] = ()


@dataclass(frozen=True)
class LayoutInputs:
    """What the layout takes from the engine's caches and configuration, looked up
    once per prompt (a fold builds the layout twice from the same inputs)."""

    timeline: Timeline
    persona: PersonaText
    scene: SceneLines
    #: Aliases the scene lines show.
    scene_aliases: frozenset[str]
    #: A memory as its prompt line (memoized per revision and actor).
    memory_line: Callable[[Memory], str]
    #: Cards from `[context] lore_dir`, besides the session's.
    lore_files: LoreMatcher | None
    #: `[context] stable_setting`.
    stable_setting: bool


__all__ = ["build_layout", "focus_of", "input_text", "named_ids", "Entered", "LayoutInputs", "REQUIRED_ORDER", "Sticky"]

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


def _input_part(spec: RunSpec, proj: Projection, shown: Shown, cidx: ContextIndex, session: Session) -> Part:
    inp = spec.input
    ents = session.world.entities
    me = shown.ref(proj, spec.actor_id) if spec.actor_id else "the narrator"
    if isinstance(inp, DialogueInput):
        # The line itself opens the volatile block (`_said`); this only asks for the answer.
        return Part("input", "final", "volatile", "## Input", [f"Answer as {me}, in character."])
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


def _said(spec: RunSpec, proj: Projection, shown: Shown, cidx: ContextIndex) -> Part | None:
    """A dialogue line, rendered exactly as its transcript entry will render in the
    history (`history.render_entry`), opening the volatile block: the next turn's
    prompt then repeats these tokens at the same place, so they are cached once sent
    instead of sent twice (docs/context.md, Prompt layout)."""
    inp = spec.input
    if not isinstance(inp, DialogueInput):
        return None
    # The speaker `Prepared.record` will write.
    speaker = inp.speaker_id or (cidx.player_ids[0] if cidx.player_ids else "")
    if speaker:
        shown.ref(proj, speaker)
    line = render_entry(proj, TranscriptEntry(role="player", text=inp.text, speaker_id=speaker))
    return Part("said", "final", "volatile", "", [line.content])


def _cards(proj: Projection, cards: list[LoreCard]) -> list[tuple[str, str]]:
    return [(c.id, f"### {one_line(proj.text(c.title)) or 'Note'}\n{game_text(proj, c.text)}") for c in cards]


@functools.lru_cache(maxsize=256)
def _words_of(actions: tuple[str, ...]) -> frozenset[str]:
    """Words of the recent actions: the same transcript lines every turn of a dialogue."""
    return frozenset().union(*(words(a) for a in actions)) - STOPWORDS


def focus_of(spec: RunSpec) -> list[str]:
    """The entities the scene's fast layer details: the run's focus, plus what the input is about."""
    focus = list(spec.focus_ids)
    if isinstance(spec.input, DescribeInput):
        focus.insert(0, spec.input.entity_id)
    elif isinstance(spec.input, NarrateInput):
        # The entities an event involves are what its narration is about.
        focus.extend(e for e in spec.input.entity_ids if e not in focus)
    return focus


def _with_entered(timeline: Timeline, entered: tuple[Entered, ...]) -> tuple[list[HistoryItem], list[Entered]]:
    """The timeline with each entered lore text after its line, as it was sent; an
    entry that no longer renders as sent (the run never recorded it) drops its cards."""
    items = timeline.items
    kept: list[Entered] = []
    for e in entered:
        pos = timeline.entry_at[e.entry] if e.entry < len(timeline.entry_at) else -1
        if pos < 0 or items[pos].content != e.said:
            continue
        if not kept:
            items = list(items)  # the timeline is cached and shared
        old = items[pos]
        items[pos] = HistoryItem(old.role, f"{old.content}{SEP}{e.text}", old.kind, old.relevant)
        kept.append(e)
    return items, kept


def build_layout(
    session: Session,
    spec: RunSpec,
    proj: Projection,
    cidx: ContextIndex,
    sticky: Sticky,
    budget: int,
    inputs: LayoutInputs,
    fold: bool = False,
) -> tuple[Layout, Shown]:
    """The selected, rendered parts of one prompt. While there is a history to
    protect, lore cards and memories the actor's previous prompt did not hold wait
    in the volatile block (new lines before the history would re-cache all of it)
    until `fold`: the engine folds them in when the history window moves, since the
    prefix breaks there anyway. A card that waited behind a dialogue line stays in
    the history with that line (`Entered`) until then."""
    world = session.world
    shown = Shown(set(inputs.scene_aliases))
    actor = world.entities.get(spec.actor_id) if spec.actor_id else None
    timeline, persona, stable = inputs.timeline, inputs.persona, inputs.stable_setting
    history, entered = (timeline.items, []) if fold else _with_entered(timeline, sticky.entered)
    in_history = frozenset().union(*(e.cards for e in entered))

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
    cards = rank_lore(cidx, proj, actions, window, sticky.lore | in_history, inputs.lore_files)
    # Only a history is worth protecting: with none (a first prompt) every card goes in the block.
    defer = stable and sticky.history_start is not None and not fold
    held = [c for c in cards if not defer or c.id in sticky.lore]
    new = [c for c in cards if defer and c.id not in sticky.lore and c.id not in in_history]
    # Keys are engine-side card IDs used only for ordering; they never reach the text.
    if held:
        system.append(Part("lore", "system", "dynamic", "## Lore", _cards(proj, held), mode="cards", unit="lore_card"))
    deferred = Part("lore_new", "final", "dynamic", "## Lore", _cards(proj, new), mode="cards", unit="lore_card")

    setting, scene = inputs.scene.setting, inputs.scene.scene
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
    said = _said(spec, proj, shown, cidx)
    # The line first, then a waiting card: what the history repeats next turn (`Entered`).
    final = [said] if said is not None else []
    final.append(deferred if stable else setting_part)
    final.append(Part("scene", "final", "volatile", "## Scene", scene, mode="lines"))
    mood_lines = [game_text(proj, x) for x in (persona.mood, persona.reminder) if x]
    if mood_lines:
        final.append(Part("mood", "final", "volatile", "## Mood", mood_lines))
    matches: list[tuple[int, str]] = []
    unranked = 0
    if session.options.memory_bank:
        # Stable layout: the block sits before the history and keeps what it held while it
        # is still relevant to the recent actions; the input's best it lacks are recalled
        # in the volatile block (docs/context.md, "Memory bank").
        previous = sticky.memories if stable else frozenset()
        # Only a block to keep needs the recent actions' words.
        recent = _words_of(tuple(actions[1:])) | _words_of((query,)) if previous else frozenset()
        # The share (25% of at most the budget) holds at most this many lines of 10+ tokens.
        most = max(8, budget // 40)
        block, found, unranked = rank_memories(cidx, spec.actor_id, query, recent, previous, not defer, most)
        unranked -= len(found)
        matches = [memory_key(m) for m in found]
        line = inputs.memory_line
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
        history=history,
        final=[p for p in final if p.body or p.name == "input"],
        required_order=REQUIRED_ORDER,
        memory_bank=session.options.memory_bank,
        sticky_start=sticky.history_start,
        left_out=[LeftOut("setting", kind, n, why) for kind, n, why in inputs.scene.left_out],
        memory_matches=matches,
        memory_unranked=unranked,
        deferred=bool(new) or (defer and any(k not in sticky.memories for k in matches)),
        entered=tuple(entered),
        said=said.body[0] if said is not None else "",
    )
    return layout, shown
