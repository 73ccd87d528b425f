"""How the embedded model's llama.cpp context is made and shared: its settings, the
sequences its KV buffer keeps (prompt prefixes, parked turns) and the steps it is taken in."""

from __future__ import annotations

import os
import threading
from typing import Any

from sidecar.config import LocalModelConfig

__all__ = ["DEFAULT_N_CTX", "KEPT_SEQUENCES", "KEPT_TOKENS", "LLAMA_INIT_LOCK", "MICRO_BATCH", "PROMPT_STEP",
           "TURNS", "WARM_STEP", "llama_settings"]  # fmt: skip

#: Prompt prefixes kept beside the live one (sidecar/llm/kv_prefixes.py): a recent
#: actor or scene each. Their cells are shared with the live sequence where they
#: agree; the rest widens every token's attention (decode about 10% slower for each
#: 500 tokens kept apart, docs/benchmarks.md), hence both bounds. Eight: one per NPC of
#: eight speaking at once (with six, two of them evaluated their whole prompt each time).
KEPT_SEQUENCES = 8
#: Tokens the kept sequences may hold in all before the least recent is dropped.
KEPT_TOKENS = 2048
#: Generations that can take turns at once, each with a parking sequence in the KV
#: buffer (more wait for one to end): the scheduler's default `max_concurrent`.
TURNS = 8
#: Prompt tokens a warm-up evaluates per step. A run arriving mid-warm-up waits at most
#: one step (about 60 ms on two cores: docs/benchmarks.md), and starts from what was
#: warmed so far.
WARM_STEP = 32
#: Prompt tokens a generation evaluates per step while others take turns: the longest
#: pause its prompt puts in their replies (about 200 ms on two cores). Alone, it
#: evaluates its prompt in one go.
PROMPT_STEP = 128


#: llama.cpp context size unless configured (`[local_model] context_tokens`).
DEFAULT_N_CTX = LocalModelConfig().context_tokens


#: Tokens llama.cpp computes at once within a step of `batch_tokens` (its n_ubatch).
#: With flash attention, what a prompt step makes resident stays within about 15 MB
#: however many cells it attends over (docs/benchmarks.md, issue 30).
MICRO_BATCH = 256


def llama_settings(n_ctx: int = DEFAULT_N_CTX, threads: int = 0, batch_tokens: int = 512) -> dict[str, Any]:
    """Constructor arguments for llama_cpp.Llama (the benchmarks use the same);
    `threads` 0 = every core.

    Flash attention: without it, each prompt step writes its attention scores (heads x
    cells x tokens) into llama.cpp's compute buffer, so what that buffer holds resident
    grew with the cells in use, the kept prefixes' among them: +52 MB at 2,900 cells, and
    a sidecar's RSS jumped 56 MB late in a 300-run session. With it (and 256-token micro
    batches) +15 MB; prompts evaluate as fast (within run-to-run noise) and decoding is
    5-8% faster (docs/benchmarks.md)."""
    n_threads = threads or max(1, os.cpu_count() or 1)
    return {"n_ctx": n_ctx, "n_threads": n_threads, "n_batch": batch_tokens, "n_ubatch": min(MICRO_BATCH, batch_tokens),
            "flash_attn": True, "verbose": False}  # fmt: skip


#: llama-cpp-python silences llama.cpp's C logs while it builds a model by pointing the
#: PROCESS's fds 1 and 2 at /dev/null and back. Two builds overlapping on two threads
#: (two servers in one process, as in the test suite) restore each other's /dev/null:
#: fd 1 stays silenced for good, and a test run then ends with no summary. One at a time.
LLAMA_INIT_LOCK = threading.Lock()
