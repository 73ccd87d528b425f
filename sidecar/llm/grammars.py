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

_SENTENCE = rf"""
sentence ::= start {SENTENCE_CHARS}{{6,180}} end
start ::= [A-Z] | [^\x00-\x7f]
end ::= "." | "!" | "?" | "..."
"""

_PROSE = (
    r"""root ::= {lead}sentence (" " sentence){0,2} "\n"
"""
    + _SENTENCE
)

_LINE = (
    r"""root ::= sentence (" " sentence)? {close}
"""
    + _SENTENCE
)

_DECISION = (
    r"""root ::= {lead}"{\"action\": " choice ", \"message\": \"" message "\", \"notes\": \"" note "\"}"
message ::= sentence (" " sentence)?
note ::= sentence
choice ::= {choices}
"""
    + _SENTENCE
)


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


def grammar_for(shape: ReplyShape, chosen: int = 0, chat: bool = False) -> str:
    """The grammar of a reply of `shape`; a decision's with only option `chosen`
    (1-based) when given (sidecar/llm/choose.py), else any of its options. `chat`:
    the reply is a chat turn of its own (no cue before it, see above)."""
    lead = "" if chat else '" " '
    if shape.kind == "line":
        return _LINE.replace("{close}", r'"\n"' if chat else r'"\""')
    if shape.kind == "decision":
        numbers = [chosen] if chosen else list(range(1, max(1, shape.n_options) + 1))
        if any(shape.option_params):
            choices = _choices(shape, numbers)
        else:
            choices = " | ".join(f'"{n}"' for n in numbers)
        return _DECISION.replace("{lead}", lead).replace("{choices}", choices)
    return _PROSE.replace("{lead}", lead)


def stop_for(shape: ReplyShape, chat: bool = False) -> list[str]:
    """Where the text the game gets ends (the grammar's last character, left out)."""
    if shape.kind == "line":
        return ["\n"] if chat else ['"']
    if shape.kind == "decision":
        return []
    return ["\n"]
