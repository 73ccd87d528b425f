"""Warm-up: the embedded model prefills an actor's next prompt while it is idle, so the
actor's next line starts from a kept prefix (issue 30, item 2; docs/runs.md, Warm-up).

When a session opens and each time its state changes, once the session has been quiet
for `QUIET_S`, the prompt each of its most recent actors would get now is built as
PreviewPrompt builds it (the actor's last input again; the narrator's "narrate" before
any run) and handed to the embedded model's `warm` (sidecar/llm/local.py), which
evaluates it into the KV buffer as a kept sequence. The run that comes next shares all
of it up to its own input, so it evaluates only its input and what changed since.

A warm-up never delays a run: none starts while a run is queued or running, and the
model stops warming at the next step when a generation waits. It holds no memory of its
own: kept sequences live in the buffer llama.cpp allocated at load, within its bounds.
Profiles that call a provider are not warmed (providers cache prompts themselves).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from sidecar.context.contract import NarrateInput, RunSpec
from sidecar.errors import ProfileNotFound, SidecarError
from sidecar.runs.attempts import reply_shape
from sidecar.runs.plan import RunOptions

if TYPE_CHECKING:
    from sidecar.llm.gateway import ModelGateway
    from sidecar.runs.plan import RunPlan
    from sidecar.runs.prompt import RunPrompt

__all__ = ["WarmUp", "QUIET_S", "ACTORS", "any_local"]

log = logging.getLogger("sidecar.runs.warm_up")

#: Seconds a session's state must stay unchanged before it is warmed: a game that sends a
#: delta every frame is not chased, prompt by prompt, while it plays.
QUIET_S = 0.25
#: The most recent actors of a session warmed after a change (each one prompt evaluated
#: where it differs from what is kept; the model keeps eight: sidecar/llm/llama_settings.py).
ACTORS = 3


def any_local(gateway: ModelGateway, *profiles: str) -> bool:
    """Whether one of `profiles` is served by the embedded model (an unknown name is not:
    a run naming it fails ProfileNotFound on its own)."""
    for name in profiles:
        try:
            if gateway.route(name).kind == "local":
                return True
        except ProfileNotFound:
            continue
    return False


class WarmUp:
    """Warms sessions on the embedded model. `ran` is told each submitted run,
    `touch` each change to a session's state."""

    def __init__(
        self,
        gateway: ModelGateway,
        plan: Callable[[RunSpec, RunOptions], RunPlan],
        prompt: Callable[[RunPlan], Awaitable[RunPrompt]],
        busy: Callable[[], bool],
        *,
        enabled: bool = True,
    ) -> None:
        self._gateway = gateway
        self._plan = plan
        self._prompt = prompt
        self._busy = busy
        self.enabled = enabled
        #: Per session, its recent actors' last run (spec without a run ID, profile), oldest first.
        self._recent: dict[str, OrderedDict[str, tuple[RunSpec, str]]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        #: Prompts handed to the model, and the tokens it evaluated for them (tests read these).
        self.prompts = 0
        self.tokens = 0

    def ran(self, spec: RunSpec, profile: str) -> None:
        recent = self._recent.setdefault(spec.session_id, OrderedDict())
        recent[spec.actor_id] = (msgspec.structs.replace(spec, run_id=""), profile)
        recent.move_to_end(spec.actor_id)
        while len(recent) > ACTORS:
            recent.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._recent.pop(session_id, None)
        self._dirty.discard(session_id)
        task = self._tasks.pop(session_id, None)
        if task is not None:
            task.cancel()

    def touch(self, session_id: str) -> None:
        """The session's state changed (or it opened): warm it once it has been quiet."""
        if not self.enabled:
            return
        self._dirty.add(session_id)
        if session_id not in self._tasks:
            task = asyncio.get_running_loop().create_task(self._warm(session_id), name=f"warm-{session_id}")
            self._tasks[session_id] = task
            task.add_done_callback(functools.partial(self._ended, session_id))

    def _ended(self, session_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(session_id) is task:  # (forget() may have made way for a newer one)
            del self._tasks[session_id]

    async def _warm(self, session_id: str) -> None:
        while session_id in self._dirty:
            self._dirty.discard(session_id)
            await asyncio.sleep(QUIET_S)
            if session_id in self._dirty:  # changed again meanwhile: wait for quiet
                continue
            await self._gateway.loaded()  # the model loads in the background at start-up
            if not self._gateway.local.loaded:  # not installed, or no profile loaded it: a warm-up never does
                return
            recent = self._recent.get(session_id)
            runs = list(reversed(recent.values())) if recent else [(RunSpec(session_id, "", NarrateInput("")), "")]
            for spec, profile in runs:
                if session_id in self._dirty or self._busy():
                    break  # a run keeps its own prompt; a newer change warms again
                try:
                    await self._warm_one(spec, profile)
                except SidecarError as exc:  # e.g. the actor left the world: a run would say so
                    log.debug("warm-up skipped", extra={"fields": {"session_id": session_id, "why": exc.message}})
                    if recent is not None:
                        recent.pop(spec.actor_id, None)
                except Exception:  # noqa: BLE001 - a warm-up is an optimisation: it never fails anything
                    log.warning("warm-up failed", exc_info=True, extra={"fields": {"session_id": session_id}})
                    return

    async def _warm_one(self, spec: RunSpec, profile: str) -> None:
        plan = self._plan(spec, RunOptions(profile=profile))
        if plan.target.route.kind != "local":
            return
        prompt = await self._prompt(plan)  # as PreviewPrompt builds it: nothing is recorded
        if self._busy():
            return
        shape = reply_shape(spec.input, prompt.prepared)
        self.prompts += 1
        self.tokens += await self._gateway.local.warm(prompt.prepared.prompt.messages, shape)

    async def aclose(self) -> None:
        self.enabled = False
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
