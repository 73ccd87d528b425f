#!/usr/bin/env python3
"""How the embedded model should choose a decision's option (issue 29, item 2): each way
of choosing, over the same decision prompts, against the scenes' sensible answers.

Reads the model calls a benchmark run recorded (`scripts/bench/bench_voice.py --record FILE`,
or any sidecar started with GAME_SIDECAR_RECORD_RUNS=FILE): each decision's document is
rebuilt from its messages exactly as the sidecar built it (sidecar/llm/document.py),
then chosen by
- `situation-pmi` (the sidecar's, sidecar/llm/choose.py): the option's log-probability
  after "You are <actor>.", the situation and the cue, less its log-probability after the
  cue alone, per token;
- `digit`: the model writes the option number under the grammar (the number's logits),
- `mean`: the option's mean log-probability per token after the whole scene,
- `pmi`: its log-probability after the scene less its log-probability without it,
- `half-pmi` (the sidecar's before): less half of it, per token;
- `sit-pmi`, `half-sit-pmi`: the same against the scene without its situation line;
- `fewshot-half-pmi`, `fewshot-mean`: after three worked decisions (FEWSHOT).
The sensible answer is matched by the decision's situation in scenes/*.json.

Usage: .venv/bin/python scripts/bench/bench_choices.py RECORD.jsonl [--scenes scenes]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

from voice_scenes import load_scenes  # noqa: E402

from sidecar.llm.choose import choose_option, last_log_probs, option_log_probs, option_words  # noqa: E402
from sidecar.llm.cpu_level import load_backends  # noqa: E402
from sidecar.llm.document import render_document  # noqa: E402
from sidecar.llm.types import ReplyShape  # noqa: E402
from sidecar.llm.weights import find_local_model, resolve_weights  # noqa: E402


def _digit(llm: Any, document: str, n: int) -> int:
    """The option number the model finds likeliest after the cue and ' {"action": '."""
    tokens = llm.tokenize((document + ' {"action": ').encode(), add_bos=True, special=True)
    llm.reset()
    llm.eval(tokens)
    row = last_log_probs(llm)
    digits = [llm.tokenize(str(i).encode(), add_bos=False, special=False)[0] for i in range(1, n + 1)]
    return max(range(n), key=lambda i: row[digits[i]])


#: Worked decisions before the scene (the `fewshot-` methods): each a scene, then the
#: sensible option as it continues "<actor> decides to".
FEWSHOT = """\
Location: Pine Camp — A small camp under tall pines.
You are Tamsin
Situation: A wolf circles the campfire, growling.
Tamsin decides to throw a burning branch at the wolf.

Location: The Market — A busy square full of stalls.
You are Pell
Situation: Ruth asks to buy bread and holds out two coins.
Pell decides to sell her a loaf of bread.

Location: Harbour Wall — A stone wall above a stormy sea.
You are Ivo
Situation: A wave knocks a child into the water and she is screaming for help.
Ivo decides to throw the child a rope.

"""


def choices(llm: Any, scene: str, me: str, labels: list[str]) -> dict[str, int]:
    cue = f"{me} decides to"
    words = [llm.tokenize(option_words(label).encode(), add_bos=False, special=False) for label in labels]

    def scores(prefix: str) -> list[float]:
        return option_log_probs(llm, llm.tokenize(prefix.encode(), add_bos=True, special=False), words)

    given, alone = scores(f"{scene}\n{cue}"), scores(cue)
    # The scene without its situation: what the situation itself adds to each option.
    setting = "\n".join(ln for ln in scene.splitlines() if not ln.startswith("Situation:"))
    unsituated = scores(f"{setting}\n{cue}")
    shot_given, shot_alone = scores(f"{FEWSHOT}{scene}\n{cue}"), scores(f"{FEWSHOT}{cue}")

    def best(score: list[float]) -> int:
        return max(range(len(score)), key=lambda i: score[i])

    def half(g: list[float], a: list[float]) -> int:
        return best([(x - y / 2) / len(w) for x, y, w in zip(g, a, words, strict=True)])

    return {
        "mean": best([g / len(w) for g, w in zip(given, words, strict=True)]),
        "pmi": best([g - a for g, a in zip(given, alone, strict=True)]),
        "half-pmi": half(given, alone),
        "sit-pmi": best([g - u for g, u in zip(given, unsituated, strict=True)]),
        "half-sit-pmi": half(given, unsituated),
        "fewshot-half-pmi": half(shot_given, shot_alone),
        "fewshot-mean": best([g / len(w) for g, w in zip(shot_given, words, strict=True)]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path)
    parser.add_argument("--scenes", type=Path, default=ROOT / "scenes")
    args = parser.parse_args()
    sensible = {d.situation: [o.action_id for o in d.options].index(d.sensible)
                for s in load_scenes(args.scenes) for d in s.decisions if d.sensible}  # fmt: skip
    import llama_cpp

    path = resolve_weights(find_local_model(os.environ.get("GAME_SIDECAR_MODEL_PATH", "")))
    load_backends()  # a portable llama.cpp registers no CPU backend itself
    llm = llama_cpp.Llama(path, n_ctx=4096, n_threads=max(1, os.cpu_count() or 1), verbose=False)
    right: dict[str, int] = {}
    total = 0
    for line in args.record.read_text(encoding="utf-8").splitlines():
        call = json.loads(line)
        shape = call.get("shape") or {}
        if shape.get("kind") != "decision" or call["attempt"] != 1:
            continue
        doc = render_document(call["messages"], ReplyShape(**shape))
        want = sensible.get(doc.turn.situation.removeprefix("Situation: "))
        if want is None:
            continue
        total += 1
        turn = doc.turn
        picked = {"situation-pmi": choose_option(llm, turn.me, turn.situation, turn.earlier, list(turn.options))}
        picked.update(choices(llm, doc.scene, turn.me, list(turn.options)))
        picked["digit"] = _digit(llm, doc.text, len(doc.turn.options))
        for name, index in picked.items():
            right[name] = right.get(name, 0) + (index == want)
        print(f"{doc.turn.me}: want {want + 1}, " + ", ".join(f"{k} {v + 1}" for k, v in picked.items()))
    print(f"\n{total} decisions with a sensible answer")
    for name, n in right.items():
        print(f"{name:16} {n}/{total} sensible ({n / max(total, 1):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
