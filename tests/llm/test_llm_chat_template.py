"""An instruct GGUF's chat template, without a model: which GGUFs are prompted
through one, the short chat they answer, and a template that refuses a system turn."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from sidecar.llm.chat_template import short_chat, template_of
from sidecar.llm.document import Turn
from sidecar.llm.types import ReplyShape

pytest.importorskip("llama_cpp")

CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
#: As some templates do (Mistral's older ones): a system turn is an error.
NO_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
    "{{ bos_token + '[' + m['role'] + '] ' + m['content'] + eos_token }}{% endfor %}"
)


def fake_llm(template: str | None) -> Any:
    tokens = {1: "<s>", 2: "</s>"}
    model = SimpleNamespace(token_get_text=tokens.__getitem__)
    metadata = {"tokenizer.chat_template": template} if template else {}
    return SimpleNamespace(metadata=metadata, _model=model, token_eos=lambda: 2, token_bos=lambda: 1)


TURN = Turn(
    facts=("Location: The Ember Forge — A hot smithy.", "Player: Zoë — An apprentice.", "You are Halvard"),
    earlier=('Zoë says: "Morning."', 'Halvard says: "Morning, lass."'),
    said='Zoë says: "Is the sword ready?"',
    me="Halvard",
)


def test_a_gguf_without_a_template_is_prompted_as_a_document() -> None:
    assert template_of(fake_llm(None)) is None


def test_the_models_own_template_renders_the_short_chat_up_to_the_answer() -> None:
    chat = template_of(fake_llm(CHATML))
    assert chat is not None and chat.eos == "</s>"
    prompt = chat.render(short_chat(TURN, ReplyShape("line")))
    assert prompt.startswith("<|im_start|>system\nYou are Halvard, a character in a video game.")
    assert "Location: The Ember Forge" in prompt and 'Halvard says: "Morning, lass."' in prompt
    assert prompt.endswith("<|im_start|>user\nZoë: Is the sword ready?<|im_end|>\n<|im_start|>assistant\n")
    # The model's own earlier replies are never its turns: it would copy the last one.
    assert prompt.count("<|im_start|>assistant") == 1


def test_a_template_that_refuses_a_system_turn_gets_it_at_the_head_of_the_user_turn() -> None:
    chat = template_of(fake_llm(NO_SYSTEM))
    assert chat is not None
    prompt = chat.render(short_chat(TURN, ReplyShape("line")))
    assert prompt.startswith("<s>[user] You are Halvard, a character")
    assert prompt.endswith("Zoë: Is the sword ready?</s>")


def test_a_decision_and_a_narration_ask_for_what_their_shape_holds() -> None:
    decision = Turn((), (), "", "Pell", ("Hide", "Sell bread"), situation="Situation: Ruth wants bread.")
    user = short_chat(decision, ReplyShape("decision", 2))[1]["content"]
    assert user == "Situation: Ruth wants bread.\nOptions: 1. Hide 2. Sell bread"
    narration = Turn(("Location: A road.",), (), "Event: A wolf howls.", "")
    system, user = (m["content"] for m in short_chat(narration, ReplyShape("prose")))
    assert system.startswith("You narrate a video game.") and system.endswith("Location: A road.")
    assert user == "Event: A wolf howls."


def test_a_template_jinja_cannot_run_falls_back_to_the_document() -> None:
    assert template_of(fake_llm("{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}")) is None
