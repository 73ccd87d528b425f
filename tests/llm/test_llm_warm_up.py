"""Issue 30, item 2: the embedded model warms a prompt while idle (`LocalLLM.warm`), a
run that shares its prefix evaluates only the rest and replies as a fresh evaluation
does, and a warm-up gives way to a generation at its next step (sidecar/llm/local.py).
The sidecar's own warm-ups, after a session opens or changes: tests/e2e/test_warm_up.py."""

from __future__ import annotations

import asyncio

import pytest
from local_runs import assert_about_as_likely, chat, greedy_run
from waits import eventually

from sidecar.llm.llama_settings import WARM_STEP
from sidecar.llm.local import LocalLLM
from sidecar.llm.local_prompt import format_prompt
from sidecar.llm.types import Sampling

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]

TAVERN = "You narrate a crowded tavern at night. " + "A bard tunes his lute while dice clatter on oak. " * 30


def _messages(*turns: str) -> list[dict[str, str]]:
    return chat(TAVERN, *turns)


def _run(model: LocalLLM, messages: list[dict[str, str]]) -> tuple[str, int, int]:
    return greedy_run(model, messages, 12)


def _prompt_tokens(model: LocalLLM, messages: list[dict[str, str]]) -> int:
    return len(model._llm.tokenize(format_prompt(messages).encode(), add_bos=True, special=True))


async def test_a_warmed_prompt_leaves_a_run_only_its_new_tokens_and_the_same_reply(local_llm) -> None:
    warmed = await local_llm.warm(_messages("The door bangs open."), None)
    assert warmed > 300, warmed
    assert await local_llm.warm(_messages("The door bangs open."), None) == 0  # nothing new: nothing evaluated

    text, prompt, cached = _run(local_llm, _messages("The door bangs open.", "A stranger walks in, dripping wet."))
    assert cached >= warmed - 4, (cached, warmed)  # all but the reply cue and what follows it
    assert prompt - cached < 40, (prompt, cached)

    local_llm._llm.prefixes.clear()
    local_llm._llm.reset()
    stranger = _messages("The door bangs open.", "A stranger walks in, dripping wet.")
    fresh, _, none = _run(local_llm, stranger)
    # The same reply, or where the warmed KV's last bits tip a near-tie (seen on CI's
    # runtime: "dripping wet." then the end of turn, against "dripping wet.\nThe door
    # bangs"), one the model finds about as likely.
    assert none == 0
    assert_about_as_likely(local_llm, stranger, text, fresh)


async def test_a_warm_up_gives_way_to_a_generation_at_its_next_step(local_llm) -> None:
    local_llm._llm.prefixes.clear()
    local_llm._llm.reset()
    long = _messages("The fire crackles. " * 80)  # about 1,000 tokens: seconds to evaluate on CPU
    total = _prompt_tokens(local_llm, long)
    llm = local_llm._llm
    warming = asyncio.ensure_future(local_llm.warm(long, None))
    await eventually(lambda: llm.n_tokens >= 2 * WARM_STEP, timeout=60, what="the warm-up is under way")

    params = {"max_tokens": 4, "sampling": Sampling(temperature=0.0), "seed": 1}
    chunks = [c async for c in local_llm.astreaming("local/x", _messages("A mug shatters."), params)]
    warmed = await warming
    assert 2 * WARM_STEP <= warmed < total, (warmed, total)  # it stopped, and kept what it had
    assert chunks[-1].finish is not None
    await eventually(lambda: local_llm.waiting == 0, what="the generation's turn ended")

    # What it evaluated before it gave way is kept: the long prompt now starts from it.
    _, _, cached = _run(local_llm, long)
    assert cached >= warmed - 1, (cached, warmed)


async def test_a_warm_up_never_loads_the_model() -> None:
    idle = LocalLLM()
    assert await idle.warm(_messages("Nothing."), None) == 0
    assert not idle.loaded
    idle.close()
