"""One greedy generation on the embedded model's worker path, as the sidecar runs it
(`LocalLLM._generate`), for tests that look at what it reused (tests/llm)."""

from __future__ import annotations

import threading
from typing import Any

from sidecar.llm.types import Chunk, Sampling

__all__ = ["chat", "greedy_run"]


def chat(system: str, *turns: str) -> list[dict[str, str]]:
    """A system message, then each turn as a user message."""
    return [{"role": "system", "content": system}] + [{"role": "user", "content": t} for t in turns]


def greedy_run(model: Any, messages: list[dict[str, str]], max_tokens: int) -> tuple[str, int, int]:
    """(text, prompt tokens, tokens reused) of one greedy generation by `model` (a loaded LocalLLM)."""
    out: list[object] = []
    params = {"max_tokens": max_tokens, "sampling": Sampling(temperature=0.0), "seed": 1}
    model._count_waiting(1)  # as `astreaming` counts a generation it submits (`_generate` counts it out)
    model._generate(messages, params, threading.Event(), out.append)
    assert not isinstance(out[-1], BaseException), out[-1]
    chunks = [c for c in out if isinstance(c, Chunk)]
    prompt, _, cached = chunks[-1].usage
    return "".join(c.text for c in chunks), prompt, cached
