"""Render: from the selected, projected context to the parts of one prompt, in
the docs/context.md order (system rules, identity, INVIOLABLE rules, story, lore |
history | scene, mood and reminder, recent events, memories, notes, input).

Every game string goes through the Projection (`proj.text`, aliases); player
text and notes are escaped quoted strings (`sidecar.prompts.escape.quote`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

from sidecar.context.budget import LORE_SHARE, REQUIRED_SHARE
from sidecar.context.compaction import SUMMARY_HEADER, leaving_events, summary_lines
from sidecar.context.context_index import STOPWORDS, ContextIndex, LoreMatcher, memory_key, words
from sidecar.context.contract import LeftOut, NarrateInput, RunSpec
from sidecar.context.fitted import SEP
from sidecar.context.input_parts import asked_ids, input_part, input_text, said_part
from sidecar.context.parts import Entered, Layout, Part
from sidecar.context.recall import LORE_STICKY, rank_lore, rank_memories
from sidecar.context.select import SceneLines, Shown, game_text, own_lines
from sidecar.context.timeline import Timeline
from sidecar.context.window import HistoryItem, Selection
from sidecar.projection import Projection
from sidecar.prompts.escape import one_line, quote
from sidecar.prompts.persona import PersonaText
from sidecar.prompts.system import system_rules
from sidecar.state.model import LoreCard, Memory, Session


@dataclass(frozen=True)
class Sticky:
    """What the actor's previous prompt held, kept to preserve its prefix."""

    #: The history items the previous prompt held.
    history: Selection | None = None
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


__all__ = ["build_layout", "LayoutInputs", "REQUIRED_ORDER", "Sticky"]

#: The required parts, highest priority first: the scene (seed 000: conditions, the focus
#: entity's state, the actor's and the player's state; then where, who is present, what
#: the player carries), then the story's texts (docs/context.md, Budget).
REQUIRED_ORDER = [
    "scene",
    "setting",
    "author_note",
    "plot_essentials",
    "instructions",
    "story_summary",
    "transcript_summary",
]


def _cards(proj: Projection, cards: list[LoreCard]) -> list[tuple[str, str]]:
    return [(c.id, f"### {one_line(proj.text(c.title)) or 'Note'}\n{game_text(proj, c.text)}") for c in cards]


@functools.lru_cache(maxsize=256)
def _words_of(actions: tuple[str, ...]) -> frozenset[str]:
    """Words of the recent actions: the same transcript lines every turn of a dialogue."""
    return frozenset().union(*(words(a) for a in actions)) - STOPWORDS


def _with_entered(
    timeline: Timeline, entered: tuple[Entered, ...]
) -> tuple[list[HistoryItem], list[Entered], list[int]]:
    """The timeline with each entered lore text after its line, as it was sent; an
    entry that no longer renders as sent (the run never recorded it) drops its cards.
    Also where each kept one is in the history."""
    items = timeline.items
    kept: list[Entered] = []
    at: list[int] = []
    for e in entered:
        pos = timeline.entry_at[e.entry] if e.entry < len(timeline.entry_at) else -1
        if pos < 0 or items[pos].content != e.said:
            continue
        if not kept:
            items = list(items)  # the timeline is cached and shared
        items[pos] = replace(items[pos], content=f"{items[pos].content}{SEP}{e.text}")
        kept.append(e)
        at.append(pos)
    return items, kept, at


