"""Scheduling: per-actor order, the global limit, the bounded queue, urgent
runs, cancellation of one run, a session, everything."""

from __future__ import annotations

import asyncio

import pytest
from fakes.runs_rig import drain, first_event

from sidecar.config import RunsConfig, ScriptConfig
from sidecar.errors import (
    InvalidRequest,
    ProfileNotFound,
    QueueFull,
    RunCancelled,
    RunNotFound,
    SessionNotFound,
    ShuttingDown,
)
from sidecar.runs.events import Started, Text


def watch_concurrency(rig) -> dict:
    """Wrap the gateway's calls to observe concurrency from the outside: a call is
    active from its send until it is closed."""
    seen = {"active": 0, "max": 0, "actors_active": set(), "overlap": 0, "order": []}
    original = rig.app.gateway.open

    def enter(actor: str) -> None:
        if actor in seen["actors_active"]:
            seen["overlap"] += 1
        seen["actors_active"].add(actor)
        seen["active"] += 1
        seen["max"] = max(seen["max"], seen["active"])
        seen["order"].append(actor)

    def leave(actor: str) -> None:
        seen["active"] -= 1
        seen["actors_active"].discard(actor)

    class Watched:
        def __init__(self, call, actor: str) -> None:
            self.call, self.actor, self.open = call, actor, True

        def __aiter__(self):
            return self.call.__aiter__()

        async def aclose(self) -> None:
            if self.open:
                self.open = False
                leave(self.actor)
            await self.call.aclose()

    async def open_(request):
        actor = request.messages[-1]["content"].split("@@")[-1][:12]
        enter(actor)
        try:
            call = await original(request)
        except BaseException:
            leave(actor)
            raise
        return Watched(call, actor)

    rig.app.gateway.open = open_
    return seen


async def test_fifty_actors_three_runs_each(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(max_concurrent=8, max_queue=200), script=ScriptConfig(chunk_delay_ms=1))
    await rig.session(actors=50)
    seen = watch_concurrency(rig)
    handles = []
    for turn in range(3):
        for i in range(50):
            actor = f"actor-{i:03d}"
            handles.append((actor, turn, rig.submit(f"turn {turn} @@{actor}", actor_id=actor)))
    outcomes = await asyncio.gather(*(drain(h) for _, _, h in handles))
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes if o.error][:3]
    assert all(o.kinds()[-1] == "Finished" for o in outcomes)
    assert seen["max"] <= 8 and seen["max"] >= 2  # limit held, and runs did overlap
    assert seen["overlap"] == 0  # never two runs of one actor at once
    assert rig.runs.max_running_seen <= 8
    session = rig.app.store.get("s1")
    for i in range(50):
        actor = f"actor-{i:03d}"
        inputs = [e.text for e in session.transcripts[actor] if e.role == "event"]
        assert inputs == [f"turn {t} @@{actor}" for t in range(3)]  # served in arrival order
        assert session.usage[actor].runs == 3


async def test_queue_overflow_is_rejected_cleanly(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(max_concurrent=1, max_queue=3))
    await rig.session(actors=5)
    blocker = rig.submit("hold #stall", actor_id="actor-000")
    waiting = [rig.submit("wait", actor_id=f"actor-00{i}") for i in range(1, 4)]
    with pytest.raises(QueueFull) as info:
        rig.submit("one too many", actor_id="actor-004", run_id="")
    assert info.value.metadata["queue_length"] == "3"
    assert "3 waiting" in info.value.message
    stats = {s["session_id"]: s for s in rig.runs.stats()}["s1"]
    assert stats["queued"] == 3 and stats["running"] == 1
    assert stats["errors_by_reason"] == {"QUEUE_FULL": 1}
    await rig.runs.cancel(blocker.run_id)
    outcomes = await asyncio.gather(drain(blocker), *(drain(h) for h in waiting))
    assert isinstance(outcomes[0].error, RunCancelled)
    assert all(o.error is None for o in outcomes[1:])


async def test_urgent_runs_start_first_but_never_overtake_their_own_actor(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(max_concurrent=1))
    await rig.session(actors=4)
    blocker = rig.submit("hold #stall", actor_id="actor-000")
    a1 = rig.submit("a1", actor_id="actor-001")
    b1 = rig.submit("b1", actor_id="actor-002")
    c1 = rig.submit("c1", actor_id="actor-003", urgent=True)
    blocked_urgent = rig.submit("blocked urgent", actor_id="actor-000", urgent=True)
    order: list[str] = []

    async def note(name, handle):
        out = await drain(handle)
        order.append(name)
        return out

    assert isinstance(await first_event(blocker), Started)  # it holds the only slot; the rest wait
    await rig.runs.cancel(blocker.run_id)
    results = await asyncio.gather(
        note("a1", a1), note("b1", b1), note("c1", c1), note("urgent0", blocked_urgent), drain(blocker)
    )
    assert all(r.error is None for r in results[:4])
    # c1 and actor-000's urgent run go ahead of a1/b1; actor-000's urgent run only after its blocker.
    assert order[:2] == ["urgent0", "c1"] or order[:2] == ["c1", "urgent0"]
    assert order[2:] == ["a1", "b1"]


