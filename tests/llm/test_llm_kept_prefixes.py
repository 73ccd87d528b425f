"""Issue 30, items 2 and 3: an actor's turn after another actor spoke starts from its own
earlier prompt, kept as a sequence in the context's KV buffer (sidecar/llm/kv_prefixes.py),
and replies exactly as a fresh evaluation does. Before, the prompt cache never saved a
state (an empty `PromptStateCache` was false to llama-cpp-python's `if self.cache:`), and
such a turn evaluated its whole prompt again: 1-4 of about 500 tokens were reused."""

from __future__ import annotations

import pytest
from local_runs import chat, greedy_run

from sidecar.llm.llama_settings import KEPT_TOKENS
from sidecar.llm.local import LocalLLM

pytest.importorskip("llama_cpp")
pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.timeout(600)]

HARBOUR = "You narrate a harbour town at dusk. " + "Gulls circle the masts while crates are counted. " * 25
FORGE = "You voice Halvard, an old smith. " + "Sparks fly as the hammer rings on the anvil. " * 25


def _run(model: LocalLLM, messages: list[dict[str, str]]) -> tuple[str, int, int]:
    return greedy_run(model, messages, 16)


def test_an_actors_next_turn_starts_from_its_kept_prompt_and_replies_as_fresh(local_llm) -> None:
    _run(local_llm, chat(HARBOUR, "A ship docks."))
    _run(local_llm, chat(FORGE, "The fire dies down."))  # another actor: the live sequence is the forge now
    text, prompt, cached = _run(local_llm, chat(HARBOUR, "A ship docks.", "The harbour master shouts."))
    assert cached >= prompt * 0.8, (cached, prompt)
    assert local_llm._llm.prefixes.restored >= 1

    local_llm._llm.prefixes.clear()
    local_llm._llm.reset()
    fresh, _, none = _run(local_llm, chat(HARBOUR, "A ship docks.", "The harbour master shouts."))
    assert none == 0 and text == fresh


def test_kept_sequences_make_room_when_the_buffer_is_full() -> None:
    small = LocalLLM(n_ctx=1024)  # about two of these prompts fill it
    small.preload()
    try:
        for i in range(6):
            system = f"Scene {i}. " + (HARBOUR if i % 2 else FORGE)  # none continues another
            _run(small, chat(system, "Something happens."))
        prefixes = small._llm.prefixes
        assert small._llm.made_room >= 1, "the kept sequences never filled the buffer: the test proves nothing"
        assert 1 <= len(prefixes) and prefixes.tokens_kept <= max(KEPT_TOKENS, 1024)
        text, prompt, _ = _run(small, chat(FORGE + " Scene 9.", "The end."))
        assert text and prompt > 300
    finally:
        small.close()
