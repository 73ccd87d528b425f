"""GBNF grammars that hold the embedded model's reply to its shape (llama.cpp's
grammar format, applied by sidecar/llm/sampling.py).

Each reply continues the document's cue (sidecar/llm/document.py) and cannot
hold what must never reach a player's screen: no line break, no markup
(`# * < > [ ] { } | \\ ``), no underscore (so no alias handle such as npc_1), no
colon (so no "Event:" or "Reply:" label), and it ends where its shape ends:
- prose: one to three sentences, then a line break;
- line: one or two sentences inside the cue's open quote, then the closing quote;
- decision: ` {"action": N, "message": "...", "notes": "..."}` with N one of the
  option numbers, so the choice is valid by construction; an option with
  parameters adds `"parameters": {...}` after N, held to the option's schema
  by llama-cpp-python's JSON Schema converter (an integer range of up to
  MAX_ENUMERATED values as the list of its numbers: the converter ignores
  minimum and maximum; a wider one is checked after, as on every model).

Every shape fits the run's output limit: its sentences are made short enough
(and, at a small limit, few enough) that they take at most CHARS_PER_TOKEN
characters a token of what the shape's frame (its JSON, quote or line break)
leaves of `max_tokens`. A reply cut at the
limit is cut mid-sentence on screen, and a decision cut there has no closing
brace: before this, one SmolLM2 decision in a CI run wrote two long sentences and
was refused at 120 tokens.

A model prompted through its own chat template (an instruct GGUF: `chat=True`)
answers in a turn of its own, with no cue before it: the reply starts at its
first letter (or the decision's brace) and a line is not in quotes; each ends
at a line break.
"""

from __future__ import annotations

import json
from typing import Any

from sidecar.llm.types import ReplyShape

__all__ = ["grammar_for", "stop_for", "SENTENCE_CHARS"]

#: A sentence's characters: anything but line breaks, markup, underscores, colons,
#: double quotes of any kind (a quote the grammar cannot see closed was left open on
#: screen: the model reports speech instead) and the sentence marks (which only end one).
SENTENCE_CHARS = r'[^\n\r#*<>\[\]{}|\\`_:"“”«»\x00-\x1f.!?]'

#: A sentence's characters between its first letter and its mark: at least, and at most.
SENTENCE_MIN, SENTENCE_MAX = 6, 180
#: What a sentence adds to its characters: its first letter, its mark (up to "...") and a space.
_SENTENCE_EDGES = 5
#: Below this many characters a sentence, a shape drops its optional sentences first.
_SHORTEST_USEFUL = 40
#: Characters the grammar allows per token of the output limit left to the sentences.
#: The shipped models tokenize the scenes' English at 4.4 (Gemma 3) and 4.1 (SmolLM2)
#: characters a token, and no scene text below 3.0 (tests/llm/test_llm_grammar_fits.py);
#: 2.5 leaves room for names, accents and numbers.
CHARS_PER_TOKEN = 2.5
#: Tokens of the output limit a shape's frame takes (JSON goes at about 2.3 characters a
#: token): prose's lead space and line break, a line's closing quote, a decision's
#: `{"action": 12, "message": "", "notes": ""}` (20 tokens on both models; 24 for a draw
#: that splits it worse), and what an option's parameters may add (44 for three of them).
_PROSE_FRAME, _LINE_FRAME, _DECISION_FRAME, _PARAMETERS_ROOM = 2, 2, 24, 48

_SENTENCE = r"""
sentence ::= start {chars}{{{low},{high}}} end
start ::= [A-Z] | [^\x00-\x7f]
end ::= "." | "!" | "?" | "..."
"""

_PROSE = r"""root ::= {lead}sentence{more} "\n"
"""

_LINE = r"""root ::= sentence{more} {close}
"""

_DECISION = r"""root ::= {lead}"{{\"action\": " choice ", \"message\": \"" message "\", \"notes\": \"" note "\"}}"
message ::= sentence{more}
note ::= sentence
choice ::= {choices}
"""


