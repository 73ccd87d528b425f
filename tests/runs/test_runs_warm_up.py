"""When and what the warm-up warms (sidecar/runs/warm_up.py), with the model and the
prompt builder faked for speed. The real model and pipeline: tests/llm/test_llm_warm_up.py
and tests/llm/test_llm_warm_sessions.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from waits import eventually

from sidecar.context.contract import NarrateInput, RunSpec
from sidecar.errors import UnknownEntity
from sidecar.runs import warm_up as wu
from sidecar.runs.plan import RunOptions
from sidecar.runs.warm_up import ACTORS, WarmUp


@dataclass
class FakeLocal:
    loaded: bool = True
    warmed: list[str] = field(default_factory=list)

    async def warm(self, messages: list[dict[str, str]], shape: object) -> int:
        self.warmed.append(messages[0]["content"])
        return 10


class FakeGateway:
    def __init__(self) -> None:
        self.local = FakeLocal()

    async def loaded(self) -> None:
        return None


def _spec(actor: str, text: str = "x") -> RunSpec:
    return RunSpec("s1", actor, NarrateInput(text))


def _warm_up(route: str = "local", busy: bool = False, missing: tuple[str, ...] = ()) -> tuple[WarmUp, FakeLocal]:
    gateway = FakeGateway()

    def plan(spec: RunSpec, options: RunOptions) -> object:
        if spec.actor_id in missing:
            raise UnknownEntity(f"actor_id {spec.actor_id!r} is not in session 's1'")
        return SimpleNamespace(spec=spec, target=SimpleNamespace(route=SimpleNamespace(kind=route)))

    async def prompt(plan: SimpleNamespace) -> object:
        messages = [{"role": "system", "content": plan.spec.actor_id or "narrator"}]
        return SimpleNamespace(prepared=SimpleNamespace(prompt=SimpleNamespace(messages=messages)))

    return WarmUp(gateway, plan, prompt, lambda: busy), gateway.local  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wu, "QUIET_S", 0.01)


async def _settled(warm: WarmUp) -> None:
    await eventually(lambda: not warm._tasks, what="the warm-ups are over")


async def test_a_session_nobody_spoke_in_warms_the_narrator_once_it_is_quiet() -> None:
    warm, local = _warm_up()
    for _ in range(5):  # a burst of writes: one warm-up, after the last
        warm.touch("s1")
        await asyncio.sleep(0.002)
    await _settled(warm)
    assert local.warmed == ["narrator"]
    assert warm.prompts == 1 and warm.tokens == 10


async def test_the_most_recent_actors_are_warmed_latest_first() -> None:
    warm, local = _warm_up()
    for actor in ["a", "b", "c", "d", "b"]:
        warm.ran(_spec(actor), "")
    warm.touch("s1")
    await _settled(warm)
    assert local.warmed == ["b", "d", "c"][:ACTORS]


async def test_nothing_is_warmed_while_a_run_is_queued_or_running() -> None:
    warm, local = _warm_up(busy=True)
    warm.touch("s1")
    await _settled(warm)
    assert local.warmed == [] and warm.prompts == 0


async def test_a_profile_that_calls_a_provider_is_not_warmed() -> None:
    warm, local = _warm_up(route="sse")
    warm.ran(_spec("a"), "cloud")
    warm.touch("s1")
    await _settled(warm)
    assert local.warmed == []


async def test_an_actor_that_left_the_world_is_dropped_and_the_others_still_warm() -> None:
    warm, local = _warm_up(missing=("gone",))
    warm.ran(_spec("a"), "")
    warm.ran(_spec("gone"), "")
    warm.touch("s1")
    await _settled(warm)
    assert local.warmed == ["a"]
    assert list(warm._recent["s1"]) == ["a"]


async def test_an_unloaded_model_is_never_warmed_nor_loaded() -> None:
    warm, local = _warm_up()
    local.loaded = False
    warm.touch("s1")
    await _settled(warm)
    assert local.warmed == []


async def test_a_closed_session_is_forgotten_and_a_disabled_warm_up_does_nothing() -> None:
    warm, local = _warm_up()
    warm.ran(_spec("a"), "")
    warm.touch("s1")
    warm.forget("s1")
    await asyncio.sleep(0.05)
    assert local.warmed == [] and "s1" not in warm._recent and not warm._tasks

    warm.enabled = False
    warm.touch("s1")
    assert not warm._tasks
    await warm.aclose()
