"""A prompt is built in a worker thread (issue 24, item 3): while one builds, other
sessions' calls are served; writes to its own session wait until it is built, so
it reads one revision whole. Through a real server on a real socket; the build is
held open by a wrapper around the real context engine's `prepare` until the test
says, so what overlaps what does not depend on timing."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from test_agent_run import narrate, scripted_config
from test_session_rpcs import upsert
from waits import eventually

from sidecar.v1 import session_service_pb2 as spb

#: How long a held build waits for the test before it goes on by itself (the old code
#: built on the loop: nothing else could run to release it).
HOLD_S = 5.0


def hold_builds(app: Any) -> tuple[threading.Event, threading.Event, list[bool]]:
    """(entered, release, released-by-the-test per build): each prepare waits for `release`."""
    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []
    real = app.context.prepare

    def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        released.append(release.wait(HOLD_S))
        return real(*args, **kwargs)

    app.context.prepare = held
    return entered, release, released


async def test_other_sessions_are_served_while_a_prompt_builds(make_server: Any) -> None:
    running = await make_server(scripted_config())
    client = running.client
    for sid in ("busy", "other"):
        await client.open_session(sid)
        await client.apply_deltas(sid, 0, [upsert("bob")])
    entered, release, released = hold_builds(running.app)
    run = asyncio.create_task(_events(client, narrate("The storm breaks.", session_id="busy")))
    await eventually(entered.is_set, what="the prompt build started")
    # Another session's write, read and run are answered while the build is held.
    assert (await client.apply_deltas("other", 1, [upsert("ann")])).revision == 2
    state = await client.sessions.GetState(spb.GetStateRequest(session_id="other"))
    assert [e.id for e in state.snapshot.entities] == ["bob", "ann"]
    release.set()
    events = await run
    assert released == [True]  # the test released it: the loop was free meanwhile
    assert events[-1].WhichOneof("kind") == "finished"


async def test_a_write_to_the_session_waits_for_its_prompt(make_server: Any) -> None:
    running = await make_server(scripted_config())
    client, gate = running.client, running.app.gate
    await client.open_session("g1")
    await client.apply_deltas("g1", 0, [upsert("bob")])
    entered, release, released = hold_builds(running.app)
    run = asyncio.create_task(_events(client, narrate("The storm breaks.")))
    await eventually(entered.is_set, what="the prompt build started")
    write = asyncio.create_task(client.apply_deltas("g1", 1, [upsert("ann")]))
    await eventually(lambda: gate.busy("g1") == (1, 1), what="the write waits for the build")
    assert not write.done()
    release.set()
    assert (await write).revision == 2
    events = await run
    # The prompt was built at the revision it started on, whole.
    assert events[0].started.revision == 1 and events[-1].WhichOneof("kind") == "finished"
    assert released == [True] and gate.busy("g1") == (0, 0)


async def test_a_cancelled_run_keeps_the_session_until_its_build_ends(make_server: Any) -> None:
    running = await make_server(scripted_config())
    client, gate = running.client, running.app.gate
    await client.open_session("g1")
    entered, release, _ = hold_builds(running.app)
    run = asyncio.create_task(_events(client, narrate("The storm breaks.")))
    await eventually(entered.is_set, what="the prompt build started")
    run.cancel()
    # The thread cannot be stopped: a write waits for it even though its run is gone.
    write = asyncio.create_task(client.apply_deltas("g1", 0, [upsert("ann")]))
    await eventually(lambda: gate.busy("g1") == (1, 1), what="the write waits for the build")
    release.set()
    assert (await write).revision == 1
    await eventually(lambda: gate.busy("g1") == (0, 0), what="the gate is free")


async def _events(client: Any, request: Any) -> list[Any]:
    return [event async for event in client.run(request)]
