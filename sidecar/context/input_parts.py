"""The input's share of a prompt: which entities it names, its words (lore triggers,
memory relevance), the entities the scene details, and its rendered parts: the
dialogue line that opens the volatile block and the closing `## Input` or
`## Decision` block (docs/context.md, Prompt layout).
"""

from __future__ import annotations

from sidecar.context.context_index import ContextIndex
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
from sidecar.prompts.escape import one_line
from sidecar.prompts.system import DECISION_FORMAT
from sidecar.state.model import Session, TranscriptEntry

__all__ = ["focus_of", "input_part", "input_text", "named_ids", "said_part"]


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


def input_part(spec: RunSpec, proj: Projection, shown: Shown, cidx: ContextIndex, session: Session) -> Part:
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
    if not isinstance(inp, DialogueInput):
        return None
    # The speaker `Prepared.record` will write.
    speaker = inp.speaker_id or (cidx.player_ids[0] if cidx.player_ids else "")
    if speaker:
        shown.ref(proj, speaker)
    line = render_entry(proj, TranscriptEntry(role="player", text=inp.text, speaker_id=speaker))
    return Part("said", "final", "volatile", "", [line.content])


def focus_of(spec: RunSpec) -> list[str]:
    """The entities the scene's fast layer details: the run's focus, plus what the input is about."""
    focus = list(spec.focus_ids)
    if isinstance(spec.input, DescribeInput):
        focus.insert(0, spec.input.entity_id)
    elif isinstance(spec.input, NarrateInput):
        # The entities an event involves are what its narration is about.
        focus.extend(e for e in spec.input.entity_ids if e not in focus)
    return focus
