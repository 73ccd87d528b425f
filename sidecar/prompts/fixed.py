"""The project's own words in a prompt: the fixed text around the game's text
(system rules, section headers, line labels, the default personas, the input and
retry instructions).

They are not game text, so they never pass through `Projection.text` (an entity
whose engine ID is `narrator` must not turn "You are still the narrator" into
"You are still the npc_1"), and the leak guard does not count an engine ID that
stands in a prompt as one of these words (`FIXED_WORDS`): a game whose IDs
include `Identity` or `Involved` can still run. An engine ID that is one of these
words is caught by the guard only where it stands glued to other text.

tests/projection/test_projection_fixed_words.py renders prompts of every input
kind and checks that every word of 8 letters or more in them is a word of the
game's text or listed here, so a new header or label fails that test until it is
added below.
"""

from __future__ import annotations

import re

from sidecar.idsearch import Mask
from sidecar.prompts.persona import DEFAULT_NARRATOR, DEFAULT_NPC
from sidecar.prompts.system import DECISION_FORMAT, SYSTEM_RULES
from sidecar.state.model import PersonaTemplate

__all__ = ["FIXED_MASK", "FIXED_TEXTS", "FIXED_WORDS"]

#: Headers and labels the context engine writes (sidecar/context/layout.py, select.py,
#: input_parts.py, history.py, timeline.py, retry.py) and the decision reasons
#: (sidecar/prompts/decisions.py), as written there.
_LABELS = (
    "## Author's note",
    "## Decision",
    "## Identity",
    "## Input",
    "## Instructions",
    "## Inviolable rules",
    "## Lore",
    "## Mood",
    "## Plot essentials",
    "## Scene",
    "## Setting",
    "## Story so far",
    "## This brings to mind",
    "## You remember",
    "## Your notes",
    "### Note",
    "Your handle in this game:",
    "INVIOLABLE:",
    "Conditions:",
    "moment:",
    "Focus:",
    "Here:",
    "Location: (within)",
    "Player:",
    "Present:",
    "Relation:",
    "You are",
    "You carry:",
    "Event:",
    "The player says:",
    "Answer as the narrator, in character.",
    "option (target:)",
    "Describe as perceives it, focusing on its",
    "Narrate what happens:",
    "Involved:",
    "Situation:",
    "Choose what does. Options:",
    "End your reply with, N being the option number (1 to).",
    "Your reply was rejected:. Reply again and end with one JSON object naming one of the numbered options.",
    "the reply has no JSON object; end it with",
    'the last JSON object has no "action" field',
    '"action" must be an option number, got',
    "a text of characters",
    "a value (a NoneType value)",
    "action is not an option: choose a number from 1 to",
    "timeline tick",
)


def _template_texts(t: PersonaTemplate) -> list[str]:
    texts = [t.identity, t.reminder, *t.inviolable_rules, *t.mood_modifiers.values()]
    texts += [h.text for h in t.hp_descriptions]
    texts += [m.text for m in t.situational_modifiers]
    return texts


#: Every fixed text of a prompt.
FIXED_TEXTS: tuple[str, ...] = (
    SYSTEM_RULES,
    DECISION_FORMAT,
    *_template_texts(DEFAULT_NPC),
    *_template_texts(DEFAULT_NARRATOR),
    *_LABELS,
)

#: The words (runs of letters) of the fixed texts, as written there.
FIXED_WORDS: frozenset[str] = frozenset(w for text in FIXED_TEXTS for w in re.findall(r"[^\W\d_]+", text))
#: The same, for `Projection.text(..., keep=FIXED_MASK)` on text that mixes them with game text.
FIXED_MASK = Mask(FIXED_WORDS)
