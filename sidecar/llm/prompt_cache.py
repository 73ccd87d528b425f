"""The embedded model's prompt cache: saved llama.cpp states for prefix reuse,
bounded by the bytes they really hold.

llama-cpp-python's `LlamaRAMCache` counts only `llama_state_size` (the KV
bytes), but every `LlamaState` also carries a copy of the logits (`scores`:
one row of `n_vocab` floats per prompt token, about 1 MB per token with Gemma
3's 262,144-token vocabulary) and the token buffer. Counted that way a 512 MB
cap never evicted, and the sidecar grew until the kernel killed it
(issue 13, item 0). This cache counts every array a state holds, keeps only
what prefix reuse needs, and caps the number of entries as well.

What prefix reuse needs: llama.cpp's KV state and the token IDs. The logits
are not read back: `Llama.generate` always re-evaluates at least the last
prompt token, and the sidecar never asks for prompt logprobs. One row is kept
because `Llama.load_state` assigns `scores[:n_tokens] = state.scores`, which
broadcasts a single row but not an empty array.

The sidecar's `VoiceLlama.save_state` (sidecar/llm/sampling.py) copies that one row
only: llama_cpp's own copied every row first (up to 512 MB), a run's peak memory. The
slimming here stays for any other Llama a test or tool hands the cache.

Duck-typed to llama_cpp's cache interface (`Llama.set_cache` takes any object
with these methods), so importing this module does not import llama.cpp.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

__all__ = ["PromptStateCache", "state_bytes"]


def state_bytes(state: Any) -> int:
    """Bytes a LlamaState holds: the KV blob and every array beside it."""
    total = len(state.llama_state)
    for name in ("scores", "input_ids"):
        array = getattr(state, name, None)
        if array is not None:
            total += int(array.nbytes)
    return total


def _slim(state: Any) -> Any:
    """Drop the logits rows prefix reuse never reads (keep the last, see above)."""
    scores = state.scores
    if scores is not None and getattr(scores, "ndim", 0) == 2 and scores.shape[0] > 1:
        state.scores = scores[-1:].copy()  # a copy: a view would keep the whole array alive
    return state


class PromptStateCache:
    """LRU of llama.cpp states keyed by token sequences; lookups by longest prefix."""

    def __init__(self, capacity_bytes: int, max_entries: int = 16) -> None:
        self.capacity_bytes = capacity_bytes
        self.max_entries = max_entries
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._sizes: dict[tuple[int, ...], int] = {}
        self._bytes = 0

    @property
    def cache_size(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._states)

    def _longest_prefix_key(self, key: tuple[int, ...]) -> tuple[int, ...] | None:
        best, best_len = None, 0
        for k in self._states:
            n = 0
            for a, b in zip(k, key, strict=False):
                if a != b:
                    break
                n += 1
            if n > best_len:
                best, best_len = k, n
        return best

    def __getitem__(self, key: Sequence[int]) -> Any:
        found = self._longest_prefix_key(tuple(key))
        if found is None:
            raise KeyError("no cached state shares a prefix with these tokens")
        self._states.move_to_end(found)
        return self._states[found]

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._longest_prefix_key(tuple(key)) is not None

    def __setitem__(self, key: Sequence[int], state: Any) -> None:
        k = tuple(key)
        self._drop(k)
        state = _slim(state)
        size = state_bytes(state)
        if size > self.capacity_bytes:
            return  # bigger than the whole cache: keeping it would evict everything for nothing
        self._states[k] = state
        self._sizes[k] = size
        self._bytes += size
        while self._states and (self._bytes > self.capacity_bytes or len(self._states) > self.max_entries):
            self._drop(next(iter(self._states)))

    def _drop(self, key: tuple[int, ...]) -> None:
        if key in self._states:
            del self._states[key]
            self._bytes -= self._sizes.pop(key)
