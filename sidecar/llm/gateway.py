"""ModelGateway: the sidecar's one door to models. Resolves each profile once
(sidecar/llm/routes.py), loads in the background only what the configured
profiles need (the handshake never waits), answers questions about
profiles (tokenizer, budget, context window), and opens one call for a
`ModelRequest` (`open`; sidecar/llm/call.py does the call).

litellm (about 175 MB and 3 s to import) is loaded only when some profile uses
the litellm transport; the embedded model, the scripted model and
OpenAI-compatible servers on the sse transport never import it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from sidecar.config import Config, ModelProfile
from sidecar.errors import ModelNotInstalled, ModelUnavailable, ProfileNotFound
from sidecar.llm.call import ModelCall, open_call
from sidecar.llm.guard import request_checker
from sidecar.llm.local import LocalLLM
from sidecar.llm.local_prompt import EXAMPLE
from sidecar.llm.routes import Route, resolve
from sidecar.llm.scripted import ScriptedLLM
from sidecar.llm.send_points import send_point
from sidecar.llm.tokens import cl100k_built, shared_cl100k
from sidecar.llm.types import Completion, ModelRequest, ModelTarget, TextPiece
from sidecar.llm.weights import LocalModelStatus, find_local_model

__all__ = ["ModelGateway", "DEFAULT_CONTEXT_WINDOW"]

log = logging.getLogger("sidecar.llm")

#: Context window assumed for a model nothing is known about.
DEFAULT_CONTEXT_WINDOW = 8192
#: Smallest prompt budget handed out, whatever the reserve says.
MIN_BUDGET = 256


class ModelGateway:
    """Construct cheaply; `start()` begins the background loading."""

    def __init__(self, config: Config) -> None:
        self.config = config
        local = config.local_model
        self.local = LocalLLM(local.path, local.context_tokens, local.threads, local.batch_tokens)
        self.scripted = ScriptedLLM()
        self._routes: dict[str, Route] = {}
        #: Whether some profile uses the litellm transport (only then is litellm imported).
        self.needs_litellm = any(self.route(name).needs_litellm for name in config.profiles)
        self._litellm: concurrent.futures.Future[Any] = concurrent.futures.Future()
        #: Done when the background warm-up (tokenizer, the default embedded model) is over.
        self._warm: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._threads: list[threading.Thread] = []
        self._counters: dict[str, Callable[[str], int]] = {}
        self._closing = False
        self._http: Any = None  # aiohttp.ClientSession of the sse transport, made on first use

    # -- loading -----------------------------------------------------------

    def start(self) -> None:
        """Begin the background loading on daemon threads; returns at once."""
        if self._threads:
            return
        self._threads.append(threading.Thread(target=self._warm_up, name="model-warm-up", daemon=True))
        if self.needs_litellm:
            self._threads.append(threading.Thread(target=self._load_litellm, name="litellm-import", daemon=True))
        for thread in self._threads:
            thread.start()

    def _load_litellm(self) -> None:
        try:
            from sidecar.llm.via_litellm import import_litellm

            self._litellm.set_result(import_litellm())
            self._counters.clear()  # litellm-transport profiles switch to litellm's tokenizers
            log.info("litellm ready")
        except BaseException as exc:  # noqa: BLE001 - reported to every waiter
            log.error("litellm import failed", extra={"fields": {"error": repr(exc)}})
            self._litellm.set_exception(exc)

    def _warm_up(self) -> None:
        """The tokenizer prompts are counted with (unless the installed embedded model
        is all there is), the sse transport's HTTP client module, then the default
        profile's embedded model when it is installed (a run on it starts at once)."""
        try:
            local_only = all(route.kind == "local" for route in self._routes.values())
            if not (local_only and self.local_model_status().ready):
                self._tiktoken()  # (the embedded model counts with its own vocabulary: ~26 MB saved)
            if any(route.kind == "sse" for route in self._routes.values()):
                import sidecar.llm.sse  # noqa: F401 - aiohttp's import (~0.2 s) off the first run's path
            default = self.route(self.config.default_profile)
            if default.kind == "local" and not self._closing and self.local_model_status().ready:
                try:
                    self.local.preload()
                    self._counters.clear()  # the model's own tokenizer from now on
                except Exception as exc:  # noqa: BLE001 - a run on it reports ModelUnavailable
                    log.warning("embedded model not loaded", extra={"fields": {"error": str(exc)}})
        finally:
            self._warm.set_result(None)

    async def loaded(self) -> None:
        """Returns once the background loading started by `start()` is over, however it
        ended (the server then freezes what it made: sidecar/heap.py)."""
        loads = [self._warm, self._litellm] if self.needs_litellm else [self._warm]
        # asyncio.wait never cancels what it waits on: cancelling this waiter leaves the
        # shared futures (and their loader threads) alone.
        await asyncio.wait([asyncio.wrap_future(f) for f in loads])

    @property
    def ready(self) -> bool:
        """GetInfo.llm_ready: the background loading is over and litellm, when some
        profile needs it, imported. False for good when that import failed."""
        if not self._warm.done() or not self.needs_litellm:
            return self._warm.done()
        return self._litellm.done() and self._litellm.exception() is None

    async def _wait_litellm(self) -> None:
        self.start()
        try:
            if not self._litellm.done():
                # Shielded: a cancelled waiter (a run cancelled during start-up) must not
                # cancel the one future every other waiter and the loader thread share.
                await asyncio.shield(asyncio.wrap_future(self._litellm))
            self._litellm.result(timeout=0)
        except Exception as exc:
            raise ModelUnavailable(f"litellm could not be imported: {exc}") from exc

    @property
    def litellm(self) -> Any:
        """The litellm module (only once a litellm-transport profile is prepared)."""
        return self._litellm.result(timeout=0)

    def litellm_if_loaded(self) -> Any:
        """The litellm module when imported, else None (never waits, never imports)."""
        if self._litellm.done() and self._litellm.exception() is None:
            return self._litellm.result()
        return None

    def http(self) -> Any:
        """The pooled HTTP client of the sse transport (created on the running loop)."""
        if self._http is None:
            from sidecar.llm.sse import new_client

            self._http = new_client()
        return self._http

    async def aclose(self) -> None:
        self._closing = True  # a warm-up thread still starting must not load the model now
        if self._http is not None:
            await self._http.close()
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

    def target(self, name: str) -> ModelTarget:
        """The profile `name` resolved for calling: settings and route (ProfileNotFound
        if unknown). What a run plans with, once (sidecar/runs/plan.py)."""
        return ModelTarget(name, self.profile(name), self.route(name))

    def route(self, name: str) -> Route:
        """How the profile is served, resolved on first use (ProfileNotFound if unknown)."""
        route = self._routes.get(name)
        if route is None:
            profile = self.profile(name)
            route = self._routes[name] = resolve(profile)
            if route.kind == "scripted" and profile.script is not None:
                self.scripted.scripts[route.model] = profile.script
        return route

    def context_window(self, name: str) -> int:
        profile, route = self.profile(name), self.route(name)
        if route.kind == "local":
            # llama.cpp's context is what the embedded model can take, whatever the profile says.
            ctx = self.config.local_model.context_tokens
            return min(profile.context_window, ctx) if profile.context_window > 0 else ctx
        if profile.context_window > 0:
            return profile.context_window
        litellm = self.litellm_if_loaded() if route.needs_litellm else None
        if litellm is not None:
            try:
                info = litellm.get_model_info(profile.model)
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
        """Whether the embedded model's runtime and weights are here (nothing loaded),
        and whether a load already found this machine unable to run it (its CPU)."""
        status = find_local_model(self.config.local_model.path)
        if status.ready and self.local.refused:
            return dataclasses.replace(status, runtime_found=False, problem=self.local.refused)
        return status

    def profiles_info(self) -> list[dict[str, Any]]:
        local = self.local_model_status()
        infos = []
        for name, p in self.config.profiles.items():
            route = self.route(name)
            ready, reason = True, route.problem
            if route.kind == "local":
                ready, reason = local.ready, local.problem
            elif route.problem:
                ready = False
            elif route.needs_litellm and self._litellm.done() and self._litellm.exception() is not None:
                ready, reason = False, f"litellm could not be imported: {self._litellm.exception()}"
            infos.append({
                "name": name,
                "model": p.model,
                "is_default": name == self.config.default_profile,
                "local": route.kind == "local",
                "context_window": self.context_window(name),
                "ready": ready,
                "unavailable_reason": reason,
            })
        return infos

    def framing_text(self, profile: str) -> str:
        """What the profile's prompt format sends besides the messages (the budget counts it):
        the local model's worked example; nothing for chat APIs."""
        return EXAMPLE if self.route(profile).kind == "local" else ""

    def token_counter(self, profile: str) -> Callable[[str], int]:
        """The serving model's tokenizer, cached per text.

        The embedded model counts with its own llama.cpp vocabulary once loaded;
        litellm-transport models with litellm.token_counter once litellm is in;
        everything else (and those, until then) with tiktoken's cl100k_base.
        """
        route = self.route(profile)
        cached = self._counters.get(profile)
        if cached is not None:
            return cached
        count: Callable[[str], int] | None = None
        if route.kind == "local":
            if self.local.loaded:
                count = self.local.count_tokens
        elif route.needs_litellm:
            litellm = self.litellm_if_loaded()
            if litellm is not None:
                fallback = self._tiktoken()

                def count(text: str, _model: str = route.model) -> int:
                    try:
                        return int(litellm.token_counter(model=_model, text=text))
                    except Exception:  # noqa: BLE001 - a tokenizer litellm cannot load
                        return fallback(text)
        else:
            return self._counters.setdefault(profile, self._tiktoken())
        if count is None:  # not loaded yet: do not cache, a better counter comes later
            return self._tiktoken()
        counter = functools.lru_cache(maxsize=8192)(count)
        self._counters[profile] = counter
        return counter

    def _tiktoken(self) -> Callable[[str], int]:
        return shared_cl100k()

    async def prepare_profile(self, name: str) -> None:
        """Make the profile's model callable and its tokenizer ready: litellm in for the
        litellm transport, the embedded model loaded for local, cl100k built for the
        others; all off the loop (a first run waits here, never blocking other calls)."""
        route = self.route(name)
        if route.kind != "local" and not cl100k_built():
            await asyncio.to_thread(shared_cl100k)  # the warm-up thread may be building it
        if route.kind == "local":
            status = self.local_model_status()
            if not status.ready:  # at once, and never a retry
                raise ModelNotInstalled(status.problem, metadata={"profile": name})
            if not self.local.loaded:
                await asyncio.to_thread(self.local.preload)
                self._counters.pop(name, None)  # switch to the model's own tokenizer
        elif route.needs_litellm:
            await self._wait_litellm()

    # -- calls -------------------------------------------------------------

    async def open(self, request: ModelRequest) -> ModelCall:
        """Send one request (no retry, no fallback: the caller decides) and wait for its
        first chunk. Raises the mapped SidecarError of a failure before the first token;
        the leak guard runs on exactly what each transport sends. The profile must be
        prepared (`prepare_profile`)."""
        target, route = request.target, request.target.route
        send = send_point(
            route,
            request_checker(request.engine_ids, request.guard_moment, request.aliases),
            http=self.http() if route.kind == "sse" else None,
            litellm=self.litellm if route.needs_litellm else None,
            direct=self.local if route.kind == "local" else self.scripted,
        )
        return await open_call(
            request, send, count_tokens=self.token_counter(target.name), litellm=self.litellm_if_loaded()
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[TextPiece | Completion]:
        """The profile made ready, `open`, then its TextPieces and one Completion; the
        upstream is closed however the stream ends (closing the iterator closes it at
        once). A run, which prepares its profile once up front, calls `open` itself."""
        await self.prepare_profile(request.target.name)
        call = await self.open(request)
        try:
            async for piece in call:
                yield piece
        finally:
            await call.aclose()
