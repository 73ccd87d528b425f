"""ModelGateway: the sidecar's one door to models. Imports litellm in the
background (the handshake never waits for it), registers the built-in
providers ("local" embedded model, "scripted" fake), and answers questions
about profiles: tokenizer, budget, context window.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import importlib
import importlib.util
import logging
import os
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from sidecar.config import Config, ModelProfile
from sidecar.errors import ModelNotInstalled, ModelUnavailable, ProfileNotFound
from sidecar.llm.types import Completion, Limits, TextPiece
from sidecar.llm.weights import LocalModelStatus, find_local_model
from sidecar.logs import adopt_library_loggers
from sidecar.state.model import Moment

__all__ = ["ModelGateway", "DEFAULT_CONTEXT_WINDOW"]

log = logging.getLogger("sidecar.llm")

#: Context window assumed for a model litellm knows nothing about.
DEFAULT_CONTEXT_WINDOW = 8192
#: Smallest prompt budget handed out, whatever the reserve says.
MIN_BUDGET = 256


#: Modules litellm imports lazily on a first call; imported up front, off the loop.
_LAZY_MODULES = ("litellm.llms.github_copilot.authenticator", "litellm.litellm_core_utils.streaming_handler")


async def _warm_up(litellm: Any) -> None:
    """One offline streamed call down the OpenAI path (mock_response: nothing is
    sent), so the first real run does not pay litellm's lazy imports."""
    try:
        stream = await litellm.acompletion(
            model="openai/warm-up",
            api_key="none",
            mock_response="ok",
            stream=True,
            messages=[{"role": "user", "content": "warm up"}],
        )
        async for _ in stream:
            pass
    except Exception:  # noqa: BLE001 - only an optimisation
        log.debug("litellm warm-up failed", exc_info=True)


