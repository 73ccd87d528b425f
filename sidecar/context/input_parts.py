"""The input's share of a prompt: which entities it names, its words (lore triggers,
memory relevance), the entities the scene details, and its rendered parts: the
dialogue line that opens the volatile block and the closing `## Input` or
`## Decision` block (docs/context.md, Prompt layout).
"""

from __future__ import annotations

from sidecar.context.action_params import describe
from sidecar.context.context_index import STOPWORDS, ContextIndex, words
from sidecar.context.contract import (
    ContinueInput,
    DecisionInput,
    DescribeInput,
    DialogueInput,
    NarrateInput,
    RunSpec,
)
from sidecar.context.history import render_entry
from sidecar.context.parts import Part
from sidecar.context.select import Shown, game_text
from sidecar.projection import Projection
from sidecar.projection.session_index import index_for
from sidecar.prompts.escape import one_line
from sidecar.prompts.system import DECISION_FORMAT, DECISION_FORMAT_PARAMS, PARAMETERS_MARK
from sidecar.state.model import Session, TranscriptEntry

__all__ = ["asked_ids", "focus_of", "input_part", "input_text", "named_ids", "said_part"]


def named_ids(spec: RunSpec, session: Session | None = None) -> list[str]:
    """Engine IDs the input names: the projection makes them perceivable. For the
    narrator (given the session) also what the players carry: seed 000's narrator is
    told `do($player, "attack")~"with iron_sword"` without the sword among the event's
    entities, and must see the sword, not "something"."""
    named = list(spec.focus_ids)
    inp = spec.input
    if session is not None and not spec.actor_id:
        ents = session.world.entities
        by_location = index_for(session).by_location
        for pid in sorted(e.id for e in ents.values() if e.kind == "player"):
            # Public things only: naming makes an entity perceivable, and a hidden, private
            # or known_to thing must stay what the projection says it is.
            carried = (ents.get(eid) for eid in by_location.get(pid, ()))
            named.extend(e.id for e in carried if e is not None and e.visibility.level == "public")
    if isinstance(inp, NarrateInput):
        named.extend(inp.entity_ids)
        place = event_place(session, spec) if session is not None else ""
        if place and session is not None and session.world.entities[place].visibility.level == "public":
            # The narrator perceives where the event happens (its scene is there).
            named.append(place)
    elif isinstance(inp, DialogueInput):
        if inp.speaker_id:
            named.append(inp.speaker_id)
    elif isinstance(inp, DecisionInput):
        named.extend(o.target_id for o in inp.options if o.target_id)
    elif isinstance(inp, DescribeInput):
        named.append(inp.entity_id)
    return named


def asked_ids(spec: RunSpec, proj: Projection, cidx: ContextIndex) -> frozenset[str]:
    """Engine IDs the input is about (history items involving them rank first): the
    entities it names, and those it calls by a word of their name ("the watch captain"
    for Captain Hollis). Not the players: they are in nearly everything."""
    asked = set(spec.focus_ids)
    inp = spec.input
    if isinstance(inp, NarrateInput):
        asked.update(inp.entity_ids)
    elif isinstance(inp, DecisionInput):
        asked.update(o.target_id for o in inp.options if o.target_id)
    elif isinstance(inp, DescribeInput):
        asked.add(inp.entity_id)
    said = set(words(input_text(spec))) - STOPWORDS
    if said:
        # Who and what is around the actor (or the narrated event), what it carries, what
        # the input names: O(the scene), not O(the world).
        ents, by_location = proj.session.world.entities, cidx.base.by_location
        actor = ents.get(spec.actor_id) if spec.actor_id else None
        named = [ents[e] for e in asked if e in ents]
        places = [spec.actor_id, actor.location_id] if actor is not None else [e.location_id for e in named]
        near = {eid for place in places if place for eid in by_location.get(place, ())} | asked
        for eid in near:
            ent = ents.get(eid)
            if ent is not None and ent.kind != "location" and proj.can_see(ent):
                if said.intersection(words(proj.text(ent.name))):
                    asked.add(eid)
    return frozenset(asked - set(cidx.player_ids) - {spec.actor_id})


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


