"""One greedy generation on the embedded model's path, as the sidecar runs it (the steps
of `LocalLLM._generation`, taken by the model's worker), for tests that look at what it
reused (tests/llm)."""

from __future__ import annotations

import time
from typing import Any

from sidecar.llm.reply_stream import StopFlag
from sidecar.llm.types import Chunk, Sampling

__all__ = ["chat", "greedy_run"]


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
