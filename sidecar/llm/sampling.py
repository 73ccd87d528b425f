"""Sampling for the embedded model: a grammar checked on the sampled token first,
as llama.cpp's own common sampler does, instead of over the whole vocabulary.

llama-cpp-python puts `grammar=` in its sampler chain ahead of top-k, so the
grammar is matched against all 262,144 tokens of Gemma's vocabulary at every
step: 116.7 ms a token here, against 20.8 ms this way and 16.8 ms with no grammar
(scripts/bench_grammar.py, docs/benchmarks.md). The
grammar only has to agree with the token that is kept. So the chain (penalties,
top-k, top-p, min-p, temperature, seeded draw) picks a token; the grammar checks
that one token; only when it refuses is the grammar applied to every candidate
and the chain run again on what is left. The result obeys the grammar exactly
as the whole-vocabulary way does, and a rejection costs what every token cost before.

`VoiceLlama` is llama_cpp.Llama with this sampler: `create_completion` keeps doing
the rest (prompt cache, stop strings, streaming, finish reasons).
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _internals

from sidecar.llm.types import Sampling

__all__ = ["CheckedSampler", "GrammarError", "VoiceLlama"]


class GrammarError(ValueError):
    """llama.cpp could not parse a grammar (a bug in ours: never the game's input)."""


class CheckedSampler:
    """The object `Llama.generate` calls `.sample(ctx, idx)` on: returns the next token,
    already accepted by the chain and the grammar."""

    def __init__(self, llm: llama_cpp.Llama, sampling: Sampling, seed: int, grammar: str | None) -> None:
        n_vocab = llm.n_vocab()
        self._n_vocab = n_vocab
        # llama-cpp-python leaves these methods unannotated:
        self._chain = _internals.LlamaSampler()  # type: ignore[no-untyped-call]
        self._chain.add_penalties(n_vocab, sampling.repeat_last_n, sampling.repeat_penalty, 0.0, 0.0)
        if sampling.temperature <= 0:
            self._chain.add_greedy()  # type: ignore[no-untyped-call]  # unannotated upstream
        else:
            self._chain.add_top_k(sampling.top_k)
            self._chain.add_top_p(sampling.top_p, 1)
            self._chain.add_min_p(sampling.min_p, 1)
            self._chain.add_temp(sampling.temperature)
            self._chain.add_dist(seed)
        self._grammar: Any = None
        if grammar is not None:
            self._grammar = llama_cpp.llama_sampler_init_grammar(
                llm._model.vocab, grammar.encode("utf-8"), b"root"
            )
            if not self._grammar:
                raise GrammarError(f"llama.cpp refused the grammar:\n{grammar}")
        self._all = _internals.LlamaTokenDataArray(n_vocab=n_vocab)
        self._one = _internals.LlamaTokenDataArray(n_vocab=1)
        #: Tokens the grammar refused first (each cost one whole-vocabulary pass).
        self.refused = 0
        #: Tokens sampled: the generation's completion tokens (stream chunks are not: the
        #: last one carries only the finish reason, and a held stop sequence merges several).
        self.sampled = 0

    def _candidates(self, ctx: Any, idx: int) -> Any:
        logits = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        self._all.copy_logits(np.ctypeslib.as_array(logits, shape=(self._n_vocab,)))
        return ctypes.byref(self._all.candidates)

    def _picked(self) -> int:
        return int(self._all.candidates_data.id[self._all.candidates.selected])

    def _grammar_allows(self, token: int) -> bool:
        one = self._one
        one.candidates_data.id[0] = token
        one.candidates_data.logit[0] = 0.0
        one.candidates.size = 1
        one.candidates.sorted = False
        llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(one.candidates))
        return not math.isinf(float(one.candidates_data.logit[0]))

    def sample(self, ctx: Any, idx: int) -> int:
        llama_cpp.llama_sampler_apply(self._chain.sampler, self._candidates(ctx, idx))
        token = self._picked()
        if self._grammar is not None:
            if not self._grammar_allows(token):
                self.refused += 1
                candidates = self._candidates(ctx, idx)
                llama_cpp.llama_sampler_apply(self._grammar, candidates)
                llama_cpp.llama_sampler_apply(self._chain.sampler, candidates)
                token = self._picked()
            llama_cpp.llama_sampler_accept(self._grammar, token)
        llama_cpp.llama_sampler_accept(self._chain.sampler, token)
        self.sampled += 1
        return token

    def close(self) -> None:
        if self._grammar is not None:
            llama_cpp.llama_sampler_free(self._grammar)
            self._grammar = None
        self._chain.close()  # type: ignore[no-untyped-call]  # unannotated upstream


class VoiceLlama(llama_cpp.Llama):
    """llama_cpp.Llama whose generations sample with `CheckedSampler`: set
    `next_sampling` (and `next_grammar`) before each `create_completion`."""

    next_sampling: Sampling = Sampling()
    next_grammar: str | None = None
    #: The sampler of the last generation (its `refused` count, for the record).
    last_sampler: CheckedSampler | None = None

    def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ARG002 - ours replace llama_cpp's
        if self.last_sampler is not None:
            self.last_sampler.close()
        self.last_sampler = CheckedSampler(self, self.next_sampling, self._seed, self.next_grammar)
        return self.last_sampler

    def save_state(self) -> llama_cpp.LlamaState:
        """llama_cpp's, copying one logits row instead of one per prompt token.

        Its `save_state` copies `scores[:n_tokens]`: with `logits_all` off that is up to
        n_batch rows of n_vocab floats, 512 MB with Gemma's 262,144-token vocabulary, all
        made resident by the copy, before the prompt cache slims it to the one row a load
        reads back (sidecar/llm/prompt_cache.py). That copy was a run's peak memory
        (issue 30, item 3). Nothing reads the other rows: with `logits_all` off llama_cpp
        never writes them."""
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