def _fitted(max_tokens: int, frame: int, needed: int, optional: int) -> tuple[int, int]:
    """How many optional sentences, and how long a sentence, so that `needed` sentences
    plus the optional ones fit what `frame` tokens leave of `max_tokens` (0: no limit).
    Below the shortest sentences nothing fits: the reply is cut at the limit, as any is."""
    if max_tokens <= 0:
        return optional, SENTENCE_MAX
    room = (max_tokens - frame) * CHARS_PER_TOKEN
    more = optional
    while more and room // (needed + more) - _SENTENCE_EDGES < _SHORTEST_USEFUL:
        more -= 1
    longest = int(room // (needed + more)) - _SENTENCE_EDGES
    return more, max(SENTENCE_MIN, min(SENTENCE_MAX, longest))


def _more(n: int) -> str:
    """Up to `n` more sentences after the first."""
    return f' (" " sentence){{0,{n}}}' if n else ""


def _sentence(longest: int) -> str:
    return _SENTENCE.format(chars=SENTENCE_CHARS, low=SENTENCE_MIN, high=longest)


#: The widest integer range a grammar lists number by number.
MAX_ENUMERATED = 256


def _enumerated(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each small integer range as the enum of its numbers."""
    props = {}
    for name, prop in schema.get("properties", {}).items():
        low, high = prop.get("minimum"), prop.get("maximum")
        if prop.get("type") == "integer" and low is not None and high is not None and high - low < MAX_ENUMERATED:
            prop = {"enum": list(range(low, high + 1))}
        props[name] = prop
    return {**schema, "properties": props}


def _choices(shape: ReplyShape, numbers: list[int]) -> str:
    """The `choice` rule: each number, followed by its option's parameters if any."""
    from llama_cpp.llama_grammar import SchemaConverter  # only with the embedded model loaded

    converter = SchemaConverter(  # type: ignore[no-untyped-call]  # unannotated upstream
        prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False
    )
    alternatives = []
    for n in numbers:
        schema = shape.option_params[n - 1] if n <= len(shape.option_params) else ""
        if not schema:
            alternatives.append(f'"{n}"')
            continue
        rule = converter.visit(_enumerated(json.loads(schema)), f"params-{n}")  # type: ignore[no-untyped-call]  # unannotated upstream
        alternatives.append(f'"{n}, \\"parameters\\": " {rule}')
    rules = converter.format_grammar()  # type: ignore[no-untyped-call]  # unannotated upstream
    return " | ".join(alternatives) + ("\n" + rules if rules else "")


def grammar_for(shape: ReplyShape, chosen: int = 0, chat: bool = False, max_tokens: int = 0) -> str:
    """The grammar of a reply of `shape`; a decision's with only option `chosen`
    (1-based) when given (sidecar/llm/choose.py), else any of its options. `chat`:
    the reply is a chat turn of its own (no cue before it, see above). `max_tokens`:
    the run's output limit, which the longest reply fits (0: none)."""
    lead = "" if chat else '" " '
    if shape.kind == "line":
        more, longest = _fitted(max_tokens, _LINE_FRAME, 1, 1)
        close = r'"\n"' if chat else r'"\""'
        return _LINE.format(more=_more(more), close=close) + _sentence(longest)
    if shape.kind == "decision":
        numbers = [chosen] if chosen else list(range(1, max(1, shape.n_options) + 1))
        if any(shape.option_params):
            choices = _choices(shape, numbers)
            frame = _DECISION_FRAME + _PARAMETERS_ROOM
        else:
            choices = " | ".join(f'"{n}"' for n in numbers)
            frame = _DECISION_FRAME
        more, longest = _fitted(max_tokens, frame, 2, 1)
        return _DECISION.format(lead=lead, more=_more(more), choices=choices) + _sentence(longest)
    more, longest = _fitted(max_tokens, _PROSE_FRAME, 1, 2)
    return _PROSE.format(lead=lead, more=_more(more)) + _sentence(longest)


def stop_for(shape: ReplyShape, chat: bool = False) -> list[str]:
    """Where the text the game gets ends (the grammar's last character, left out)."""
    if shape.kind == "line":
        return ["\n"] if chat else ['"']
    if shape.kind == "decision":
        return []
    return ["\n"]
