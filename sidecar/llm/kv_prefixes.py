"""The embedded model's kept prompt prefixes: llama.cpp sequences inside the one KV
buffer the context allocates at load.

A run's prompt shares most of its tokens with the same actor's earlier turn (stable
first, volatile last: docs/context.md), but the live context holds only the last run's.
Saving states out of the context (llama-cpp-python's cache) copies the KV, about 18 KB a
token with Gemma 3 270M, into new memory on every run: a session's RSS grows by the whole
cache budget. Here a finished run's tokens are kept as a sequence of their own in the
same buffer (`llama_memory_seq_cp` shares the cells: nothing is copied), and a run that
shares more with a kept sequence than with the live one starts from it. llama.cpp
allocates and clears the buffer when the model loads, so keeping prefixes costs no
memory after (a wider attention does, a little: docs/benchmarks.md).

Sequence 0 is the live one that llama-cpp-python evaluates into (`VoiceLlama` confines
its `seq_rm` to it); sequences 1..`slots` are kept. The sidecar's generations each have
a sequence of their own beyond those (sidecar/llm/turns.py): they start from a kept one
(`restore_into`) and are kept when they end. When a decode finds no free cell, the least
recently used kept sequence is dropped and the decode is tried again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

__all__ = ["KeptPrefixes", "common_prefix"]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class KeptPrefixes:
    """Up to `slots` token sequences kept in `llm`'s KV buffer, least recently used first."""

    def __init__(self, llm: Any, slots: int) -> None:
        import llama_cpp  # only with the model: importing this module must not load llama.cpp

        self._llama_cpp = llama_cpp
        self._llm = llm
        self._memory = llama_cpp.llama_get_memory(llm._ctx.ctx)
        self._kept: OrderedDict[int, list[int]] = OrderedDict()
        self._free = list(range(slots, 0, -1))
        #: Runs that started from a kept sequence, and the tokens that saved.
        self.restored = 0
        self.restored_tokens = 0

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def tokens_kept(self) -> int:
        return sum(len(tokens) for tokens in self._kept.values())

    def restore(self, tokens: Sequence[int]) -> int:
        """Before a run on `tokens`: if a kept sequence shares a longer prefix with them
        than the live one, make the live sequence that prefix. The tokens already
        evaluated either way (llama-cpp-python's `generate` evaluates from there)."""
        llm = self._llm
        live = common_prefix(llm._input_ids.tolist(), tokens)
        shared = self._start_from_kept(0, tokens, live)
        if not shared:
            return live
        llm.input_ids[:shared] = tokens[:shared]
        llm.n_tokens = shared
        llm._requires_eval = True  # no logits for the restored prefix: its last token is evaluated again
        self.restored_tokens -= live
        return shared

    def restore_into(self, seq: int, tokens: Sequence[int]) -> int:
        """Before a generation on its own sequence `seq` (sidecar/llm/turns.py): start it
        from the kept sequence that shares the longest prefix with `tokens`. Returns the
        tokens it starts with (0: none shared)."""
        self.free(seq)
        return self._start_from_kept(seq, tokens, 0)

    def _start_from_kept(self, seq: int, tokens: Sequence[int], more_than: int) -> int:
        """If a kept sequence shares more than `more_than` tokens with `tokens`, make
        sequence `seq` the longest such prefix (its cells shared, not copied) and return
        its length; else 0 (`seq` untouched)."""
        best, shared = 0, more_than
        for kept_seq, kept in self._kept.items():
            n = common_prefix(kept, tokens)
            if n > shared:
                best, shared = kept_seq, n
        if not best:
            return 0
        lib = self._llama_cpp
        lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
        lib.llama_memory_seq_cp(self._memory, best, seq, 0, shared)  # shares the cells of [0, shared)
        self._kept.move_to_end(best)
        self.restored += 1
        self.restored_tokens += shared
        return shared

    def keep(self, budget: int, tokens: Sequence[int] | None = None, seq: int = 0) -> None:
        """After a run: keep sequence `seq`'s `tokens` (by default the live sequence's). It
        replaces a kept sequence it continues (at least half of that one is its prefix:
        the same actor's earlier turn), else takes a free slot, else the least recently
        used one. Then the least recently used others go until the kept tokens are within
        `budget` (counted per sequence: cells two of them share count twice, so the bound
        errs low)."""
        tokens = list(self._llm._input_ids.tolist() if tokens is None else tokens)
        if not tokens:
            return
        slot = next((k for k, kept in self._kept.items() if 2 * common_prefix(kept, tokens) >= len(kept)), 0)
        if not slot:
            slot = self._free.pop() if self._free else next(iter(self._kept))
        lib = self._llama_cpp
        lib.llama_memory_seq_rm(self._memory, slot, -1, -1)
        lib.llama_memory_seq_cp(self._memory, seq, slot, -1, -1)
        self._kept[slot] = tokens
        self._kept.move_to_end(slot)
        while len(self._kept) > 1 and self.tokens_kept > budget:
            self.drop_oldest()

    def free(self, seq: int, start: int = -1) -> None:
        """Free sequence `seq`'s hold on its cells from position `start` on (-1: all): a
        generation's own sequence that ended, or the end of a prompt to evaluate again."""
        self._llama_cpp.llama_memory_seq_rm(self._memory, seq, start, -1)

    def drop_oldest(self) -> bool:
        """Free the cells of the least recently used kept sequence; False if none is kept."""
        if not self._kept:
            return False
        seq, _ = self._kept.popitem(last=False)
        self._llama_cpp.llama_memory_seq_rm(self._memory, seq, -1, -1)
        self._free.append(seq)
        return True

    def clear(self) -> None:
        while self.drop_oldest():
            pass
