"""The scripted fake model: a litellm custom provider ("scripted/<name>") that
streams deterministic text fast and fails or stalls on cue.

It exists so tests in every language can drive the real sidecar process
through the real litellm path without a model. Cues are read from the last
prompt message (where the run's input sits); docs/runs.md lists them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM

from sidecar.config import ScriptConfig

__all__ = ["ScriptedLLM", "DEFAULT_REPLY", "PROVIDER"]

PROVIDER = "scripted"

DEFAULT_REPLY = (
    "The torchlight wavers as the moment unfolds. "
    "Somewhere in the dark, something shifts and listens! "
    "Then the silence returns, heavier than before."
)

_CUE = re.compile(r"#(fail-mid|stall-mid|fail|flaky|stall|choose|garbage|echo)(?::([A-Za-z0-9_]+))?")


def _raise(kind: str, model: str) -> None:
    """Raise the litellm exception a real provider would for `kind`."""
    e = litellm.exceptions
    kw: dict[str, Any] = {"message": f"scripted {kind}", "llm_provider": PROVIDER, "model": model}
    table: dict[str, Any] = {
        "rate_limit": e.RateLimitError,
        "unavailable": e.ServiceUnavailableError,
        "internal": e.InternalServerError,
        "timeout": e.Timeout,
        "auth": e.AuthenticationError,
        "bad_request": e.BadRequestError,
        "context_window": e.ContextWindowExceededError,
        "content_filter": e.ContentPolicyViolationError,
        "connection": e.APIConnectionError,
    }
    cls = table.get(kind)
    if cls is None:
        raise e.APIError(status_code=500, **kw)
    raise cls(**kw)


def _chunks(text: str, size: int) -> list[str]:
    if size > 0:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\S+\s*|\s+", text)


class ScriptedLLM(CustomLLM):
    """Serves every "scripted/<name>" model; `scripts` maps <name> to its script."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, ScriptConfig] = {}
        self._turn: dict[str, int] = {}
        #: Prompts that already failed once under a #flaky cue.
        self._flaked: set[str] = set()

    def _reply(self, name: str, script: ScriptConfig, cue: str, arg: str, last: str) -> str:
        if cue == "echo":
            return last
        if cue == "garbage":
            return "I cannot decide. There is no choice to be made here."
        replies = script.replies or [DEFAULT_REPLY]
        turn = self._turn.get(name, 0)
        self._turn[name] = turn + 1
        reply = replies[turn % len(replies)]
        if cue == "choose":
            n = int(arg) if arg.isdigit() else 1
            reply += f' {{"action": {n}, "message": "So be it.", "notes": "chose {n}"}}'
        return reply

    async def astreaming(self, model: str, messages: list, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        name = model.split("/", 1)[-1]
        script = self.scripts.get(name) or ScriptConfig()
        last = str(messages[-1].get("content", "")) if messages else ""
        found = list(_CUE.finditer(last))
        cue, arg = (found[-1].group(1), found[-1].group(2) or "") if found else ("", "")
        params = kwargs.get("optional_params") or {}
        max_tokens = int(params.get("max_tokens") or 0)
        if cue == "fail":
            _raise(arg, model)
        if cue == "flaky" and last not in self._flaked:
            self._flaked.add(last)
            _raise(arg or "unavailable", model)
        if script.first_token_delay_ms:
            await asyncio.sleep(script.first_token_delay_ms / 1000)
        if cue == "stall":
            await asyncio.Event().wait()
        pieces = _chunks(self._reply(name, script, cue, arg, last), script.chunk_chars)
        finish = "stop"
        if max_tokens and len(pieces) > max_tokens:
            pieces, finish = pieces[:max_tokens], "length"
        half = max(1, len(pieces) // 2)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
        usage = {
            "prompt_tokens": max(1, int(prompt_chars * script.tokens_per_char)),
            "completion_tokens": len(pieces),
            "total_tokens": 0,
        }
        for i, piece in enumerate(pieces):
            if i == half and cue == "fail-mid":
                _raise(arg, model)
            if i == half and cue == "stall-mid":
                await asyncio.Event().wait()
            if i and script.chunk_delay_ms:
                await asyncio.sleep(script.chunk_delay_ms / 1000)
            yield {"text": piece, "is_finished": False, "finish_reason": "", "usage": None, "index": 0}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        yield {"text": "", "is_finished": True, "finish_reason": finish, "usage": usage, "index": 0}
