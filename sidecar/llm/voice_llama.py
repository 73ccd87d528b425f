"""The embedded model's llama_cpp.Llama: our sampler (sidecar/llm/sampling.py), kept
prompt prefixes (sidecar/llm/kv_prefixes.py) and paused generations, all in the one KV
buffer the context allocates at load.

Sequence 0 is the live one llama-cpp-python evaluates into. Then come the kept
sequences (finished runs' prompts), then one parking sequence per generation that can
be paused while another takes its turn (sidecar/llm/turns.py). Sequences share the
cells they agree on: parking or keeping copies no KV, it only tags cells.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

import llama_cpp
from llama_cpp import _internals

from sidecar.llm.cpu_level import load_backends
from sidecar.llm.kv_prefixes import KeptPrefixes
from sidecar.llm.sampling import CheckedSampler
from sidecar.llm.types import Sampling

__all__ = ["Paused", "VoiceLlama"]


class Paused(NamedTuple):
    """A paused generation's llama-cpp-python state (its cells are in its parking sequence)."""

    tokens: list[int]
    sampler: Any
    last_sampler: CheckedSampler | None


class VoiceLlama(llama_cpp.Llama):
    """llama_cpp.Llama whose generations sample with `CheckedSampler`: set
    `next_sampling` (and `next_grammar`) before each `create_completion`.

    With `kept_sequences`, its context holds that many sequences beside the live one in
    one KV buffer (`prefixes`: sidecar/llm/kv_prefixes.py): llama-cpp-python's own
    evaluation touches sequence 0 only, and a decode that finds no free cell drops the
    least recently kept sequence and tries again. llama.cpp clears the buffer when it
    builds the context, so its pages are resident from the load (the same RSS with a
    second clear or without): keeping sequences in it adds no memory.

    With `parked_sequences` too, that many generations can be paused (`pause`) and
    resumed (`resume`) between two of their tokens, each in a parking sequence of its
    own: `parking_slots`. A decode short of cells never drops those."""

    next_sampling: Sampling = Sampling()
    next_grammar: str | None = None
    #: The sampler of the last generation (its `refused` count, for the record).
    last_sampler: CheckedSampler | None = None
    prefixes: KeptPrefixes | None = None
    #: Kept sequences dropped because a decode found no free cell.
    made_room = 0

    #: Parking sequences, one per generation that can be paused.
    parking_slots: tuple[int, ...] = ()

    def __init__(self, *args: Any, kept_sequences: int = 0, parked_sequences: int = 0, **kwargs: Any) -> None:
        load_backends()  # a llama.cpp that picks its CPU backend at run time registers none itself
        super().__init__(*args, **kwargs)
        if not kept_sequences:
            return
        self._one_buffer_for(1 + kept_sequences + parked_sequences)
        self.parking_slots = tuple(range(kept_sequences + 1, kept_sequences + 1 + parked_sequences))
        prefixes = self.prefixes = KeptPrefixes(self, kept_sequences)
        ctx = self._ctx
        remove, decode = ctx.kv_cache_seq_rm, ctx.decode

        def remove_live(seq_id: int, p0: int, p1: int) -> bool:  # llama_cpp passes -1: every sequence
            return bool(remove(0 if seq_id < 0 else seq_id, p0, p1))

        def decode_making_room(batch: Any) -> None:
            while True:
                try:
                    return decode(batch)  # type: ignore[no-any-return]  # unannotated upstream
                except RuntimeError as exc:  # "llama_decode returned 1": no free cell for the batch
                    if "returned 1" not in str(exc) or not prefixes.drop_oldest():
                        raise
                    self.made_room += 1

        ctx.kv_cache_seq_rm = remove_live  # type: ignore[method-assign]  # per instance, on purpose
        ctx.decode = decode_making_room  # type: ignore[method-assign]  # per instance, on purpose

    def _one_buffer_for(self, sequences: int) -> None:
        """Rebuild the context for `sequences` sequences sharing one KV buffer of n_ctx
        cells (llama_cpp.Llama has no such argument; its context is built in __init__)."""
        params = self.context_params
        params.n_seq_max = sequences
        params.kv_unified = True  # one buffer: a kept prefix's cells are shared, not split per sequence
        params.swa_full = True  # Gemma's sliding-window layers keep every cell a kept prefix needs
        self._ctx.close()  # type: ignore[no-untyped-call]  # unannotated upstream
        self._ctx = self._stack.enter_context(
            contextlib.closing(_internals.LlamaContext(model=self._model, params=params, verbose=self.verbose))
        )

    def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ARG002 - ours replace llama_cpp's
        if self.last_sampler is not None:
            self.last_sampler.close()
        self.last_sampler = CheckedSampler(self, self.next_sampling, self._seed, self.next_grammar)
        return self.last_sampler

    def pause(self, slot: int) -> Paused:
        """Between two tokens of a generation: put it aside under parking sequence `slot`
        (its cells stay; the live sequence is then free for another generation)."""
        assert self.prefixes is not None and slot in self.parking_slots
        self.prefixes.hold(slot)
        paused = Paused(self._input_ids.tolist(), self._sampler, self.last_sampler)
        # The next generation's sampler must not close this one's (`_init_sampler`).
        self._sampler = self.last_sampler = None
        return paused

    def resume(self, slot: int, paused: Paused) -> None:
        """Make the generation paused under `slot` the live one again, where it stopped."""
        assert self.prefixes is not None
        self.prefixes.take(slot)
        n = len(paused.tokens)
        self.input_ids[:n] = paused.tokens
        self.n_tokens = n
        self._sampler, self.last_sampler = paused.sampler, paused.last_sampler

    def save_state(self) -> llama_cpp.LlamaState:
        """llama_cpp's, copying one logits row instead of one per prompt token.

        Its `save_state` copies `scores[:n_tokens]`: with `logits_all` off that is up to
        n_batch rows of n_vocab floats, 512 MB with Gemma's 262,144-token vocabulary, all
        made resident by the copy, when a load reads back only the last. It was a run's
        peak memory while the sidecar saved states (issue 30, item 3); it keeps prefixes
        in the KV buffer now (sidecar/llm/kv_prefixes.py) and saves none, but a tool or
        test that saves one should not pay it. Nothing reads the other rows: with
        `logits_all` off llama_cpp never writes them."""
        if self._logits_all:  # every row is real then (never so in the sidecar)
            return super().save_state()
        full = self.scores
        last = max(0, min(self.n_tokens, full.shape[0]) - 1)
        # `_scores` is `scores[:n_tokens]`: a one-row view makes it one row.
        self.scores = full[last : last + 1]
        try:
            return super().save_state()
        finally:
            self.scores = full
