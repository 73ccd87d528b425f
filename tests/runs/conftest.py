"""Fixtures for run tests: `make_rig(...)` builds a real App (see fakes.runs_rig)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from fakes.runs_rig import RunsRig, build_rig

RigFactory = Callable[..., RunsRig]


@pytest.fixture
async def make_rig() -> AsyncIterator[RigFactory]:
    """`make_rig(runs=RunsConfig(...), script=ScriptConfig(...), **profile_fields)`."""
    made: list[RunsRig] = []

    def factory(*args: object, **kwargs: object) -> RunsRig:
        rig = build_rig(*args, **kwargs)  # type: ignore[arg-type]
        made.append(rig)
        return rig

    yield factory
    for rig in made:
        await rig.runs.aclose()
        await rig.app.gateway.aclose()  # type: ignore[attr-defined]
