"""The embedded model's llama_cpp.Llama: our sampler (sidecar/llm/sampling.py), kept
prompt prefixes (sidecar/llm/kv_prefixes.py) and generations that share a decode, all in
the one KV buffer the context allocates at load.

Sequence 0 is the live one llama-cpp-python evaluates into (warm-ups, a decision's
scoring). Then come the kept sequences (finished runs' prompts), then one sequence per
generation that can take turns with others (sidecar/llm/turns.py): the sidecar's
generations decode into those, several in one batch. Sequences share the cells they
agree on: keeping or starting from a kept prefix copies no KV, it only tags cells.
"""

from __future__ import annotations

import contextlib
from typing import Any

import llama_cpp
from llama_cpp import _internals

from sidecar.llm.cpu_level import load_backends
from sidecar.llm.kv_prefixes import KeptPrefixes
from sidecar.llm.sampling import CheckedSampler
from sidecar.llm.turn_protocol import Work
from sidecar.llm.types import Sampling

__all__ = ["VoiceLlama"]


class VoiceLlama(llama_cpp.Llama):
    """llama_cpp.Llama whose generations sample with `CheckedSampler`: set
    `next_sampling` (and `next_grammar`) before each `create_completion`.

    With `kept_sequences`, its context holds that many sequences beside the live one in
    one KV buffer (`prefixes`: sidecar/llm/kv_prefixes.py): llama-cpp-python's own
    evaluation touches sequence 0 only, and a decode that finds no free cell drops the
    least recently kept sequence and tries again. llama.cpp clears the buffer when it
    builds the context, so its pages are resident from the load (the same RSS with a
    second clear or without): keeping sequences in it adds no memory.

    With `turn_sequences` too, that many generations can decode together (`decode`),
    each into a sequence of its own: `turn_seqs`. A decode short of cells drops kept
    sequences only, never those."""

    next_sampling: Sampling = Sampling()
    next_grammar: str | None = None
    #: The sampler of the last generation (its `refused` count, for the record).
    last_sampler: CheckedSampler | None = None
    prefixes: KeptPrefixes | None = None
    #: Kept sequences dropped because a decode found no free cell.
    made_room = 0

    #: The sequences of generations that take turns (sidecar/llm/turns.py), one each.
    turn_seqs: tuple[int, ...] = ()
    _turn_batch: Any = None

    def __init__(self, *args: Any, kept_sequences: int = 0, turn_sequences: int = 0, **kwargs: Any) -> None:
        load_backends()  # a llama.cpp that picks its CPU backend at run time registers none itself
        super().__init__(*args, **kwargs)
        if not kept_sequences:
            return
        self._one_buffer_for(1 + kept_sequences + turn_sequences)
        self.turn_seqs = tuple(range(kept_sequences + 1, kept_sequences + 1 + turn_sequences))
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

    # -- generations of our own, several in one decode (sidecar/llm/turns.py) -----

    def decode(self, parts: list[tuple[Work, bool]]) -> list[int]:
        """Evaluate every part into its sequence in one llama.cpp batch; each part's row
        of logits (-1 where its last token's were not asked for)."""
        n = sum(len(work.tokens) for work, _ in parts)
        if self._turn_batch is None or self._turn_batch._n_tokens < n:
            self._turn_batch = _internals.LlamaBatch(n_tokens=max(n, self.n_batch), embd=0, n_seq_max=1)
        b = self._turn_batch.batch
        rows, j = [], 0
        for work, logits in parts:
            for i, token in enumerate(work.tokens):
                b.token[j], b.pos[j], b.logits[j] = token, work.pos + i, False
                b.seq_id[j][0], b.n_seq_id[j] = work.seq, 1
                j += 1
            b.logits[j - 1] = logits
            rows.append(j - 1 if logits else -1)
        b.n_tokens = j
        self._ctx.decode(self._turn_batch)
        return rows

    def sampler(self, sampling: Sampling, seed: int | None, grammar: str | None) -> CheckedSampler:
        """A generation's own sampler (no seed: llama.cpp draws one)."""
        return CheckedSampler(self, sampling, llama_cpp.LLAMA_DEFAULT_SEED if seed is None else seed, grammar)

    def is_eog(self, token: int) -> bool:
        """The model's end of generation (end of turn, end of text)."""
        return bool(llama_cpp.llama_vocab_is_eog(self._model.vocab, token))

    def piece(self, token: int) -> bytes:
        """A drawn token's bytes (special tokens none)."""
        return self.detokenize([token])

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
