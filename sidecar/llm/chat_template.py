"""The prompt of a GGUF that carries a chat template (`tokenizer.chat_template`: an
instruct model such as SmolLM2-135M-Instruct): the chat the context engine built,
rendered by the model's own template through llama-cpp-python's Jinja2 formatter,
the one its own chat completions use. A GGUF without one (a base model such as the
default Gemma 3 270M) is given a document instead (sidecar/llm/document.py).

The chat is a short one built from the same turn a document shows (sidecar/llm/
document.py's `Turn`): one system turn that says what to answer and how, and one
user turn with the scene's facts, the newest earlier lines and what this turn
answers. Never the model's own earlier replies as its turns: an instruct model
this size copies its last turn (measured: SmolLM2-135M answered a second event
with its first narration, word for word), and never the rules written for
large models (a 135M model reads them as the scene: "The scene below unfolds").

Some templates refuse a system turn (they raise from inside the template); those
get the system text at the head of the first user turn, as their model card asks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from sidecar.llm.document import Turn
from sidecar.llm.types import ReplyShape

__all__ = ["ChatTemplate", "short_chat", "template_of"]

log = logging.getLogger("sidecar.llm.chat_template")


#: What each shape asks, in the second person an instruct model is tuned on.
_ASK = {
    "prose": "You narrate a video game. Say what happens in the event, in one to three short sentences "
    "of plain prose. Use only the names given.",
    "line": "You are {me}, a character in a video game. Answer what is said to you with one short "
    "spoken line, in character. Use only the names given.",
    "decision": "You are {me}, a character in a video game. Say in one short line what you do, in "
    "character. Use only the names given.",
}


#: A turn's line as said to the actor: 'Zoë says: "Is it ready?"'.
_SAID = re.compile(r'^(.{1,80}?) says: "(.*)"$')


def short_chat(turn: Turn, shape: ReplyShape) -> list[dict[str, str]]:
    """The chat an instruct model answers: the task and the scene as the system turn,
    then this turn's event, line or choice as the user's (as chat models are tuned)."""
    me = turn.me or "a character"
    system = [_ASK[shape.kind].replace("{me}", me), "", *turn.facts]
    if turn.earlier:
        system += ["", "Before this:", *turn.earlier]
    if shape.kind == "decision":
        options = " ".join(f"{n}. {o}" for n, o in enumerate(turn.options, 1))
        user = f"{turn.situation}\nOptions: {options}"
    elif said := _SAID.match(turn.said):
        user = f"{said.group(1)}: {said.group(2)}"
    else:
        user = turn.said or f"Event: {turn.ask}"
    return [{"role": "system", "content": "\n".join(system)}, {"role": "user", "content": user}]


def _system_folded(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The chat with its system turns joined onto the first user turn."""
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    first_user = next((m for m in rest if m.get("role") == "user"), None)
    if system and first_user is not None:
        first_user["content"] = f"{system}\n\n{first_user['content']}"
    elif system:
        rest.insert(0, {"role": "user", "content": system})
    return rest


@dataclass
class ChatTemplate:
    """A model's chat template, ready to render a chat up to its answer's start."""

    formatter: Any  # llama_cpp.llama_chat_format.Jinja2ChatFormatter
    #: The template's end-of-turn text, a stop for the answer.
    eos: str

    def render(self, messages: list[dict[str, str]]) -> str:
        try:
            return str(self.formatter(messages=messages).prompt)
        except Exception:  # noqa: BLE001 - a template's raise_exception or a Jinja error
            return str(self.formatter(messages=_system_folded(messages)).prompt)


def template_of(llm: Any) -> ChatTemplate | None:
    """The loaded model's chat template, or None for a GGUF without one."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token_text(token: int) -> str:
        return str(llm._model.token_get_text(token)) if token != -1 else ""

    eos, bos = token_text(llm.token_eos()), token_text(llm.token_bos())
    try:
        formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
        formatter(messages=[{"role": "user", "content": "Hello."}])
    except Exception as exc:  # noqa: BLE001 - a template our Jinja cannot run
        log.warning(
            "the model's chat template cannot be used; it is prompted as a document instead",
            extra={"fields": {"error": str(exc)[:200]}},
        )
        return None
    return ChatTemplate(formatter, eos)
