"""The checks behind scripts/bench/bench_voice.py's figures (issue 29, "Figures"), on plain strings.

Free of `sidecar` imports, so tests/bench/test_voice_metrics.py checks the checker itself.

A narration or dialogue line is *clean* when no check below finds anything:

| check | finds |
| --- | --- |
| `empty` | nothing but whitespace |
| `alias` | a handle (`npc_3`, `pc_1`: `\\b[a-z]+_\\d+\\b`) or any engine ID of the scene |
| `markup` | `# * < > [ ] { } |`, a backtick, or a blank line (`\\n\\n`) |
| `label` | a line or sentence opening with one or two words and a colon ("Event:", "Reply:", "Bram:") |
| `echo` | game text repeated whole (the input, the scene's events and lines), or 8 words in a row of fixed text |
| `repetition` | a 4-gram of words occurring twice |
| `over_length` | narration over 3 sentences or 400 characters; a dialogue line over 2 sentences or 250 |
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "CHECKS", "LIMITS", "Limits", "alias_hits", "check_reply", "echo_hit", "fold", "label_hits", "markup_hits",
    "over_length", "repeated_ngram", "sentence_count", "words", "wrong_names",
]

CHECKS = ("empty", "alias", "markup", "label", "echo", "repetition", "over_length")


@dataclass(frozen=True)
class Limits:
    sentences: int
    chars: int


#: Narration: the issue's "one to three sentences". Dialogue: one spoken line, at most two sentences.
LIMITS = {"narration": Limits(3, 400), "dialogue": Limits(2, 250), "decision": Limits(3, 400)}
ECHO_WORDS = 8
REPEAT_N = 4

_HANDLE = re.compile(r"\b[a-z]+_\d+\b")
_MARKUP = re.compile(r"[#*<>\[\]{}|`]|\n\s*\n")
# One or two words (letters, apostrophes, hyphens) and a colon, at the start of the text, of a
# line, or of a sentence. "He said: no" is not a label (see label_hits); "5:30" is not (digits).
_LABEL = re.compile(r"(?:^|\n|(?<=[.!?…])\s+)\s*([^\W\d_][\w'’-]*(?: [^\W\d_][\w'’-]*)?)\s*:(?!\d)")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)]*(?=\s|$)")
_ABBREVIATION = re.compile(r"\b(Mr|Mrs|Ms|Dr|St|Capt|Lt|Sgt|Mt)\.")


def words(text: str) -> list[str]:
    """Lower-cased words (letters and digits), punctuation dropped."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def alias_hits(text: str, engine_ids: Iterable[str] = ()) -> list[str]:
    """Handles and engine IDs in `text` (an engine ID counts wherever it stands, case-sensitively)."""
    hits = _HANDLE.findall(text)
    hits += [eid for eid in engine_ids if eid and eid in text and eid not in hits]
    return hits


def markup_hits(text: str) -> list[str]:
    return [m.group(0) for m in _MARKUP.finditer(text)]


def label_hits(text: str) -> list[str]:
    """Role or section labels; of two words only a name's ("Mireille Dœuf:", not "He said:")."""
    hits = [m.group(1) for m in _LABEL.finditer(text)]
    return [h + ":" for h in hits if " " not in h or h.split(" ")[1][:1].isupper()]


def _normal(text: str) -> str:
    return " ".join(words(text))


def echo_hit(text: str, inputs: Iterable[str] = (), fixed: Iterable[str] = (), n: int = ECHO_WORDS) -> str:
    """What of the prompt `text` repeats: an input's whole text (words compared, case and punctuation
    aside), or `n` consecutive words of a fixed text. "" when none."""
    said = f" {_normal(text)} "
    for given in inputs:
        norm = _normal(given)
        if norm and f" {norm} " in said:
            return given
    ngrams = _ngrams(words(text), n)
    if not ngrams:
        return ""
    for prompt_text in fixed:
        for gram in _ngrams(words(prompt_text), n):
            if gram in ngrams:
                return " ".join(gram)
    return ""


def _ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def repeated_ngram(text: str, n: int = REPEAT_N) -> str:
    """The first word n-gram occurring twice ("" when none)."""
    tokens = words(text)
    seen: set[tuple[str, ...]] = set()
    for i in range(len(tokens) - n + 1):
        gram = tuple(tokens[i:i + n])
        if gram in seen:
            return " ".join(gram)
        seen.add(gram)
    return ""


def sentence_count(text: str) -> int:
    """Sentences, counted by their end marks; a last one without its mark counts too."""
    stripped = _ABBREVIATION.sub(r"\1", text.strip())
    if not stripped:
        return 0
    ends = list(_SENTENCE_END.finditer(stripped))
    tail = stripped[ends[-1].end():].strip() if ends else stripped
    return len(ends) + (1 if tail and _WORD.search(tail) else 0)


def over_length(text: str, kind: str) -> str:
    limits = LIMITS.get(kind, LIMITS["narration"])
    sentences, chars = sentence_count(text), len(text.strip())
    if sentences > limits.sentences:
        return f"{sentences} sentences > {limits.sentences}"
    if chars > limits.chars:
        return f"{chars} chars > {limits.chars}"
    return ""


def check_reply(text: str, kind: str, engine_ids: Iterable[str] = (), inputs: Iterable[str] = (),
                fixed: Iterable[str] = ()) -> dict[str, str]:
    """Every check (CHECKS) that fails on `text`, with what it found; {} = clean."""
    if not text.strip():
        return {"empty": "no text"}
    found = {
        "alias": ", ".join(alias_hits(text, engine_ids)),
        "markup": " ".join(repr(h) for h in markup_hits(text)),
        "label": ", ".join(label_hits(text)),
        "echo": echo_hit(text, inputs, fixed),
        "repetition": repeated_ngram(text),
        "over_length": over_length(text, kind),
    }
    return {check: detail for check, detail in found.items() if detail}


def fold(text: str) -> str:
    """`text` without its diacritics ("Ólafur" -> "Olafur"), so a name the model wrote in ASCII counts."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w])" + re.escape(fold(name)) + r"(?![\w])")


def wrong_names(
    text: str, perceived: Iterable[str], others: Iterable[str], engine_ids: Iterable[str] = ()
) -> list[str]:
    """What makes a reply name the wrong thing: a display name of an entity the actor does not
    perceive (`others`), or any handle or engine ID. Names of perceived entities (`perceived`)
    are blanked first, so "Bram" inside a perceived "Bram's Cellar" is not counted. Names match as
    whole words, case-sensitively, diacritics aside. [] = right."""
    wrong = alias_hits(text, engine_ids)
    text = fold(text)
    for name in sorted(perceived, key=len, reverse=True):
        if name:
            text = _name_pattern(name).sub(" ", text)
    wrong += [name for name in others if name and _name_pattern(name).search(text)]
    return wrong