def _tiktoken_counter() -> Callable[[str], int]:
    """cl100k from litellm's bundled files (offline), without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
        if bundled.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    return lambda text: len(enc.encode(text, disallowed_special=()))


class ModelGateway:
    """Owns litellm. Construct cheaply; `start()` begins the slow import."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._loaded: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._thread: threading.Thread | None = None
        self._counters: dict[str, Callable[[str], int]] = {}
        self._fallback_counter: Callable[[str], int] | None = None
        self._closing = False
        self._http: Any = None  # httpx.AsyncClient of the sse transport, made on first use
        self.local: Any = None  # sidecar.llm.local.LocalLLM once litellm is in
        self.scripted: Any = None  # sidecar.llm.scripted.ScriptedLLM

    # -- loading -----------------------------------------------------------

    def start(self) -> None:
        """Begin importing litellm on a daemon thread; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._load, name="litellm-import", daemon=True)
            self._thread.start()

    def _load(self) -> None:
        try:
            # Before the import: never fetch the price map from the network.
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            # Its prompts stay out of every log level but debug: levels set before the
            # import (which already logs), its own handler swapped for ours right after.
            adopt_library_loggers(before_import=True)
            with warnings.catch_warnings():
                # litellm's import-time warnings (pydantic, its own) are not ours to show.
                warnings.simplefilter("ignore")
                import litellm

                adopt_library_loggers()

                for lazy in _LAZY_MODULES:
                    with contextlib.suppress(Exception):
                        importlib.import_module(lazy)

            from sidecar.llm.local import PROVIDER as LOCAL
            from sidecar.llm.local import LocalLLM
            from sidecar.llm.scripted import PROVIDER as SCRIPTED
            from sidecar.llm.scripted import ScriptedLLM

            litellm.suppress_debug_info = True
            litellm.drop_params = True  # unknown params for a provider are dropped, not fatal
            # Per-chunk logging work is pure overhead on a streaming hot path.
            litellm.disable_streaming_logging = True
            self.scripted = ScriptedLLM()
            for profile in self.config.profiles.values():
                if profile.model.startswith(SCRIPTED + "/") and profile.script is not None:
                    self.scripted.scripts[profile.model.split("/", 1)[1]] = profile.script
            self.local = LocalLLM(self.config.local_model.path, self.config.local_model.context_tokens)
            litellm.custom_provider_map = [
                *[p for p in litellm.custom_provider_map if p["provider"] not in (LOCAL, SCRIPTED)],
                {"provider": LOCAL, "custom_handler": self.local},
                {"provider": SCRIPTED, "custom_handler": self.scripted},
            ]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                asyncio.run(_warm_up(litellm))
            self._loaded.set_result(litellm)
            log.info("litellm ready")
        except BaseException as exc:  # noqa: BLE001 - reported to every waiter
            log.error("litellm import failed", extra={"fields": {"error": repr(exc)}})
            if not self._loaded.done():
                self._loaded.set_exception(exc)
            return
        default = self.config.profiles[self.config.default_profile]
        if default.model.startswith("local/") and not self._closing and self.local_model_status().ready:
            try:
                self.local.preload()  # still on this background thread
            except Exception as exc:  # noqa: BLE001 - a run on it reports ModelUnavailable
                log.warning("embedded model not loaded", extra={"fields": {"error": str(exc)}})

    @property
    def ready(self) -> bool:
        return self._loaded.done() and self._loaded.exception() is None

    async def wait_ready(self) -> None:
        self.start()
        try:
            if not self._loaded.done():
                # Shielded: a cancelled waiter (a run cancelled during start-up) must not
                # cancel the one future every other waiter and the loader thread share.
                await asyncio.shield(asyncio.wrap_future(self._loaded))
            self._loaded.result(timeout=0)
        except Exception as exc:
            raise ModelUnavailable(f"litellm could not be imported: {exc}") from exc

    @property
    def litellm(self) -> Any:
        """The litellm module (only after `wait_ready`)."""
        return self._loaded.result(timeout=0)

    def http(self) -> Any:
        """The pooled HTTP client of the sse transport (created on the running loop)."""
        if self._http is None:
            from sidecar.llm.sse import new_client

            self._http = new_client()
        return self._http

    async def aclose(self) -> None:
        self._closing = True  # a loader thread still importing must not load the model now
        if self._http is not None:
            await self._http.aclose()
        if self.local is not None:
            await asyncio.to_thread(self.local.close)

    # -- profiles ----------------------------------------------------------

    def profile(self, name: str) -> ModelProfile:
        try:
            return self.config.profiles[name]
        except KeyError:
            raise ProfileNotFound(
                f"model profile {name!r} is not defined; defined: {sorted(self.config.profiles)}",
                metadata={"profile": name},
            ) from None

    def context_window(self, name: str) -> int:
        profile = self.profile(name)
        if profile.context_window > 0:
            return profile.context_window
        if self.ready:
            try:
                info = self.litellm.get_model_info(profile.model)
                window = info.get("max_input_tokens") or info.get("max_tokens")
                if window:
                    return int(window)
            except Exception:  # noqa: BLE001 - unknown model: the default below
                pass
        return DEFAULT_CONTEXT_WINDOW

    def budget_tokens(self, profile: str) -> int:
        window = self.context_window(profile)
        return max(MIN_BUDGET, window - self.config.context.output_reserve_tokens)

    def local_model_status(self) -> LocalModelStatus:
        """Whether the embedded model's runtime and weights are here (nothing loaded)."""
        return find_local_model(self.config.local_model.path)

    def profiles_info(self) -> list[dict]:
        local = self.local_model_status()
        infos = []
        for name, p in self.config.profiles.items():
            is_local = p.model.startswith("local/")
            infos.append({
                "name": name,
                "model": p.model,
                "is_default": name == self.config.default_profile,
                "local": is_local,
                "context_window": self.context_window(name),
                "ready": local.ready if is_local else True,
                "unavailable_reason": local.problem if is_local else "",
            })
        return infos

    def framing_text(self, profile: str) -> str:
        """What the profile's prompt format sends besides the messages (the budget counts it):
        the local model's worked example; nothing for chat APIs."""
        if not self.profile(profile).model.startswith("local/"):
            return ""
        from sidecar.llm.local import EXAMPLE  # a local profile is ready: litellm is in

        return EXAMPLE

    def token_counter(self, profile: str) -> Callable[[str], int]:
        """The serving model's tokenizer, cached per text.

        The embedded model counts with its own llama.cpp vocabulary once loaded;
        other models through litellm.token_counter; tiktoken before litellm is in.
        """
        p = self.profile(profile)
        cached = self._counters.get(profile)
        if cached is not None:
            return cached
        count: Callable[[str], int] | None = None
        if p.model.startswith("local/") and self.local is not None and self.local.loaded:
            count = self.local.count_tokens
        elif self.ready:
            litellm = self.litellm
            fallback = self._tiktoken()

            def count(text: str, _model: str = p.model) -> int:
                try:
                    return int(litellm.token_counter(model=_model, text=text))
                except Exception:  # noqa: BLE001 - a tokenizer litellm cannot load
                    return fallback(text)

        if count is None:  # not ready: do not cache, a better counter comes later
            return self._tiktoken()
        counter = functools.lru_cache(maxsize=8192)(count)
        self._counters[profile] = counter
        return counter

    def _tiktoken(self) -> Callable[[str], int]:
        if self._fallback_counter is None:
            self._fallback_counter = functools.lru_cache(maxsize=8192)(_tiktoken_counter())
        return self._fallback_counter

    async def prepare_profile(self, name: str) -> None:
        """Make the profile's model callable (litellm in; the local model loaded, off the loop)."""
        p = self.profile(name)
        if p.model.startswith("local/"):
            status = self.local_model_status()
            if not status.ready:  # at once: not after litellm's import, and never a retry
                raise ModelNotInstalled(status.problem, metadata={"profile": name})
        await self.wait_ready()
        if p.model.startswith("local/") and not self.local.loaded:
            await asyncio.to_thread(self.local.preload)
            self._counters.pop(name, None)  # switch to the model's own tokenizer

    # -- calls -------------------------------------------------------------

    def stream(
        self,
        profile: str,
        messages: list[dict[str, str]],
        engine_ids: Sequence[str] | frozenset[str],
        limits: Limits | None = None,
        *,
        moment: Moment | None = None,
    ) -> AsyncIterator[TextPiece | Completion]:
        """Stream one reply: TextPieces, then one Completion. Raises SidecarErrors.

        Retries before the first token, then the fallback chain (see
        sidecar.llm.stream). Closing the iterator closes the upstream at once.
        `engine_ids` and `moment` (the suppressed parts of the game moment) feed
        the leak guard, checked before every call.
        """
        from sidecar.llm.stream import stream_reply

        return stream_reply(self, profile, messages, engine_ids, limits or Limits(), moment)
