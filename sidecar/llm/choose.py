"""A decision on the embedded model: which option, by how likely the model finds
each option's words after the situation, against how likely it finds them anyway.

Asked for an option number, Gemma 3 270M picks a digit almost blind: over the
first 8 shipped decisions it chose the obvious action 2 times, the last option
most of the time. Scored by the words of each option, it picks what the situation
makes likely: the score is the option's log-probability after "You are <actor>.",
the situation and "<actor> decides to", less its log-probability after "<actor>
decides to" alone (without that, short common phrases win whatever the situation:
"Surface Form Competition", Holtzman et al. 2021), per token (long options are not
punished for their length). Only the situation, not the whole scene: a model this
small is led by any word of a long scene (a window in the room, a window in an
option), and the situation is what the choice is about. Figures over all shipped
decisions: docs/benchmarks.md.

Only the last row of logits is read after each token (never llama.cpp's
`logits_all`, which holds n_ctx x 262,144 floats: gigabytes at Gemma's
vocabulary). The grammar then writes the chosen number, so the reply's line and
notes follow the choice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from sidecar.prompts.system import PARAMETERS_MARK

__all__ = ["choice_context", "choose_option", "last_log_probs", "option_log_probs", "option_words"]

#: How much of an option's likelihood without the situation is taken off (1 = PMI). Over
#: the 24 shipped decisions with a sensible answer, after the situation: 21 sensible at 1,
#: 20 at 0.75, 19 at 0.5; after the whole scene (the first way, scripts/bench/bench_choices.py) at
#: most 17 (docs/benchmarks.md).
PRIOR_WEIGHT = 1.0
#: Earlier lines scored after when a decision has no situation.
RECENT_LINES = 2

_TARGET = re.compile(r" \(target: [^()]*\)$")


def option_words(label: str) -> str:
    """An option as it continues "<actor> decides to": its target note dropped,
    its first letter lowered ("Open the hatch" -> "open the hatch.")."""
    words = _TARGET.sub("", label.split(f" {PARAMETERS_MARK} ")[0]).strip().rstrip(".")
    return " " + words[:1].lower() + words[1:] + "."


def last_log_probs(llm: Any) -> Any:
    """The log-probabilities after the last evaluated token (a numpy row)."""
    import llama_cpp  # with numpy, only once the model is loaded: not at start-up
    import numpy as np

    logits = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    row = np.ctypeslib.as_array(logits, shape=(llm.n_vocab(),)).astype(np.float64)
    top = row.max()
    return row - top - math.log(float(np.exp(row - top).sum()))


def option_log_probs(llm: Any, prefix: list[int], options: list[list[int]]) -> list[float]:
    """log P(option | prefix) for each option: the prefix evaluated once, then each
    option's tokens one at a time from the prefix's end (each rewinds the KV to it)."""
    llm.reset()
    llm.eval(prefix)
    first = last_log_probs(llm)
    out = []
    for tokens in options:
        llm.n_tokens = len(prefix)  # the next eval drops the KV past the prefix
        total = float(first[tokens[0]])
        for before, token in zip(tokens, tokens[1:], strict=False):
            llm.eval([before])
            total += float(last_log_probs(llm)[token])
        out.append(total)
    llm.n_tokens = len(prefix)
    return out


def choice_context(me: str, situation: str, earlier: Sequence[str] = ()) -> str:
    """What each option is scored after, up to the cue: who chooses, and the situation
    line ("Situation: ..."), or the last earlier lines when there is none."""
    about = situation.strip() or "\n".join(earlier[-RECENT_LINES:])
    who = f"You are {me}.\n" if me else ""
    return f"{who}{about}\n" if about else who


def choose_option(llm: Any, me: str, situation: str, earlier: Sequence[str], labels: list[str]) -> int:
    """The 0-based index of the option the situation makes likeliest (see the module doc).
    `llm` a loaded llama_cpp.Llama; the rest from the document's turn."""
    if len(labels) < 2:
        return 0
    cue = f"{me or 'I'} decides to"
    given = llm.tokenize(f"{choice_context(me, situation, earlier)}{cue}".encode(), add_bos=True, special=False)
    alone = llm.tokenize(cue.encode(), add_bos=True, special=False)
    words = [llm.tokenize(option_words(label).encode(), add_bos=False, special=False) for label in labels]
    given_scores, alone_scores = option_log_probs(llm, given, words), option_log_probs(llm, alone, words)
    score = [
        (g - PRIOR_WEIGHT * a) / len(w) for g, a, w in zip(given_scores, alone_scores, words, strict=True)
    ]
    return max(range(len(labels)), key=lambda i: score[i])
