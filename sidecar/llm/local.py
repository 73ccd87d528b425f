"""The embedded local model (Gemma 3 270M GGUF run by llama.cpp), "local/...".
Called directly, without litellm: it yields the same `Chunk`s as every transport,
so retries, timeouts and usage take the one path of sidecar.llm.call.

One llama.cpp context, touched only by one worker thread: loaded once there,
generating there, feeding tokens to the event loop through an asyncio queue.
Generations take turns on it, a step each (sidecar/llm/turns.py): a slice of a prompt or
one token, so a run never waits for another's whole reply. A stop flag checked at each
step ends a generation at once on cancel. Each finished
run's tokens stay in the context's KV buffer as a kept sequence, so an actor's next
turn evaluates only what is new since its last (docs/context.md: stable first,
volatile last; sidecar/llm/kv_prefixes.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from sidecar.config import LocalModelConfig
from sidecar.errors import ModelNotInstalled, ModelUnavailable
from sidecar.heap import release_heap
from sidecar.llm.chat_template import ChatTemplate, short_chat, template_of
from sidecar.llm.choose import choose_option
from sidecar.llm.cpu_level import check_llama_cpu, load_backends
from sidecar.llm.document import render_document
from sidecar.llm.grammars import grammar_for, stop_for
from sidecar.llm.turns import Steps, Turn, Turns, TurnsClosed
from sidecar.llm.types import Chunk, Sampling
from sidecar.llm.weights import find_local_model, resolve_weights

__all__ = ["LocalLLM", "StopFlag", "format_prompt", "prompt_of", "llama_settings", "STOP"]

log = logging.getLogger("sidecar.llm.local")

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
#: Prompt prefixes kept beside the live one (sidecar/llm/kv_prefixes.py): a recent
#: actor or scene each. Their cells are shared with the live sequence where they
#: agree; the rest widens every token's attention (decode about 10% slower for each
#: 500 tokens kept apart, docs/benchmarks.md), hence both bounds. Eight: one per NPC of
#: eight speaking at once (with six, two of them evaluated their whole prompt each time).
KEPT_SEQUENCES = 8
#: Tokens the kept sequences may hold in all before the least recent is dropped.
KEPT_TOKENS = 2048
#: Generations that can take turns at once, each with a parking sequence in the KV
#: buffer (more wait for one to end): the scheduler's default `max_concurrent`.
TURNS = 8
#: Prompt tokens a warm-up evaluates per step. A run arriving mid-warm-up waits at most
#: one step (about 60 ms on two cores: docs/benchmarks.md), and starts from what was
#: warmed so far.
WARM_STEP = 32
#: Prompt tokens a generation evaluates per step while others take turns: the longest
#: pause its prompt puts in their replies (about 200 ms on two cores). Alone, it
#: evaluates its prompt in one go.
PROMPT_STEP = 128


#: llama.cpp context size unless configured (`[local_model] context_tokens`).
DEFAULT_N_CTX = LocalModelConfig().context_tokens


#: Tokens llama.cpp computes at once within a step of `batch_tokens` (its n_ubatch).
#: With flash attention, what a prompt step makes resident stays within about 15 MB
#: however many cells it attends over (docs/benchmarks.md, issue 30).
MICRO_BATCH = 256


def llama_settings(n_ctx: int = DEFAULT_N_CTX, threads: int = 0, batch_tokens: int = 512) -> dict[str, Any]:
    """Constructor arguments for llama_cpp.Llama (the benchmarks use the same);
    `threads` 0 = every core.

    Flash attention: without it, each prompt step writes its attention scores (heads x
    cells x tokens) into llama.cpp's compute buffer, so what that buffer holds resident
    grew with the cells in use, the kept prefixes' among them: +52 MB at 2,900 cells, and
    a sidecar's RSS jumped 56 MB late in a 300-run session. With it (and 256-token micro
    batches) +15 MB; prompts evaluate as fast (within run-to-run noise) and decoding is
    5-8% faster (docs/benchmarks.md)."""
    n_threads = threads or max(1, os.cpu_count() or 1)
    return {"n_ctx": n_ctx, "n_threads": n_threads, "n_batch": batch_tokens, "n_ubatch": min(MICRO_BATCH, batch_tokens),
            "flash_attn": True, "verbose": False}  # fmt: skip


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


#: llama-cpp-python silences llama.cpp's C logs while it builds a model by pointing the
#: PROCESS's fds 1 and 2 at /dev/null and back. Two builds overlapping on two threads
#: (two servers in one process, as in the test suite) restore each other's /dev/null:
#: fd 1 stays silenced for good, and a test run then ends with no summary. One at a time.
_LLAMA_INIT_LOCK = threading.Lock()


class StopFlag(threading.Event):
    """A generation's stop flag, set by its caller on any thread. It counts the chunks
    the generation hands out, to tell how many came after it was set (`stop_lag`)."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks = 0
        self.at_set = 0

    def set(self) -> None:
        if not self.is_set():
            self.at_set = self.chunks
        super().set()


