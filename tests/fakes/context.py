"""A tiny stand-in for the context engine (tests only; the real one is
`sidecar.context.ContextEngine`). Renders the input as the last user message,
judges decisions by the last JSON object, records into the session."""

from __future__ import annotations

import json
import re
import time

from sidecar.context.api import (
    Accepted,
    Chosen,
    DecisionInput,
    DialogueInput,
    NarrateInput,
    Prompt,
    PromptSection,
    Rejected,
    RunSpec,
)
from sidecar.state.model import Session, TranscriptEntry


def _input_text(spec: RunSpec) -> str:
    inp = spec.input
    if isinstance(inp, NarrateInput | DialogueInput):
        return inp.text
    if isinstance(inp, DecisionInput):
        opts = "\n".join(f"{i + 1}. {o.label}" for i, o in enumerate(inp.options))
        return f'{inp.situation}\n{opts}\nEnd with {{"action": N}}.'
    return f"Describe {getattr(inp, 'aspect', '')}"


class StandInPrepared:
    def __init__(self, session: Session, spec: RunSpec, count_tokens, budget_tokens: int) -> None:
        self.session, self.spec = session, spec
        text = _input_text(spec)
        self.prompt = Prompt(
            messages=[
                {"role": "system", "content": "You narrate a game. Be brief."},
                {"role": "user", "content": text},
            ],
            sections=[PromptSection("input", count_tokens(text), 1)],
            budget_tokens=budget_tokens,
            prompt_tokens=count_tokens(text),
        )
        self.engine_ids = frozenset(session.world.entities)
        self.recorded: list[tuple[str, bool, str]] = []

    def evaluate(self, reply: str, attempt: int) -> Accepted | Rejected:
        inp = self.spec.input
        if not isinstance(inp, DecisionInput):
            return Accepted()
        found = re.findall(r"\{[^{}]*\}", reply)
        try:
            data = json.loads(found[-1]) if found else None
            n = int(data["action"]) if data else 0
        except (ValueError, KeyError, TypeError):
            n = 0
        if not 1 <= n <= len(inp.options):
            reason = "no usable action in the reply"
            retry = self.prompt.messages + [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": f"Rejected: {reason}. #choose:1"},
            ]
            return Rejected(reason, retry)
        opt = inp.options[n - 1]
        return Accepted(Chosen(opt.action_id, n - 1, data.get("message", "")), notes=data.get("notes"))

    def record(self, reply: str, *, interrupted: bool, run_id: str) -> None:
        self.recorded.append((reply, interrupted, run_id))
        self.session.transcripts.setdefault(self.spec.actor_id, []).append(
            TranscriptEntry("narrator", reply, interrupted=interrupted, run_id=run_id, unix_ms=int(time.time() * 1000))
        )


class StandInContext:
    def __init__(self) -> None:
        self.prepared: list[StandInPrepared] = []

    def prepare(self, session: Session, spec: RunSpec, *, count_tokens, budget_tokens: int) -> StandInPrepared:
        prepared = StandInPrepared(session, spec, count_tokens, budget_tokens)
        self.prepared.append(prepared)
        return prepared
