"""The embedded model's adapter (sidecar/llm/local.py) through ModelGateway.stream,
without its weights: a stand-in for llama_cpp.Llama with the same methods streams
tokens, so what the sidecar does around llama.cpp (prompt layout, parameters,
Chunks, usage with the reused prefix, stopping on cancel) runs for real. The
real model's tests are tests/llm/test_llm_local_model.py (marked local_model)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from local_runs import batch_rows

from sidecar.config import Config
from sidecar.errors import ContextWindowExceeded
from sidecar.llm import Completion, Limits, ModelGateway, ModelRequest, TextPiece
from sidecar.llm.kv_prefixes import common_prefix
from sidecar.llm.local_prompt import STOP, format_prompt
from sidecar.llm.weights import LocalModelStatus

MESSAGES = [{"role": "system", "content": "Narrate."}, {"role": "user", "content": "The door opens."}]


class _KeptOne:
    """KeptPrefixes reduced to one kept sequence (sidecar/llm/kv_prefixes.py, tested on
    the real model): a run reuses what the last run's tokens share with it."""

    def __init__(self) -> None:
        self.kept: list[int] = []

    def restore_into(self, seq: int, tokens: list[int]) -> int:
        return common_prefix(self.kept, tokens)

    def free(self, seq: int, start: int = -1) -> None:
        pass

    def keep(self, budget: int, tokens: list[int], seq: int) -> None:
        self.kept = list(tokens)


END = 0  # the stand-in's end of turn; token i > 0 is the reply's word (i - 1) % words


class _Sampler:
    """Draws the reply's words one by one, then the end of turn (never, if endless)."""

    def __init__(self, llama: StandInLlama) -> None:
        self.llama = llama
        self.sampled = 0

    def sample(self, ctx: Any, row: int) -> int:
        assert row >= 0, "sampled from a row whose logits were not asked for"
        self.sampled += 1
        words = len(self.llama.reply.split(" "))
        return self.sampled if self.llama.endless or self.sampled <= words else END

    def close(self) -> None:
        self.llama.stream_closed.set()


class StandInLlama:
    """What LocalLLM calls on its VoiceLlama; one token per word of `reply`."""

    _ctx = None  # the context a sampler reads its row from

    def __init__(self, reply: str = "The hinges creak. Dust falls.", endless: bool = False) -> None:
        self.reply = reply
        self.endless = endless
        self.prefixes = _KeptOne()
        self.samplers: list[dict[str, Any]] = []
        self.decoded: list[list[tuple[Any, bool]]] = []
        self.stream_closed = threading.Event()

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [hash(w) % 50_000 for w in data.decode().split()]

    def n_ctx(self) -> int:
        return 4096

    def sampler(self, sampling: Any, seed: int | None, grammar: str | None) -> _Sampler:
        self.samplers.append({"sampling": sampling, "seed": seed, "grammar": grammar})
        return _Sampler(self)

    def decode(self, parts: list[tuple[Any, bool]]) -> list[int]:
        self.decoded.append(parts)
        return batch_rows(parts)

    def is_eog(self, token: int) -> bool:
        return token == END

    def piece(self, token: int) -> bytes:
        words = self.reply.split(" ")
        return ((" " if token > 1 else "") + words[(token - 1) % len(words)]).encode()

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
    assert isinstance(done, Completion) and done.finish_reason == "stop"
    prompt_tokens = len(llama.tokenize(format_prompt(MESSAGES).encode()))
    # Five words and the end of turn drawn.
    assert (done.prompt_tokens, done.completion_tokens, done.cached_tokens) == (prompt_tokens, 6, 0)
    assert done.cost_usd == 0.0 and done.profile == "local" and done.model == "local/gemma3-270m"
    assert done.queued_ms > 0  # the wait for the model's first turn, carried to the Completion
    sampler = llama.samplers[0]
    assert sampler["sampling"].temperature == 0.7  # the local profile's default
    assert sampler["grammar"] is None  # a request with no reply shape: free text
    # The whole prompt in the first decode, then one token a step, each asking for its logits.
    first, *rest = llama.decoded
    assert [len(work.tokens) for work, _ in first] == [prompt_tokens] and first[0][1]
    assert [[len(work.tokens) for work, _ in parts] for parts in rest] == [[1]] * 5

    again = [p async for p in gw.stream(ModelRequest(gw.target("local"), MESSAGES))]
    assert again[-1].cached_tokens == prompt_tokens  # the same prompt again: its prefix is reused


async def test_a_stop_sequence_ends_the_reply_and_is_never_shown(gateway) -> None:
    gw, llama = gateway
    for stops, text, finish in [(("Dust",), "The hinges creak. ", "stop"), ((), llama.reply, "stop")]:
        request = ModelRequest(gw.target("local"), MESSAGES, Limits(max_output_tokens=40, stop=stops))
        pieces = [p async for p in gw.stream(request)]
        assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == text
        assert pieces[-1].finish_reason == finish
    for stop in STOP:  # the prompt layout's own stops are in force too
        llama.reply = f"The hinges creak. {stop} Dust falls."
        pieces = [p async for p in gw.stream(ModelRequest(gw.target("local"), MESSAGES))]
        assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == "The hinges creak. "


async def test_the_output_limit_ends_the_reply(gateway) -> None:
    gw, _ = gateway
    request = ModelRequest(gw.target("local"), MESSAGES, Limits(max_output_tokens=3))
    pieces = [p async for p in gw.stream(request)]
    assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == "The hinges creak."
    assert pieces[-1].finish_reason == "length" and pieces[-1].completion_tokens == 3


async def test_a_prompt_the_context_cannot_hold_is_refused_precisely(gateway) -> None:
    gw, llama = gateway
    long = [MESSAGES[0], {"role": "user", "content": "word " * 5000}]
    with pytest.raises(ContextWindowExceeded, match="context_tokens"):
        async for _ in gw.stream(ModelRequest(gw.target("local"), long)):
            pass
    assert not llama.decoded  # nothing was evaluated


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