def _without_narrated(items: list[HistoryItem], text: str) -> list[HistoryItem]:
    """The history without the world event this narration tells: the volatile block opens
    with it (`said`), as the narrator's transcript will tell it from the next turn on, so
    it is sent once. Only among the events since the actor's last own entry."""
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        if item.kind != "event":
            break
        if item.source == text:
            return [*items[:i], *items[i + 1 :]]
    return items


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
    history, entered, entered_at = (timeline.items, [], []) if fold else _with_entered(timeline, sticky.entered)
    if isinstance(spec.input, NarrateInput):
        history = _without_narrated(history, spec.input.text)
    in_history = frozenset().union(*(e.cards for e in entered))

    # The persona is projected already (sidecar/context/persona_slots.py): a second pass
    # would search aliases for engine IDs and rewrite the default texts' own words.
    identity = [own_lines(persona.identity)] if persona.identity else []
    if actor is not None:
        identity.append(f"Your handle in this game: {shown.ref(proj, actor.id)}.")
    system = [
        Part("system_rules", "system", "required", "", [system_rules(proj.holds_engine_id)]),
        Part("identity", "system", "required", "## Identity", identity),
        Part(
            "inviolable", "system", "required", "## Inviolable rules", own_lines(persona.inviolable).splitlines()
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
    # What compaction folded out of the transcript (changes only when it runs again).
    earlier = summary_lines(proj, session.summaries.get(spec.actor_id))
    system.append(Part("transcript_summary", "system", "required", SUMMARY_HEADER, earlier, mode="text"))

    # Lore: triggers in the last max(4, lore tokens / 100) actions, newest first.
    query = input_text(spec)
    window = max(4, int(budget * (1 - REQUIRED_SHARE) * LORE_SHARE) // 100)
    actions = [query]
    transcript = session.transcripts.get(spec.actor_id, [])
    actions.extend(e.text for e in reversed(transcript[-(window * LORE_STICKY - 1) :]))
    actions.extend(reversed(timeline.recent_events))
    cards = rank_lore(cidx, proj, actions, window, sticky.lore | in_history, inputs.lore_files)
    # Only a history is worth protecting: with none (a first prompt) every card goes in the block.
    defer = stable and sticky.history is not None and not fold
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
        short=inputs.scene.setting_short,
    )
    if stable:
        system.append(setting_part)
    said = said_part(spec, proj, shown, cidx)
    asked = asked_ids(spec, proj, cidx)
    # The line first, then a waiting card: what the history repeats next turn (`Entered`).
    final = [said] if said is not None else []
    final.append(deferred if stable else setting_part)
    final.append(Part("scene", "final", "volatile", "## Scene", scene, mode="lines", short=inputs.scene.scene_short))
    mood_lines = [own_lines(x) for x in (persona.mood, persona.reminder) if x]
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
        matches = [memory_key(m) for m in found]
        # A memory the block keeps from the last prompt that also matches this input
        # counts as a match shown (so left_out counts only matches not shown).
        asked_words = _words_of((query,))
        ranked = set(matches)
        matches += [k for m in block if (k := memory_key(m)) not in ranked and asked_words.intersection(words(m.text))]
        unranked = max(0, unranked - len(matches))
        line = inputs.memory_line
        remembered = [(memory_key(m), line(m)) for m in block[:most]]
        place = "system" if stable else "final"
        memory = Part("memory", place, "dynamic", "## You remember", remembered, mode="cards", sep="\n")
        (system if stable else final).append(memory)
        if stable and found:
            # All the input's matches the block lacks, as many as the memory share holds (budget.py).
            recall = [(memory_key(m), line(m)) for m in found]
            final.append(Part("memory_recall", "final", "dynamic", "## This brings to mind", recall, mode="lines"))
    notes = session.notes.get(spec.actor_id, "")
    if notes:
        final.append(Part("notes", "final", "volatile", "## Your notes", [quote(proj.text(notes))]))
    final.append(input_part(spec, proj, shown, cidx, session))

    layout = Layout(
        system=[p for p in system if p.body],
        history=history,
        final=[p for p in final if p.body or p.name == "input"],
        required_order=REQUIRED_ORDER,
        memory_bank=session.options.memory_bank,
        sticky=sticky.history,
        asked=asked,
        leaving=leaving_events(session),
        left_out=[LeftOut("setting", kind, n, why) for kind, n, why in inputs.scene.left_out],
        memory_matches=matches,
        memory_unranked=unranked,
        deferred=bool(new),
        entered=tuple(entered),
        entered_at=tuple(entered_at),
        said=said.body[0] if said is not None else "",
    )
    return layout, shown
