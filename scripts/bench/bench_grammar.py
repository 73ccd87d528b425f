#!/usr/bin/env python3
"""What a grammar costs the embedded model per token (issue 29; sidecar/llm/sampling.py):
the same narration document generated with no grammar, with llama-cpp-python's own
`grammar=` (matched against the whole vocabulary every step), and with the sidecar's
sampler (the grammar checked on the sampled token first). Median milliseconds per
generated token over --rounds runs each, prompt already cached (decode only).

Usage: .venv/bin/python scripts/bench/bench_grammar.py [--rounds 5] [--tokens 48]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sidecar.llm.cpu_level import load_backends  # noqa: E402
from sidecar.llm.document import EXAMPLES  # noqa: E402
from sidecar.llm.grammars import grammar_for  # noqa: E402
from sidecar.llm.llama_settings import llama_settings  # noqa: E402
from sidecar.llm.types import ReplyShape  # noqa: E402
from sidecar.llm.weights import find_local_model, resolve_weights  # noqa: E402

DOCUMENT = EXAMPLES["prose"] + (
    "\nLocation: The Crooked Lantern — A smoky tavern with low beams and a crackling hearth.\n"
    "Player: Mira — A young ranger in a green cloak.\nPresent: Goblin — A wiry goblin with yellow eyes.\n"
    "Event: Mira parries and the blade snaps in two.\nNarration:"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    import llama_cpp

    from sidecar.llm.voice_llama import VoiceLlama

    path = resolve_weights(find_local_model(os.environ.get("GAME_SIDECAR_MODEL_PATH", "")))
    grammar = grammar_for(ReplyShape("prose"))
    load_backends()  # a portable llama.cpp registers no CPU backend itself
    plain = llama_cpp.Llama(path, **llama_settings())
    ours = VoiceLlama(path, **llama_settings())
    ways = {
        "no grammar": lambda seed: plain.create_completion(DOCUMENT, max_tokens=args.tokens, seed=seed),
        "llama-cpp-python grammar=": lambda seed: plain.create_completion(
            DOCUMENT, max_tokens=args.tokens, seed=seed, grammar=llama_cpp.LlamaGrammar.from_string(grammar, False)
        ),
        "sidecar (checked first)": lambda seed: ours.create_completion(DOCUMENT, max_tokens=args.tokens, seed=seed),
    }
    ours.next_grammar = grammar
    for name, generate in ways.items():
        generate(0)  # the prompt into the KV cache: the rounds below time decoding
        per_token = []
        for seed in range(1, args.rounds + 1):
            t0 = time.perf_counter()
            out = generate(seed)
            per_token.append((time.perf_counter() - t0) * 1000 / max(1, out["usage"]["completion_tokens"]))
        print(f"{name:28} {statistics.median(per_token):6.1f} ms/token (median of {args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
