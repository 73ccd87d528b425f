"""Issue 30, item 3: saving the embedded model's state for the prompt cache copies one
logits row, not one per prompt token (512 MB with Gemma's 262,144-token vocabulary, made
resident by the copy: a run's peak memory), and the saved state still serves prefix
reuse: a generation after loading it is the one a fresh evaluation gives."""

from __future__ import annotations

import tracemalloc

import pytest

from sidecar.llm.llama_settings import LLAMA_INIT_LOCK, llama_settings
from sidecar.llm.types import Sampling
from sidecar.llm.weights import find_local_model, resolve_weights

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(300)]

PROMPT = "The harbour master counts the crates as the gulls circle the masts. " * 40 + "Then"


def _continue(llm, seed: int = 7) -> str:
    llm.next_sampling = Sampling(temperature=0.0)
    out = llm.create_completion(llm.tokenize(PROMPT.encode(), add_bos=True), max_tokens=12, seed=seed)
    return str(out["choices"][0]["text"])


def test_a_saved_state_holds_one_logits_row_and_still_serves_prefix_reuse() -> None:
    from sidecar.llm.voice_llama import VoiceLlama

    # Built as the sidecar builds it: one at a time in the process (llama_cpp points fds 1
    # and 2 at /dev/null meanwhile; two builds overlapping leave them silenced).
    with LLAMA_INIT_LOCK:
        llm = VoiceLlama(resolve_weights(find_local_model()), **llama_settings(n_ctx=2048))
    try:
        tokens = llm.tokenize(PROMPT.encode(), add_bos=True)
        assert len(tokens) > llm.n_batch, "more prompt tokens than logits rows: the old copy took them all"
        llm.eval(tokens)
        tracemalloc.start()
        state = llm.save_state()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        row = llm.n_vocab() * 4
        assert state.scores.shape == (1, llm.n_vocab())
        # The KV blob is copied three times by llama_cpp (buffer, compact, bytes); the
        # logits once, one row. The old copy alone was n_batch rows: 512 MB.
        assert peak <= 3 * len(state.llama_state) + 2 * row + (4 << 20), (peak >> 20, len(state.llama_state) >> 20)
        fresh = _continue(llm)  # create_completion reuses the evaluated prefix
        llm.reset()
        llm.load_state(state)
        assert llm.n_tokens == len(tokens)
        assert _continue(llm) == fresh
    finally:
        llm.close()
