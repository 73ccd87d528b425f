"""A real App for run tests (the real session store, context engine and model
gateway, with the scripted fake model of docs/runs.md), and `drain`."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from world import crowd

from sidecar.app import App
from sidecar.config import Config, LocalModelConfig, ModelProfile, RunsConfig, ScriptConfig
from sidecar.context import ContextEngine
from sidecar.context.contract import NarrateInput, RunInput, RunSpec
from sidecar.llm import ModelGateway
from sidecar.runs import RunHandle, RunOptions, RunScheduler
from sidecar.state.store import SessionStore

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


@dataclass
class Outcome:
    events: list = field(default_factory=list)
    error: Exception | None = None

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if type(e).__name__ == "Text")

    def kinds(self) -> list[str]:
        return [type(e).__name__ for e in self.events]


async def drain(handle: RunHandle) -> Outcome:
    out = Outcome()
    try:
        async for event in handle.events():
            out.events.append(event)
    except Exception as exc:  # noqa: BLE001 - inspected by the tests
        out.error = exc
    return out


async def first_event(handle: RunHandle) -> object:
    """The run's first event (Started once it holds a slot); `drain` gets the rest."""
    async with asyncio.timeout(5):
        return await anext(handle.events())


@dataclass
class RunsRig:
    app: App

    @property
    def runs(self) -> RunScheduler:
        return self.app.runs  # type: ignore[return-value]

    async def session(self, session_id: str = "s1", actors: int = 0) -> None:
        """Open a session holding `actors` characters (tests/world.py's `crowd`)."""
        await self.app.store.open(session_id)  # type: ignore[attr-defined]
        await crowd(actors).apply_to(self.app.store, session_id)

    def submit(
        self,
        text: str = "The door creaks open.",
        *,
        session_id: str = "s1",
        actor_id: str = "",
        run_input: RunInput | None = None,
        run_id: str = "",
        **options,
    ) -> RunHandle:
        spec = RunSpec(session_id=session_id, actor_id=actor_id, input=run_input or NarrateInput(text), run_id=run_id)
        return self.runs.submit(spec, RunOptions(**options))


def build_rig(
    runs: RunsConfig | None = None,
    script: ScriptConfig | None = None,
    local_model: LocalModelConfig | None = None,
    **profile: object,
) -> RunsRig:
    """An App whose default profile "fake" is the scripted model with `profile` fields
    (or the embedded model, given `model="local/..."`, loaded as `local_model` says)."""
    fields = {"model": "scripted/test", "max_retries": 0, "script": script or ScriptConfig(chunk_delay_ms=1)}
    fields.update(profile)
    config = Config(
        profiles={"fake": ModelProfile(**fields)},  # type: ignore[arg-type]
        default_profile="fake",
        runs=runs or RunsConfig(),
        local_model=local_model or LocalModelConfig(),
    )
    store, gateway, context = SessionStore(config.state), ModelGateway(config), ContextEngine(config)
    app = App(config=config, store=store, gateway=gateway, runs=None, context=context)
    app.runs = RunScheduler(config, store, gateway, context, gate=app.gate)
    gateway.start()
    return RunsRig(app)
