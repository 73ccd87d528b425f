"""GBNF grammars that hold the embedded model's reply to its shape (llama.cpp's
grammar format, applied by sidecar/llm/sampling.py).

Each reply continues the document's cue (sidecar/llm/document.py) and cannot
hold what must never reach a player's screen: no line break, no markup
(`# * < > [ ] { } | \\ ``), no underscore (so no alias handle such as npc_1), no
colon (so no "Event:" or "Reply:" label), and it ends where its shape ends:
- prose: one to three sentences, then a line break;
- line: one or two sentences inside the cue's open quote, then the closing quote;
- decision: ` {"action": N, "message": "...", "notes": "..."}` with N one of the
  option numbers, so the choice is valid by construction.
"""

from __future__ import annotations

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
    r"""root ::= " " sentence (" " sentence){0,2} "\n"
"""
    + _SENTENCE
)

_LINE = (
    r"""root ::= sentence (" " sentence)? "\""
"""
    + _SENTENCE
)

_DECISION = (
    r"""root ::= " {\"action\": " choice ", \"message\": \"" sentence (" " sentence)? "\", \"notes\": \"" note "\"}"
note ::= sentence
choice ::= """
    + "{choices}\n"
    + _SENTENCE
)


def grammar_for(shape: ReplyShape, chosen: int = 0) -> str:
    """The grammar of a reply of `shape`; a decision's with only option `chosen`
    (1-based) when given (sidecar/llm/choose.py), else any of its options."""
    if shape.kind == "line":
        return _LINE
    if shape.kind == "decision":
        numbers = [chosen] if chosen else range(1, max(1, shape.n_options) + 1)
        choices = " | ".join(f'"{n}"' for n in numbers)
        return _DECISION.replace("{choices}", choices)
    return _PROSE


def stop_for(shape: ReplyShape) -> list[str]:
    """Where the text the game gets ends (the grammar's last character, left out)."""
    if shape.kind == "line":
        return ['"']
    if shape.kind == "decision":
        return []
    return ["\n"]
