"""The scripted fake model ("scripted/<name>"): streams deterministic text fast
and fails or stalls on cue.

It exists so tests in every language can drive the real sidecar process without
a model; it takes the same path after the send as every transport (Chunks into
sidecar.llm.call) and fails the way an OpenAI-compatible server does (an HTTP
error mapped by `faults.http_error`, or a dropped connection), so no litellm is
needed. Cues are read from the last prompt message (where the run's input
sits); docs/runs.md lists them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from sidecar.config import ScriptConfig
from sidecar.llm.faults import http_error
from sidecar.llm.types import Chunk

__all__ = ["ScriptedLLM", "DEFAULT_REPLY"]


DEFAULT_REPLY = (
    "The torchlight wavers as the moment unfolds. "
    "Somewhere in the dark, something shifts and listens! "
    "Then the silence returns, heavier than before."
)

_CUE = re.compile(r"#(fail-mid|stall-mid|fail|flaky|stall|choose|garbage|echo)(?::([A-Za-z0-9_]+))?")


#: Cue argument -> (HTTP status, OpenAI error code) a real server answers with.
_FAULTS: dict[str, tuple[int, str]] = {
    "rate_limit": (429, "rate_limit_exceeded"),
    "unavailable": (503, "service_unavailable"),
    "internal": (500, "server_error"),
    "timeout": (408, "timeout"),
    "auth": (401, "invalid_api_key"),
    "bad_request": (400, "invalid_request_error"),
    "context_window": (400, "context_length_exceeded"),
    "content_filter": (400, "content_filter"),
}


def _raise(kind: str, model: str) -> None:
    """Fail as a provider would for `kind` (unknown kinds: a generic HTTP 500)."""
    if kind == "connection":
        raise ConnectionResetError(f"scripted connection failure ({model})")
    status, code = _FAULTS.get(kind, (500, "server_error"))
    body = json.dumps({"error": {"message": f"scripted {kind or 'failure'}", "type": code, "code": code}})
    raise http_error(status, body, model)


def _chunks(text: str, size: int) -> list[str]:
    if size > 0:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\S+\s*|\s+", text)


class ScriptedLLM:
    """Serves every "scripted/<name>" model; `scripts` maps <name> to its script."""

    def __init__(self) -> None:
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

    async def astreaming(
        self, model: str, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> AsyncIterator[Chunk]:
        """The model's one send point: `model` is "scripted/<name>", `params` the
        transport-neutral request (max_tokens, temperature, stop)."""
        name = model.split("/", 1)[-1]
        script = self.scripts.get(name) or ScriptConfig()
        last = str(messages[-1].get("content", "")) if messages else ""
        found = list(_CUE.finditer(last))
        cue, arg = (found[-1].group(1), found[-1].group(2) or "") if found else ("", "")
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
        usage = (max(1, int(prompt_chars * script.tokens_per_char)), len(pieces), 0)
        for i, piece in enumerate(pieces):
            if i == half and cue == "fail-mid":
                _raise(arg, model)
            if i == half and cue == "stall-mid":
                await asyncio.Event().wait()
            if i and script.chunk_delay_ms:
                await asyncio.sleep(script.chunk_delay_ms / 1000)
            yield Chunk(piece)
        yield Chunk("", finish, usage)