async def test_cancel_run_queued_and_running(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(max_concurrent=1), script=ScriptConfig(chunk_delay_ms=20))
    await rig.session(actors=2)
    running = rig.submit("speak #stall-mid", actor_id="actor-000", run_id="run-a")
    queued = rig.submit("later", actor_id="actor-001", run_id="run-b")
    got_text = asyncio.Event()
    events: list = []

    async def consume():
        try:
            async for e in running.events():
                events.append(e)
                if isinstance(e, Text):
                    got_text.set()
        except RunCancelled as exc:
            return exc

    task = asyncio.create_task(consume())
    await got_text.wait()
    await rig.runs.cancel("run-b")
    await rig.runs.cancel("run-a")
    assert isinstance(await task, RunCancelled)
    assert isinstance((await drain(queued)).error, RunCancelled)
    with pytest.raises(RunNotFound):
        await rig.runs.cancel("run-a")
    with pytest.raises(RunNotFound):
        await rig.runs.cancel("never-existed")
    session = rig.app.store.get("s1")
    reply = session.transcripts["actor-000"][-1]
    assert reply.interrupted and reply.run_id == "run-a"
    assert reply.text and reply.text == "".join(e.text for e in events if isinstance(e, Text))
    assert "actor-001" not in session.transcripts  # the queued run never started
    assert session.errors_by_reason == {"RUN_CANCELLED": 2}


async def test_cancel_session_cancels_only_that_session(make_rig) -> None:
    rig = make_rig(runs=RunsConfig(max_concurrent=2))
    await rig.session("s1")
    await rig.session("s2")
    h1 = rig.submit("x #stall", session_id="s1")
    h2 = rig.submit("y #stall", session_id="s1")
    h3 = rig.submit("z", session_id="s2")
    # h1 runs; h2 waits behind it (same actor); s2's run takes the other slot.
    for running in (h1, h3):
        assert isinstance(await first_event(running), Started)
    assert await rig.runs.cancel_session("s1") == 2
    r1, r2, r3 = await asyncio.gather(drain(h1), drain(h2), drain(h3))
    assert isinstance(r1.error, RunCancelled) and isinstance(r2.error, RunCancelled)
    assert "closed" in r1.error.message
    assert r3.error is None


async def test_shutdown_cancels_everything_and_refuses_new_runs(make_rig) -> None:
    rig = make_rig()
    await rig.session()
    h = rig.submit("x #stall")
    assert isinstance(await first_event(h), Started)  # shut down while it runs
    await rig.runs.aclose()
    assert isinstance((await drain(h)).error, ShuttingDown)
    with pytest.raises(ShuttingDown):
        rig.submit("after")


async def test_bad_submissions_change_nothing(make_rig) -> None:
    rig = make_rig()
    await rig.session()
    with pytest.raises(SessionNotFound):
        rig.submit("x", session_id="nope")
    with pytest.raises(ProfileNotFound):
        rig.submit("x", profile="no-such-profile")
    h = rig.submit("x #stall", run_id="dup")
    with pytest.raises(InvalidRequest):
        rig.submit("y", run_id="dup")
    await rig.runs.cancel("dup")
    await drain(h)
    assert rig.runs.stats()[0]["queued"] == 0


async def test_started_reports_profile_model_and_revision(make_rig) -> None:
    rig = make_rig()
    await rig.session(actors=1)
    out = await drain(rig.submit("hello", actor_id="actor-000"))
    started = out.events[0]
    assert isinstance(started, Started)
    assert (started.profile, started.model, started.revision) == ("fake", "scripted/test", 1)


@pytest.mark.parametrize("seed", range(4))
async def test_random_mix_of_urgent_runs_and_cancels_keeps_every_invariant(make_rig, seed: int) -> None:
    import random

    rng = random.Random(seed)
    rig = make_rig(runs=RunsConfig(max_concurrent=3, max_queue=100), script=ScriptConfig(chunk_delay_ms=1))
    await rig.session(actors=5)
    seen = watch_concurrency(rig)
    handles = []
    for n in range(40):
        actor = f"actor-00{rng.randrange(5)}"
        handles.append((actor, n, rig.submit(f"n{n} @@{actor}", actor_id=actor, urgent=rng.random() < 0.3)))
        if rng.random() < 0.3:
            await asyncio.sleep(0)
    doomed = {h.run_id for _, _, h in rng.sample(handles, 8)}
    for run_id in doomed:
        try:
            await rig.runs.cancel(run_id)
        except RunNotFound:
            pass  # already finished
    outcomes = await asyncio.gather(*(drain(h) for _, _, h in handles))
    for (_, _, handle), out in zip(handles, outcomes, strict=True):
        assert out.error is None or (isinstance(out.error, RunCancelled) and handle.run_id in doomed)
    assert seen["max"] <= 3 and seen["overlap"] == 0
    session = rig.app.store.get("s1")
    for i in range(5):
        actor = f"actor-00{i}"
        served = [int(e.text.split()[0][1:]) for e in session.transcripts.get(actor, []) if e.role == "event"]
        assert served == sorted(served)  # each actor's runs in arrival order, urgent or not
    stats = rig.runs.stats()[0]
    assert stats["queued"] == 0 and stats["running"] == 0
