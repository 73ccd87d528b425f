#!/usr/bin/env python3
"""What one llama_decode of several sequences costs against one decode per sequence, on
the embedded model's real weights (issue 30, item 4: eight NPCs on one model).

The sidecar's generations take turns a token each (sidecar/llm/turns.py): eight speaking
NPCs cost eight passes over the weights per round. llama.cpp can decode the eight
sequences' next tokens in one batch, as its server does. This measures what that would
buy before the sidecar is rebuilt around it: `--sequences` copies of a 300-token prompt
in one KV buffer (as the sidecar keeps them), then
- a decode round: each sequence's next token (greedy), one decode each against one
  decode of all, interleaved, median over `--steps` rounds;
- a prefill: `NEW` prompt tokens per sequence (a new event), one decode each against
  all in one decode, median over 6 rounds.

Usage: .venv/bin/python scripts/bench/bench_batched_decode.py [--sequences 8] [--steps 32]
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from sidecar.llm.llama_settings import llama_settings  # noqa: E402
from sidecar.llm.weights import find_local_model, resolve_weights  # noqa: E402

PROMPT = b"The cave is damp and dark. Aria, a ranger, stands at its mouth with a torch. " * 20
NEW = b" A bat flies out of the dark and the torch gutters as water drips from the roof."
PROMPT_TOKENS = 300


def main(sequences: int, steps: int) -> dict[str, object]:
    import llama_cpp
    from llama_cpp import _internals

    from sidecar.llm.voice_llama import VoiceLlama

    # The sidecar's own model: `sequences` sequences in one shared KV buffer.
    llm = VoiceLlama(resolve_weights(find_local_model()), kept_sequences=sequences - 1, **llama_settings())
    ctx = llm._ctx
    memory = llama_cpp.llama_get_memory(ctx.ctx)
    n_vocab = llm.n_vocab()
    batch = _internals.LlamaBatch(n_tokens=512, embd=0, n_seq_max=sequences)
    b = batch.batch

    def fill(rows: list[tuple[int, int, int, bool]]) -> None:
        """(token, position, sequence, logits wanted) per row."""
        b.n_tokens = len(rows)
        for j, (token, pos, seq, logits) in enumerate(rows):
            b.token[j], b.pos[j], b.logits[j] = token, pos, logits
            b.seq_id[j][0], b.n_seq_id[j] = seq, 1

    def argmax(row: int) -> int:
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, row), shape=(n_vocab,))
        return int(np.argmax(logits))

    prompt = llm.tokenize(PROMPT, add_bos=True)[:PROMPT_TOKENS]
    fill([(t, i, 0, i == len(prompt) - 1) for i, t in enumerate(prompt)])
    ctx.decode(batch)
    for seq in range(1, sequences):
        llama_cpp.llama_memory_seq_cp(memory, 0, seq, -1, -1)
    first = argmax(len(prompt) - 1)

    def one_each(pos: int, last: list[int]) -> tuple[float, list[int]]:
        start, out = time.perf_counter(), []
        for seq in range(sequences):
            fill([(last[seq], pos, seq, True)])
            ctx.decode(batch)
            out.append(argmax(0))
        return time.perf_counter() - start, out

    def together(pos: int, last: list[int]) -> tuple[float, list[int]]:
        start = time.perf_counter()
        fill([(last[seq], pos, seq, True) for seq in range(sequences)])
        ctx.decode(batch)
        return time.perf_counter() - start, [argmax(seq) for seq in range(sequences)]

    alone, batched = [], []
    last_a, last_b = [first] * sequences, [first] * sequences
    for k in range(steps):  # interleaved: both see the same machine; each has its own positions
        took, last_a = one_each(len(prompt) + 2 * k, last_a)
        alone.append(took)
        took, last_b = together(len(prompt) + 2 * k + 1, last_b)
        batched.append(took)

    new = llm.tokenize(NEW, add_bos=False)

    def prefill(joint: bool) -> float:
        for seq in range(sequences):
            llama_cpp.llama_memory_seq_rm(memory, seq, len(prompt), -1)
        rows = [[(t, len(prompt) + i, seq, i == len(new) - 1) for i, t in enumerate(new)] for seq in range(sequences)]
        start = time.perf_counter()
        for part in [sum(rows, [])] if joint else rows:
            fill(part)
            ctx.decode(batch)
        return time.perf_counter() - start

    timed: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(6):
        for joint in (False, True):
            timed[joint].append(prefill(joint))
    md: Callable[[list[float]], float] = statistics.median
    llm.close()
    return {
        "sequences": sequences, "steps": steps, "prompt_tokens": len(prompt), "new_tokens": len(new),
        "round_ms_one_decode_each": round(md(alone) * 1000, 1),
        "round_ms_one_decode_of_all": round(md(batched) * 1000, 1),
        "round_ratio": round(md(batched) / md(alone), 3),
        "prefill_ms_one_decode_each": round(md(timed[False]) * 1000, 1),
        "prefill_ms_one_decode_of_all": round(md(timed[True]) * 1000, 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=8)
    parser.add_argument("--steps", type=int, default=32)
    args = parser.parse_args()
    print(json.dumps(main(args.sequences, args.steps)))
