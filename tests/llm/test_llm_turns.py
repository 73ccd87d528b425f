"""Issue 30, item 4: generations on the embedded model take turns, all of them in one
decode a step (sidecar/llm/turns.py), on the real weights. Each decodes into a sequence
of its own in the one buffer, so a reply that shared its decodes with others is the
reply it gives alone from the same kept prompt (or, where the KV's last bits tip a greedy
near-tie, one the model finds about as likely); a run never waits for another's whole
reply; a cancelled one hands out nothing after the step it was in; and generations that
would overfill the buffer wait their turn instead."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from local_runs import assert_about_as_likely, chat
from waits import eventually

from sidecar.llm.local import LocalLLM
from sidecar.llm.types import Chunk, Sampling

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]

SCENES = {
    "smith": chat(
        "You voice Halvard, an old smith. " + "Sparks fly as the hammer rings. " * 12, "A knight asks for a blade."
    ),
    "guard": chat(
        "You voice Brin, a gate guard. " + "Rain drums on the watchtower roof. " * 12, "A cart arrives at dusk."
    ),
    "witch": chat(
        "You voice Morwen, a marsh witch. " + "Frogs croak among the reeds. " * 12, "A child brings a sick goat."
    ),
}


def _params(max_tokens: int) -> dict[str, object]:
    return {"max_tokens": max_tokens, "sampling": Sampling(temperature=0.0), "seed": 1}


async def _speak(
    model: LocalLLM, name: str, max_tokens: int, log: list[tuple[str, bool]], stop_after: int = 0
) -> tuple[str, Chunk | None]:
    """`name`'s reply (and its last chunk), noting each chunk in `log`; after `stop_after`
    chunks (0: never) the caller walks away, as a cancelled run's does."""
    parts: list[str] = []
    last = None
    async with contextlib.aclosing(model.astreaming("local/x", SCENES[name], _params(max_tokens))) as stream:
        async for chunk in stream:
            log.append((name, chunk.finish is not None))
            parts.append(chunk.text)
            last = chunk
            if stop_after and len(parts) >= stop_after:
                break
    return "".join(parts), last


def _fresh(model: LocalLLM) -> None:
    model._llm.prefixes.clear()
    model._llm.reset()


async def test_generations_take_turns_and_each_replies_as_it_does_alone(local_llm) -> None:
    # Each prompt evaluated once and kept, then each reply alone from it: the path the
    # replies that take turns follow too (a prompt evaluated in other slices may differ in
    # the last bits of its KV, and a greedy reply with them: flash attention).
    _fresh(local_llm)
    for name in SCENES:
        await _speak(local_llm, name, 24, [])
    alone = {}
    for name in SCENES:
        alone[name], _ = await _speak(local_llm, name, 24, [])
    log: list[tuple[str, bool]] = []
    replies = await asyncio.gather(*(_speak(local_llm, name, 24, log) for name in SCENES))

    # The same reply, or, where the KV's last bits tip a greedy near-tie (seen with the
    # portable runtime's per-CPU kernels: "silver one" against "silver-grey"), one the model
    # finds about as likely: never the reply of other cells.
    for name, (text, _) in zip(SCENES, replies, strict=True):
        if text != alone[name]:
            assert_about_as_likely(local_llm, SCENES[name], text, alone[name])
    first_end = next(i for i, (_, end) in enumerate(log) if end)
    assert {name for name, _ in log[:first_end]} == set(SCENES), log  # all spoke before any ended
    assert local_llm._turns.most_at_once >= 3 and local_llm._turns.most_in_a_decode >= 3  # one batch
    for _, last in replies:  # the wait for the model is reported with the usage
        assert last is not None and last.usage is not None and last.queued_ms > 0


async def test_a_stopped_generation_hands_out_nothing_after_its_step(local_llm) -> None:
    _fresh(local_llm)
    stopped = local_llm.stopped
    log: list[tuple[str, bool]] = []
    replies = await asyncio.gather(
        _speak(local_llm, "smith", 40, log),
        _speak(local_llm, "guard", 200, log, stop_after=3),
        _speak(local_llm, "witch", 40, log),
    )
    assert len([1 for name, _ in log if name == "guard"]) == 3
    assert replies[0][1] is not None and replies[0][1].finish is not None  # the others went on
    assert replies[2][1] is not None and replies[2][1].finish is not None
    assert local_llm.stopped == stopped + 1 and local_llm.stop_lag <= 1
    await eventually(lambda: local_llm.waiting == 0, what="every generation's turn ended")


async def test_generations_that_would_overfill_the_buffer_wait_their_turn() -> None:
    small = LocalLLM(n_ctx=1024)
    small.preload()
    try:
        tokens = small.count_tokens(SCENES["smith"][0]["content"])
        log: list[tuple[str, bool]] = []
        # Each may hold its prompt and 600 tokens more: two do not fit in 1,024 cells.
        await asyncio.gather(_speak(small, "smith", 600 - tokens, log), _speak(small, "guard", 600 - tokens, log))
        first_end = next(i for i, (_, end) in enumerate(log) if end)
        assert {name for name, _ in log[: first_end + 1]} == {"smith"}, log  # the guard began after
        assert small._turns.most_at_once == 1
    finally:
        small.close()
