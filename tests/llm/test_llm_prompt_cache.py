"""The embedded model's prompt cache is bounded by what it really holds
(issue 13, item 0). Built from real `llama_cpp.LlamaState` objects with numpy
arrays shaped like the model's (no weights needed): the logits copy each state
carries is counted, trimmed to what prefix reuse reads, and the cache never
holds more bytes or entries than its caps however many runs go by."""

from __future__ import annotations

import numpy as np
import pytest

from sidecar.llm.local import CACHE_BYTES, CACHE_ENTRIES, new_prompt_cache
from sidecar.llm.prompt_cache import state_bytes

llama_cpp = pytest.importorskip("llama_cpp")

N_VOCAB = 262_144  # Gemma 3
N_CTX = 8192


def _state(tokens: list[int], kv_bytes: int = 300_000) -> object:
    """A LlamaState as `Llama.save_state` makes it: full token buffer, one logits
    row per evaluated prompt token (float32), and the KV blob."""
    input_ids = np.zeros(N_CTX, dtype=np.intc)
    input_ids[: len(tokens)] = tokens
    scores = np.ones((len(tokens), N_VOCAB), dtype=np.single)
    return llama_cpp.LlamaState(
        input_ids=input_ids, scores=scores, n_tokens=len(tokens),
        llama_state=bytes(kv_bytes), llama_state_size=kv_bytes, seed=0,
    )


def _held(cache: object) -> int:
    """Bytes the cache really keeps alive, computed here, not by the cache."""
    states = getattr(cache, "_states", None) or cache.cache_state
    return sum(state_bytes(s) for s in states.values())


def test_many_runs_never_hold_more_than_the_cap() -> None:
    cache = new_prompt_cache()
    for run in range(60):
        scene = run % 8
        tokens = [2, 100 + scene] + list(range(1000, 1000 + 18 + run % 5))  # ~20-token prompts
        cache[tokens] = _state(tokens)
        assert _held(cache) <= CACHE_BYTES
        assert len(getattr(cache, "_states", {})) <= CACHE_ENTRIES
    # What it reports is what it holds (the old cache reported the KV bytes only).
    assert cache.cache_size == _held(cache)
    assert 0 < _held(cache) <= CACHE_ENTRIES * (300_000 + N_VOCAB * 4 + N_CTX * 4)


def test_a_cached_state_still_serves_prefix_reuse() -> None:
    cache = new_prompt_cache()
    first = [2, 7, 8, 9, 10]
    cache[first] = _state(first)
    cache[[2, 50, 51]] = _state([2, 50, 51])
    hit = cache[first + [11, 12]]  # longest shared prefix wins
    assert hit.input_ids[:5].tolist() == first and hit.n_tokens == 5
    # Llama.load_state does `scores[:n_tokens, :] = state.scores`: the kept row must fit that.
    live_scores = np.zeros((512, N_VOCAB), dtype=np.single)
    live_scores[: hit.n_tokens, :] = hit.scores.copy()
    with pytest.raises(KeyError):
        cache[[3, 4]]


def test_least_recently_used_goes_first() -> None:
    cache = new_prompt_cache()
    keys = [[2, 1000 + i, 5] for i in range(CACHE_ENTRIES)]
    for k in keys:
        cache[k] = _state(k)
    cache[keys[0]]  # touched: now the most recent
    cache[[2, 9999, 5]] = _state([2, 9999, 5])
    assert [2, 1000, 5] in cache and (2, 1001, 5) not in cache._states  # type: ignore[attr-defined]
    assert cache.cache_size == _held(cache)
