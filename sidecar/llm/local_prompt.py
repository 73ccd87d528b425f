"""The text the embedded model continues: a plain document for a base model (a worked
example, then "Reply:"), or the model's own chat template when it has one, and where a
reply stops. The sidecar and the benchmarks' direct llama.cpp calls build it alike."""

from __future__ import annotations

from typing import Any

from sidecar.llm.chat_template import ChatTemplate, short_chat
from sidecar.llm.document import render_document
from sidecar.llm.grammars import stop_for

__all__ = ["EXAMPLE", "STOP", "format_prompt", "prompt_of"]

#: Gemma 3 270M is a base model: it continues documents rather than following
#: chat turns. It stops at the next section, turn or blank line.
STOP = ("\n\n", "##", "\nInput:", "\nEvent:", "\nInvolved:", "Reply:", "<end_of_turn>", "<start_of_turn>")
#: One worked example, fixed (so it is part of every prompt's cached prefix):
#: a base model this small imitates a demonstration far better than it obeys rules.
EXAMPLE = (
    "## Example\n"
    "Input: Narrate what happens: the player opens the old chest.\n"
    "Reply: The rusted lid groans as you lift it. Inside, a bundle of yellowed letters rests on a bed of dust."
)


def format_prompt(messages: list[dict[str, str]]) -> str:
    """Chat messages as a plain document the base model continues: the system
    text, the worked example, then each user message followed by its "Reply:".

    Earlier turns render the same whatever follows, so appending a turn only
    extends the previous prompt (llama.cpp reuses the shared prefix).
    """
    system = [str(m.get("content", "")).strip() for m in messages if m.get("role") == "system"]
    text = "\n\n".join([p for p in system if p] + [EXAMPLE])
    for message in messages:
        content = str(message.get("content", "")).strip()
        if message.get("role") == "assistant":
            text += f"\nReply: {content}"  # exactly what the model continued after "Reply:"
        elif message.get("role") != "system":
            text += f"\n\n{content}"
    return text + "\nReply:"


def prompt_of(messages: list[dict[str, str]], shape: Any, chat: ChatTemplate | None
              ) -> tuple[str, list[str], bool, Any]:
    """What the model continues for `messages`: (prompt, stops, templated, document). The
    model's own template when it has one (`templated`), else a document it continues;
    `document` (sidecar/llm/document.py) is None for an unshaped request. The benchmark
    builds its direct llama.cpp calls with this too, so both sides get the same tokens."""
    if shape is None:
        return format_prompt(messages), list(STOP), False, None
    templated = chat is not None
    document = render_document(messages, shape)
    prompt = chat.render(short_chat(document.turn, shape)) if chat is not None else document.text
    stops = stop_for(shape, templated) + ([chat.eos] if chat is not None and chat.eos else [])
    return prompt, stops, templated, document
