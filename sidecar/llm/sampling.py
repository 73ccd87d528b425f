"""Sampling for the embedded model: a grammar checked on the sampled token first,
as llama.cpp's own common sampler does, instead of over the whole vocabulary.

llama-cpp-python puts `grammar=` in its sampler chain ahead of top-k, so the
grammar is matched against all 262,144 tokens of Gemma's vocabulary at every
step: 116.7 ms a token here, against 20.8 ms this way and 16.8 ms with no grammar
(scripts/bench/bench_grammar.py, docs/benchmarks.md). The
grammar only has to agree with the token that is kept. So the chain (penalties,
top-k, top-p, min-p, temperature, seeded draw) picks a token; the grammar checks
that one token; only when it refuses is the grammar applied to candidates and the
chain run again on what is left. The result obeys the grammar exactly as the
whole-vocabulary way does.

A refusal does not hand the grammar all 262,144 tokens either: llama.cpp decodes
every candidate it is given into a heap vector, 50-150 MB a pass, a run's memory
peak, and freed in pieces the heap kept (RSS +150 MB over 60 runs, issue 30 item
3). It gets the highest logits first, in growing slices, until enough of them pass
that the chain's pick among the allowed cannot lie outside (`_Enough`).

The sidecar's generations draw with it in a loop of their own, several sequences to a
decode (sidecar/llm/local.py, sidecar/llm/turns.py): `sample(ctx, row)` reads any row of
a batch's logits. `VoiceLlama` (sidecar/llm/voice_llama.py) also puts it under
llama-cpp-python's `create_completion`, for tools and tests that call that.
"""

from __future__ import annotations

import ctypes
import math
from collections import deque
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import _internals

from sidecar.llm.types import Sampling

__all__ = ["CheckedSampler", "GrammarError"]


class GrammarError(ValueError):
    """llama.cpp could not parse a grammar (a bug in ours: never the game's input)."""


#: Tokens the grammar is first given after a refusal (then 8 times as many, and so on).
FIRST_SLICE = 1024


class _Enough:
    """Whether a slice of the highest logits, the grammar applied, holds the token the
    chain would pick from the whole vocabulary, so the rest need not be decoded.

    The chain is: repeat penalty (lowers the logits of the last `repeat_last_n` tokens
    drawn), then greedy, or top-k, top-p, min-p, temperature and a draw. Every token
    outside the slice has a logit at most the slice's lowest (`floor`). An allowed,
    unpenalised token in the slice has at least that logit after the penalty too, so
    - greedy: one such token settles it (the highest allowed logit is in the slice);
    - top-k: `top_k` of them settle it (no token outside can enter the k kept);
    - min-p (top-p off): one of them whose logit clears `floor` by more than -ln(min_p)
      settles it: every token outside is below min-p's cut, and so is any token that
      the slice and the whole vocabulary would rank differently.
    A repeat penalty below 1 raises logits: then only the whole vocabulary is exact."""

    def __init__(self, sampling: Sampling, n_vocab: int) -> None:
        greedy = sampling.temperature <= 0
        self.keep = 1 if greedy else sampling.top_k if sampling.top_k > 0 else n_vocab
        self.min_p_gap = (
            -math.log(sampling.min_p) if not greedy and 0 < sampling.min_p < 1 and sampling.top_p >= 1 else None
        )
        self.penalised = sampling.repeat_penalty != 1.0 and sampling.repeat_last_n != 0
        if sampling.repeat_penalty < 1.0:
            self.keep, self.min_p_gap = n_vocab + 1, None
        self.recent: deque[int] = deque(maxlen=max(0, sampling.repeat_last_n))

    def __call__(self, ids: Any, logits: Any, floor: float) -> bool:
        free = np.isfinite(logits)
        if self.penalised and self.recent:
            free &= ~np.isin(ids, np.fromiter(self.recent, dtype=np.intc))
        n_free = int(np.count_nonzero(free))
        if n_free >= self.keep:
            return True
        return n_free > 0 and self.min_p_gap is not None and float(logits[free].max()) - self.min_p_gap > floor


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
        self._enough = _Enough(sampling, n_vocab)
        self._one = _internals.LlamaTokenDataArray(n_vocab=1)
        #: Tokens the grammar refused first (each cost one whole-vocabulary pass).
        self.refused = 0
        #: The most candidates the grammar was given for one token after a refusal.
        self.widest = 0
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

    def _allowed_slice(self, ctx: Any, idx: int) -> None:
        """Fill `_all` with the highest-logit tokens, the grammar applied (the refused at
        -inf), enough of them for the chain to pick as from the whole vocabulary (`_Enough`)."""
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        order: Any = None
        size = FIRST_SLICE
        while True:
            self.widest = max(self.widest, min(size, self._n_vocab))
            if size >= self._n_vocab:  # every token: the pass this replaces
                llama_cpp.llama_sampler_apply(self._grammar, self._candidates(ctx, idx))
                return
            if order is None:  # the top `size`, unordered: enough for the first slice
                top = np.argpartition(logits, -size)[-size:]
            else:
                top = order[:size]
            data = self._all.candidates_data
            data.id[:size] = top
            data.logit[:size] = logits[top]
            data.p[:size] = 0.0
            floor = float(data.logit[:size].min())
            self._all.candidates.size = size
            self._all.candidates.sorted = False
            self._all.candidates.selected = -1
            llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(self._all.candidates))
            if self._enough(data.id[:size], data.logit[:size], floor):
                return
            if order is None:
                order = np.argsort(logits)[::-1]
            size *= 8

    def sample(self, ctx: Any, idx: int) -> int:
        llama_cpp.llama_sampler_apply(self._chain.sampler, self._candidates(ctx, idx))
        token = self._picked()
        if self._grammar is not None:
            if not self._grammar_allows(token):
                self.refused += 1
                self._allowed_slice(ctx, idx)
                llama_cpp.llama_sampler_apply(self._chain.sampler, ctypes.byref(self._all.candidates))
                token = self._picked()
            llama_cpp.llama_sampler_accept(self._grammar, token)
        llama_cpp.llama_sampler_accept(self._chain.sampler, token)
        self._enough.recent.append(token)
        self.sampled += 1
        return token

    def __del__(self) -> None:
        # A generation's sampler is closed when the next one is made (`VoiceLlama`), but a
        # paused generation's (sidecar/llm/turns.py) may end after that: then here.
        if hasattr(self, "_chain"):
            self.close()

    def close(self) -> None:
        if self._grammar is not None:
            llama_cpp.llama_sampler_free(self._grammar)
            self._grammar = None
        self._chain.close()  # type: ignore[no-untyped-call]  # unannotated upstream