def input_part(spec: RunSpec, proj: Projection, shown: Shown, cidx: ContextIndex, session: Session) -> Part:
    inp = spec.input
    ents = session.world.entities
    me = shown.ref(proj, spec.actor_id) if spec.actor_id else "the narrator"
    if isinstance(inp, DialogueInput):
        # The line itself opens the volatile block (`_said`); this only asks for the answer.
        return Part("input", "final", "volatile", "## Input", [f"Answer as {me}, in character."])
    if isinstance(inp, NarrateInput):
        # The event itself opens the volatile block (`said_part`): sent once.
        lines = ["Narrate what happens: the event above."]
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
            params = "; ".join(one_line(describe(proj, p, f"decision.options[{i - 1}]")) for p in opt.parameters)
            params = f" {PARAMETERS_MARK} {params}" if params else ""
            lines.append(f"{i}. {one_line(proj.text(opt.label)) or 'option ' + str(i)}{target}{params}")
        n = len(inp.options)
        if any(o.parameters for o in inp.options):
            lines.append(f"End your reply with {DECISION_FORMAT_PARAMS}, N being the option number (1 to {n}) "
                         'and "parameters" the chosen option\'s parameters, if it has any.')  # fmt: skip
        else:
            lines.append(f"End your reply with {DECISION_FORMAT}, N being the option number (1 to {n}).")
        return Part("input", "final", "volatile", "## Decision", lines)
    if isinstance(inp, ContinueInput):
        # The last output is the history's last turn (seed 003: Continue's "last action").
        lines = [f"Go on as {me}: carry the story on from where your last reply ends, without repeating it."]
        return Part("input", "final", "volatile", "## Input", lines)
    assert isinstance(inp, DescribeInput)
    subject = ents[inp.entity_id]
    label = shown.label(proj, subject) if proj.can_see(subject) else shown.ref(proj, inp.entity_id)
    aspect = f", focusing on its {one_line(proj.text(inp.aspect))}" if inp.aspect.strip() else ""
    return Part("input", "final", "volatile", "## Input", [f"Describe {label} as {me} perceives it{aspect}."])


def said_part(spec: RunSpec, proj: Projection, shown: Shown, cidx: ContextIndex) -> Part | None:
    """A dialogue line, rendered exactly as its transcript entry will render in the
    history (`history.render_entry`), opening the volatile block: the next turn's
    prompt then repeats these tokens at the same place, so they are cached once sent
    instead of sent twice (docs/context.md, Prompt layout)."""
    inp = spec.input
    if isinstance(inp, NarrateInput):
        # As the narrator's transcript tells it from the next turn on (`Prepared.record`).
        event = render_entry(proj, TranscriptEntry(role="event", text=inp.text))
        return Part("said", "final", "volatile", "", [event.content])
    if not isinstance(inp, DialogueInput):
        return None
    # The speaker `Prepared.record` will write.
    speaker = inp.speaker_id or (cidx.player_ids[0] if cidx.player_ids else "")
    if speaker:
        shown.ref(proj, speaker)
    line = render_entry(proj, TranscriptEntry(role="player", text=inp.text, speaker_id=speaker))
    return Part("said", "final", "volatile", "", [line.content])


#: World events searched, newest first, for the one a narration tells.
_PLACE_LOOKBACK = 64


def event_place(session: Session, spec: RunSpec) -> str:
    """Where the event a narration tells happens: the location of the newest world
    event with the narration's text ("" when none has one). The narrator's scene is
    there, not where the first entity named is (docs/context.md, Prompt layout)."""
    inp = spec.input
    if not isinstance(inp, NarrateInput):
        return ""
    events = session.world.events
    for ev in reversed(events[-_PLACE_LOOKBACK:]):
        if ev.text == inp.text:
            return ev.location_id if ev.location_id in session.world.entities else ""
    return ""


def focus_of(spec: RunSpec) -> list[str]:
    """The entities the scene's fast layer details: the run's focus, plus what the input is about."""
    focus = list(spec.focus_ids)
    if isinstance(spec.input, DescribeInput):
        focus.insert(0, spec.input.entity_id)
    elif isinstance(spec.input, NarrateInput):
        # The entities an event involves are what its narration is about.
        focus.extend(e for e in spec.input.entity_ids if e not in focus)
    return focus
