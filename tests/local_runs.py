"""One greedy generation on the embedded model's path, as the sidecar runs it (the steps
of `LocalLLM._generation`, taken by the model's worker), for tests that look at what it
reused (tests/llm)."""

from __future__ import annotations

import time
from typing import Any

from sidecar.llm.choose import option_log_probs
from sidecar.llm.local_prompt import prompt_of
from sidecar.llm.reply_stream import StopFlag
from sidecar.llm.types import Chunk, Sampling

__all__ = ["NEAR_TIE_NATS", "assert_about_as_likely", "batch_rows", "chat", "greedy_run"]


def chat(system: str, *turns: str) -> list[dict[str, str]]:
    """A system message, then each turn as a user message."""
    return [{"role": "system", "content": system}] + [{"role": "user", "content": t} for t in turns]


def greedy_run(model: Any, messages: list[dict[str, str]], max_tokens: int) -> tuple[str, int, int]:
    """(text, prompt tokens, tokens reused) of one greedy generation by `model` (a loaded LocalLLM)."""
    out: list[object] = []
    params = {"max_tokens": max_tokens, "sampling": Sampling(temperature=0.0), "seed": 1}
    turn = model._turns.submit(model._generation(messages, params, StopFlag(), out.append, time.monotonic()))
    turn.future.result(timeout=300)
    chunks = [c for c in out if isinstance(c, Chunk)]
    prompt, _, cached = chunks[-1].usage
    return "".join(c.text for c in chunks), prompt, cached


#: How much less likely, per token, a greedy reply may be than the one it is compared
#: with, where the two part at a near-tie: with flash attention a prompt evaluated in
#: other slices (from a kept or warmed prefix, or beside other runs in one decode) can
#: differ in the last bits of its KV (docs/runs.md, "Replaying a run"). A reply read from
#: the wrong cells (the fault these tests guard against) is several nats a token less likely.
NEAR_TIE_NATS = 0.25


def mean_log_prob(model: Any, messages: list[dict[str, str]], reply: str) -> float:
    """log P(reply | the prompt `messages` make) per token, scored as a decision's options are."""
    llm = model._llm
    prompt, _, _, _ = prompt_of(messages, None, None)
    prompt_tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    reply_tokens = llm.tokenize(reply.encode("utf-8"), add_bos=False, special=False)
    return option_log_probs(llm, prompt_tokens, [reply_tokens])[0] / len(reply_tokens)


def assert_about_as_likely(model: Any, messages: list[dict[str, str]], reply: str, reference: str) -> None:
    """`reply` is `reference`, or one the model finds about as likely (a tipped near-tie)."""
    if reply != reference:
        got, expected = mean_log_prob(model, messages, reply), mean_log_prob(model, messages, reference)
        assert got >= expected - NEAR_TIE_NATS, (reply, reference, got, expected)


def batch_rows(parts: list[tuple[Any, bool]]) -> list[int]:
    """What a stand-in model's `decode` answers (sidecar/llm/turn_protocol.py, `Host`):
    each part's row of logits, its last token's place in the batch (-1 if not asked)."""
    rows, n = [], 0
    for work, logits in parts:
        n += len(work.tokens)
        rows.append(n - 1 if logits else -1)
    return rows