class LocalLLM:
    """Serves "local/<anything>": the one embedded model."""

    def __init__(
        self, weights_setting: str = "", n_ctx: int = DEFAULT_N_CTX, threads: int = 0, batch_tokens: int = 512
    ) -> None:
        self._weights_setting = weights_setting  # [local_model] path
        self._settings = llama_settings(n_ctx, threads, batch_tokens)
        self._llm: Any = None
        #: The GGUF's chat template (an instruct model), else None (a document, for a base model).
        self._chat: ChatTemplate | None = None
        #: Why this machine cannot run the model, once a load found out ("" = not known).
        self.refused = ""
        self._load_lock = threading.Lock()
        self._closed = False
        # One thread owns the llama context; generations take turns on it (sidecar/llm/turns.py).
        self._turns = Turns(self)
        #: Generations finished, and how many of them were stopped early (cancel).
        self.generations = 0
        self.stopped = 0
        #: Tokens generated by the last generation.
        self.last_tokens = 0
        #: Warm-ups that evaluated something (WarmUp counts the tokens).
        self.warm_ups = 0
        #: The most chunks (about a token each) a stopped generation handed out after its
        #: caller stopped it: a cancel frees the model within one step (sidecar/llm/turns.py).
        self.stop_lag = 0

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def preload(self) -> None:
        """Load the model (blocking; call from a thread). Idempotent."""
        with self._load_lock:
            if self._llm is not None:
                return
            if self._closed:
                raise ModelUnavailable("the sidecar is shutting down")
            path = resolve_weights(find_local_model(self._weights_setting))
            try:
                check_llama_cpu()  # an illegal instruction would take the whole sidecar down
                try:
                    from sidecar.llm.voice_llama import VoiceLlama  # llama_cpp.Llama, our sampler
                except ImportError as exc:  # found but broken (e.g. a missing shared library)
                    raise ModelNotInstalled(f"llama-cpp-python cannot be imported: {exc}") from exc
                load_backends()  # a build that picks its CPU backend at run time registers none itself
            except ModelNotInstalled as exc:
                # Known only once tried (the CPU check imports numpy: not at start-up);
                # from then on GetInfo says so too.
                self.refused = exc.message
                raise
            try:
                with _LLAMA_INIT_LOCK:
                    llm = VoiceLlama(path, kept_sequences=KEPT_SEQUENCES, parked_sequences=TURNS, **self._settings)
            except Exception as exc:  # noqa: BLE001 - a broken file or an old llama.cpp
                raise ModelUnavailable(f"the embedded model failed to load: {exc}") from exc
            if self._closed:  # closed while loading (shutdown during start-up)
                llm.close()
                raise ModelUnavailable("the sidecar is shutting down")
            self._chat = template_of(llm)
            self._llm = llm
            log.info("local model loaded", extra={"fields": {"path": path, "prompting": self.prompting}})

    @property
    def prompting(self) -> str:
        """How shaped requests are prompted: "chat template", "document" or "" (not loaded)."""
        return "" if self._llm is None else "chat template" if self._chat else "document"

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def close(self, timeout_s: float = 0.5) -> None:
        """End every generation where it is and free the model on its own thread; never
        blocks shutdown for longer than `timeout_s`."""
        self._closed = True

        def free() -> None:
            llm, self._llm = self._llm, None
            if llm is not None:
                llm.close()

        concurrent.futures.wait([self._turns.close(free)], timeout=timeout_s)

    @property
    def waiting(self) -> int:
        """Generations submitted and not yet ended."""
        return self._turns.foreground

    # -- sidecar.llm.turns.Host: a generation paused for another's turn -------

    def capacity(self) -> tuple[int, int]:
        llm = self._llm
        slots = len(getattr(llm, "parking_slots", ()))
        return (slots + 1, int(llm.n_ctx())) if llm is not None and slots else (1, 0)

    def park(self, turn: Turn) -> None:  # a turn's slot n is the model's n-th parking sequence
        turn.parked = self._llm.pause(self._llm.parking_slots[turn.slot - 1])

    def unpark(self, turn: Turn) -> None:
        self._llm.resume(self._llm.parking_slots[turn.slot - 1], turn.parked)
        turn.parked = None

    def release(self, turn: Turn) -> None:
        if self._llm is not None:
            self._llm.prefixes.let_go(self._llm.parking_slots[turn.slot - 1])

    # -- warm-up -------------------------------------------------------------

    async def warm(self, messages: list[dict[str, str]], shape: Any) -> int:
        """Evaluate the prompt `messages` make (with `shape`, as a run would) into the KV
        buffer and keep it, so that a run sharing its prefix evaluates only the rest.

        Only while no generation waits: it is a background turn (sidecar/llm/turns.py),
        steps WARM_STEP tokens at a time and stops at the first step that finds a
        generation submitted (what it evaluated by then is kept). Never loads the model.
        Returns the prompt tokens evaluated (0: nothing was new, or a run came first)."""
        if self._llm is None or self._closed:
            return 0
        try:
            turn = self._turns.submit(self._warming(messages, shape), background=True)
            return int(await asyncio.wrap_future(turn.future))
        except (RuntimeError, TurnsClosed):  # closing
            return 0

    def _warming(self, messages: list[dict[str, str]], shape: Any) -> Steps:
        yield None
        llm = self._llm
        if llm is None or llm.prefixes is None or self._turns.foreground or self._closed:
            return 0
        prompt, _, templated, _ = prompt_of(messages, shape, self._chat)
        tokens: list[int] = llm.tokenize(prompt.encode("utf-8"), add_bos=not templated, special=True)
        start: int = llm.prefixes.restore(tokens)
        done = start
        llm.n_tokens = start  # the live sequence's tail past the shared prefix goes (eval drops its cells)
        try:
            while done < len(tokens) and not self._turns.foreground and not self._closed:
                step = tokens[done : done + WARM_STEP]
                llm.eval(step)
                done += len(step)
                yield None
        finally:
            if done > start and not self._closed:
                llm.prefixes.keep(KEPT_TOKENS)
                self.warm_ups += 1
                release_heap()
        return done - start

    # -- generation ------------------------------------------------------------

    def _generation(
        self, messages: list[dict[str, str]], params: dict[str, Any], stop: StopFlag,
        put: Callable[[Chunk], None], submitted: float,
    ) -> Steps:  # fmt: skip
        """A generation's steps (sidecar/llm/turns.py), streaming into `put` until done
        or `stop`. The first step (before any KV work) loads the model if need be and
        says how many cells the generation may hold."""
        self.preload()
        llm, chat = self._llm, self._chat
        shape = params.get("reply_shape")
        prompt, stops, templated, document = prompt_of(messages, shape, chat)
        # A template writes its own BOS where its model wants one.
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=not templated, special=True)
        max_tokens = int(params.get("max_tokens") or 256)
        yield len(tokens) + max_tokens
        # Admitted: at each step from here on, the context is this generation's.
        waited_ms = (time.monotonic() - submitted) * 1000
        if stop.is_set():
            self.stopped += 1
            return
        try:
            chosen = 0
            if document is not None and shape is not None and shape.kind == "decision":
                turn = document.turn
                chosen = 1 + choose_option(llm, turn.me, turn.situation, turn.earlier, list(turn.options))
            cached = llm.prefixes.restore(tokens)  # the longest kept prefix becomes the live one
            done = llm.n_tokens = min(cached, len(tokens) - 1)  # the last is evaluated for its logits
            # While others take turns, the prompt goes PROMPT_STEP tokens a step; the last
            # of it (alone: all of it) is evaluated by llama-cpp-python in the step that
            # draws the first token, so a short prompt's first text comes in one step.
            while self._turns.foreground > 1 and len(tokens) - done > PROMPT_STEP + 1:
                step = tokens[done : done + PROMPT_STEP]
                llm.eval(step)
                done += len(step)
                yield None
                if stop.is_set():
                    self.stopped += 1
                    return
            user_stop = params.get("stop") or []
            stops += [user_stop] if isinstance(user_stop, str) else list(user_stop)
            llm.next_sampling = params.get("sampling") or Sampling()  # set by sidecar.llm.call
            llm.next_grammar = None if shape is None else grammar_for(shape, chosen, templated)
            stream = llm.create_completion(
                tokens,
                max_tokens=max_tokens,
                stop=stops,
                seed=int(params["seed"]) if params.get("seed") is not None else None,
                stream=True,
            )
            completion, finish = 0, "stop"
            try:
                for chunk in stream:
                    choice = chunk["choices"][0]
                    completion += 1
                    text = choice["text"]
                    if completion == 1 and shape is not None:
                        text = text.lstrip(" ")  # the space after the cue's colon
                    if text:
                        put(Chunk(text))
                        stop.chunks += 1
                    finish = choice.get("finish_reason") or finish
                    yield None  # between two tokens: another generation's turn
                    if stop.is_set():
                        self.stopped += 1
                        self.stop_lag = max(self.stop_lag, stop.chunks - stop.at_set)
                        return
            finally:
                stream.close()
                if not self._closed:
                    llm.prefixes.keep(KEPT_TOKENS)
                self.generations += 1
                sampler = getattr(llm, "last_sampler", None)  # (a test's stand-in Llama has none)
                if sampler is not None:  # tokens drawn, not chunks (sidecar/llm/sampling.py)
                    completion = sampler.sampled
                self.last_tokens = completion
            put(Chunk("", finish, (len(tokens), completion, cached), queued_ms=waited_ms))
        finally:
            release_heap()  # after the reply is handed over: it costs the game nothing

    async def astreaming(
        self, model: str, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> AsyncIterator[Chunk]:
        """The model's one send point: `params` is the transport-neutral request
        (max_tokens, temperature, stop)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = StopFlag()
        ended = object()

        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is gone (shutdown): nobody is listening
                stop.set()

        try:
            turn = self._turns.submit(self._generation(messages, params, stop, put, time.monotonic()))
        except RuntimeError as exc:
            raise ModelUnavailable("the sidecar is shutting down") from exc
        # After the generation's last chunk (the same thread puts both, in order).
        turn.future.add_done_callback(lambda _: put(ended))
        try:
            while True:
                item = await queue.get()
                if item is ended:
                    error = turn.future.exception()
                    if isinstance(error, TurnsClosed) or error is None:
                        raise ModelUnavailable("the sidecar is shutting down") from error
                    raise error
                yield item
                if item.finish is not None:
                    return
        finally:
            stop.set()  # cancelled, closed or done: the generation ends at its next step
