"""The embedded model's adapter (sidecar/llm/local.py) through ModelGateway.stream,
without its weights: a stand-in for llama_cpp.Llama with the same methods streams
tokens, so what the sidecar does around llama.cpp (prompt layout, parameters,
Chunks, usage with the reused prefix, stopping on cancel) runs for real. The
real model's tests are tests/llm/test_llm_local_model.py (marked local_model)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sidecar.config import Config
from sidecar.llm import Completion, Limits, ModelGateway, ModelRequest, TextPiece
from sidecar.llm.kv_prefixes import common_prefix
from sidecar.llm.local_prompt import STOP, format_prompt
from sidecar.llm.weights import LocalModelStatus

MESSAGES = [{"role": "system", "content": "Narrate."}, {"role": "user", "content": "The door opens."}]


class _Ids(list):
    def tolist(self) -> list[int]:
        return list(self)


class _LiveOnly:
    """KeptPrefixes with nothing kept (sidecar/llm/kv_prefixes.py, tested on the real
    model): a run reuses what the live sequence shares with it."""

    def __init__(self, llama: StandInLlama) -> None:
        self.llama = llama

    def restore(self, tokens: list[int]) -> int:
        return common_prefix(self.llama._input_ids, tokens)

    def keep(self, budget: int) -> None:
        pass


class StandInLlama:
    """What LocalLLM calls on llama_cpp.Llama; one token per word of `reply`."""

    def __init__(self, reply: str = "The hinges creak. Dust falls.", endless: bool = False) -> None:
        self.reply = reply
        self.endless = endless
        self._input_ids = _Ids()
        self.prefixes = _LiveOnly(self)
        self.calls: list[dict[str, Any]] = []
        self.n_tokens = 0
        self.evaluated: list[list[int]] = []
        self.emitted = 0
        self.stream_closed = threading.Event()

    def eval(self, tokens: list[int]) -> None:
        self.evaluated.append(list(tokens))

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [hash(w) % 50_000 for w in data.decode().split()]

    def create_completion(self, tokens: list[int], **params: Any) -> Iterator[dict]:
        self.calls.append({"tokens": tokens, **params})
        words = self.reply.split(" ")

        def stream() -> Iterator[dict]:
            try:
                i = 0
                while self.endless or i < len(words):
                    self.emitted += 1
                    text = (" " if i else "") + words[i % len(words)]
                    last = not self.endless and i == len(words) - 1
                    yield {"choices": [{"text": text, "finish_reason": "stop" if last else None}]}
                    i += 1
                self._input_ids = _Ids(tokens)  # what llama.cpp keeps for the next prefix
            finally:
                self.stream_closed.set()

        return stream()

    def close(self) -> None:
        pass


@pytest.fixture
async def gateway(monkeypatch: pytest.MonkeyPatch):
    gw = ModelGateway(Config())  # the default config: the embedded model only
    monkeypatch.setattr(gw, "local_model_status", lambda: LocalModelStatus(True, True, "test", "/stand-in.gguf"))
    llama = StandInLlama()
    gw.local._llm = llama  # loaded: preload() returns at once
    yield gw, llama
    await gw.aclose()


async def test_streams_chunks_and_usage_without_litellm(gateway) -> None:
    gw, llama = gateway
    assert not gw.needs_litellm and gw.route("local").kind == "local"
    request = ModelRequest(gw.target("local"), MESSAGES, Limits(max_output_tokens=40, stop=("END",)))
    pieces = [p async for p in gw.stream(request)]
    assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == llama.reply
    done = pieces[-1]
    assert isinstance(done, Completion)
    prompt_tokens = len(llama.tokenize(format_prompt(MESSAGES).encode()))
    assert (done.prompt_tokens, done.completion_tokens, done.cached_tokens) == (prompt_tokens, 5, 0)
    assert done.cost_usd == 0.0 and done.profile == "local" and done.model == "local/gemma3-270m"
    assert done.queued_ms > 0  # the wait for the model's first turn, carried to the Completion
    call = llama.calls[0]
    assert call["max_tokens"] == 40 and llama.next_sampling.temperature == 0.7  # the local profile's default
    assert llama.next_grammar is None  # a request with no reply shape: free text
    assert call["stop"] == [*STOP, "END"] and call["stream"] is True

    again = [p async for p in gw.stream(ModelRequest(gw.target("local"), MESSAGES))]
    assert again[-1].cached_tokens == prompt_tokens  # the same prompt again: its prefix is reused


async def test_cancelling_stops_the_generation(gateway) -> None:
    gw, llama = gateway
    llama.endless = True
    got = asyncio.Event()

    async def consume() -> None:
        # An output limit far away: the sidecar's own ceiling (sidecar/llm/call.py) must not
        # end the endless reply before the cancel does.
        limits = Limits(max_output_tokens=1_000_000)
        async for piece in gw.stream(ModelRequest(gw.target("local"), MESSAGES, limits)):
            if isinstance(piece, TextPiece):
                got.set()

    task = asyncio.create_task(consume())
    await got.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(llama.stream_closed.wait, 5), "the generation thread kept going"
    assert gw.local.stopped == 1
