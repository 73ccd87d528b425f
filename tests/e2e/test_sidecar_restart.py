"""Issue 20, supervised restart (RestartPolicy) of the real sidecar: tracked
sessions resume with the state a run without crashes makes, an unacknowledged
batch is resent under its delta ID and lands once (both ways), a used-up policy
fails with the last exit, a restart without --state-dir reports the sessions
lost and ReplaceState resyncs them, and nothing is left behind."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from crash_rig import (
    GONE_WAIT_S,
    RESTART_WAIT_S,
    batch,
    get_state,
    launch,
    leftovers,
    no_process,
    outcomes,
    reference_state,
    same_world,
)
from launchers import SidecarCommand
from waits import eventually

from sidecar.client import (
    ResentBatch,
    RestartOutcome,
    RestartPolicy,
    SessionLost,
    SidecarExit,
    SidecarGone,
    SidecarProcess,
    SidecarStatus,
    TrackedSession,
    is_retryable,
)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

FAST = RestartPolicy(max_restarts=10, backoff_initial_s=0.05)


async def kill_and_wait_restart(sidecar: SidecarProcess, seen: list[RestartOutcome]) -> RestartOutcome:
    count, pid = len(seen), sidecar.pid
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: len(seen) > count, timeout=RESTART_WAIT_S, what="the restart is READY")
    assert sidecar.pid != pid and sidecar.status is SidecarStatus.READY
    return seen[-1]


async def test_a_restart_resumes_tracked_sessions_with_the_state_of_a_run_without_crashes(
    tmp_path: Path, sidecar_cmd: SidecarCommand
) -> None:
    # The venv and the frozen build: a restart launches the same command again.
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=FAST,
                           command=sidecar_cmd.serve)
    seen = outcomes(sidecar)
    client = sidecar.client  # held across restarts, as a game holds it
    tracked = await client.track("g")
    for kill_after in (3, 6, 9):
        while tracked.revision < kill_after:
            await tracked.apply(batch(tracked.revision + 1))
        outcome = await kill_and_wait_restart(sidecar, seen)
        assert (outcome.resumed, outcome.lost, outcome.sessions_lost) == (("g",), (), False)
        assert outcome.exit.signal == signal.SIGKILL and not outcome.exit.requested
        assert tracked.revision == kill_after and not tracked.lost
        assert not sidecar.exited.done(), "exited waits for the last exit (STOPPED or FAILED)"
    await tracked.apply(batch(10))
    assert same_world(await get_state(sidecar, "g"), await reference_state(tmp_path, [batch(k) for k in range(1, 11)]))
    assert sidecar.client is client
    await sidecar.stop()


async def test_a_batch_applied_before_the_kill_but_never_acknowledged_is_replayed_once(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=FAST)
    seen = outcomes(sidecar)
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    real = sidecar.client.apply_deltas

    async def ack_lost_in_the_crash(*args: Any, **kwargs: Any) -> Any:
        await real(*args, **kwargs)  # applied and journaled by the sidecar...
        os.kill(sidecar.pid, signal.SIGKILL)
        return await real(*args, **kwargs)  # ...but the game sees only the crash

    sidecar.client.apply_deltas = ack_lost_in_the_crash  # type: ignore[method-assign]
    with pytest.raises(SidecarGone):
        await tracked.apply(batch(2), delta_id="batch-2")
    del sidecar.client.apply_deltas
    await eventually(lambda: seen, timeout=RESTART_WAIT_S, what="the restart is READY")
    assert seen[0].resent == (ResentBatch("g", "batch-2", applied=True, replayed=True, revision=2),)
    assert tracked.revision == 2 and tracked.pending is None
    assert same_world(await get_state(sidecar, "g"), await reference_state(tmp_path, [batch(1), batch(2)]))
    await sidecar.stop()


async def test_a_batch_the_sidecar_never_applied_is_applied_by_the_restart(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=FAST)
    seen = outcomes(sidecar)
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    os.kill(sidecar.pid, signal.SIGSTOP)  # it can read nothing more
    sending = asyncio.create_task(tracked.apply(batch(2)))
    await eventually(lambda: tracked.pending is not None, what="the batch is sent")
    os.kill(sidecar.pid, signal.SIGKILL)
    with pytest.raises(SidecarGone):
        await asyncio.wait_for(sending, GONE_WAIT_S)
    await eventually(lambda: seen, timeout=RESTART_WAIT_S, what="the restart is READY")
    (resent,) = seen[0].resent
    assert (resent.applied, resent.replayed, resent.revision) == (True, False, 2)
    assert resent.delta_id.startswith("g-"), "the tracker names a batch the game gave no delta ID"
    assert same_world(await get_state(sidecar, "g"), await reference_state(tmp_path, [batch(1), batch(2)]))
    await sidecar.stop()


async def test_calls_while_restarting_fail_at_once_and_stop_ends_the_wait(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, restart=RestartPolicy(backoff_initial_s=600.0))
    exits: list[SidecarExit] = []
    sidecar.on_exit(exits.append)
    killed = sidecar.pid
    os.kill(killed, signal.SIGKILL)
    await eventually(lambda: sidecar.status is SidecarStatus.RESTARTING, timeout=GONE_WAIT_S, what="RESTARTING")
    with pytest.raises(SidecarGone) as err:
        await sidecar.client.get_info()
    assert err.value.exit == exits[0] and "no call is made" in str(err.value)
    assert err.value.will_restart, "a policy is relaunching it: the game may call again once READY"
    assert is_retryable(err.value)
    with pytest.raises(SidecarGone):
        sidecar.client.sessions.StreamDeltas()  # the raw stubs too, at the call itself
    # stop() during the backoff ends it: nothing more is launched.
    last = await asyncio.wait_for(sidecar.stop(), GONE_WAIT_S)
    assert last == exits[0] and last.pid == killed and not last.requested
    assert sidecar.status is SidecarStatus.STOPPED and len(exits) == 1
    assert leftovers(tmp_path) == []


async def test_a_used_up_policy_fails_with_the_last_exit(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, restart=RestartPolicy(max_restarts=1, backoff_initial_s=0.05))
    statuses: list[SidecarStatus] = []
    exits: list[SidecarExit] = []
    sidecar.on_status(statuses.append)
    sidecar.on_exit(exits.append)
    await kill_and_wait_restart(sidecar, outcomes(sidecar))
    second = sidecar.pid
    os.kill(second, signal.SIGKILL)
    last = await asyncio.wait_for(sidecar.wait_exit(), RESTART_WAIT_S)
    assert last.pid == second and last.signal == signal.SIGKILL and not last.requested
    assert statuses == [SidecarStatus.RESTARTING, SidecarStatus.READY, SidecarStatus.FAILED]
    assert [e.pid for e in exits] == [exits[0].pid, second] and exits[-1] == last
    with pytest.raises(SidecarGone) as err:
        await sidecar.client.get_info()
    assert err.value.exit == last
    assert not err.value.will_restart, "the policy is used up: it stays gone"
    assert not is_retryable(err.value)
    await no_process(second)
    assert leftovers(tmp_path) == []


async def test_a_restart_whose_program_is_gone_is_a_failed_attempt_not_a_dead_watcher(tmp_path: Path) -> None:
    """The program removed between launch and restart (an update, a cleaned folder): each
    attempt fails with SpawnFailed, a launch error like the others, and the policy ends
    FAILED with the last exit. Before, the OSError escaped the supervisor's watch task and
    the status stayed RESTARTING for ever."""
    import sys

    program = tmp_path / "game-sidecar"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} -m sidecar serve \"$@\"\n", encoding="utf-8")
    program.chmod(0o755)
    sidecar = await launch(tmp_path, restart=RestartPolicy(max_restarts=2, backoff_initial_s=0.05),
                           command=[str(program)])
    statuses: list[SidecarStatus] = []
    sidecar.on_status(statuses.append)
    first = sidecar.pid
    program.unlink()
    os.kill(first, signal.SIGKILL)
    last = await asyncio.wait_for(sidecar.wait_exit(), RESTART_WAIT_S)
    assert sidecar.status is SidecarStatus.FAILED and statuses[-1] is SidecarStatus.FAILED
    assert last.pid == 0 and last.code is None  # the last attempt never started
    with pytest.raises(SidecarGone) as err:
        await sidecar.client.get_info()
    assert not err.value.will_restart
    await no_process(first)


async def test_a_restart_without_a_state_dir_reports_the_sessions_lost(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, restart=FAST)
    seen = outcomes(sidecar)
    tracked: TrackedSession = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    await tracked.apply(batch(2))
    saved = (await get_state(sidecar, "g")).snapshot  # what the game keeps of its world
    outcome = await kill_and_wait_restart(sidecar, seen)
    assert (outcome.sessions_lost, outcome.lost, outcome.resumed) == (True, ("g",), ())
    assert tracked.lost
    with pytest.raises(SessionLost):
        await tracked.apply(batch(3))
    # The resync docs/protocol.md §1 prescribes: ReplaceState, then carry on.
    await tracked.replace_state(saved, revision=2)
    await tracked.apply(batch(3))
    # The same resync in a sidecar that never crashed (ReplaceState stamps the events anew).
    reference = await reference_state(tmp_path, [batch(3)], replaced=(saved, 2))
    assert same_world(await get_state(sidecar, "g"), reference)
    await sidecar.stop()


async def test_no_process_and_no_socket_folder_is_left_after_kills_restarts_and_stop(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=FAST)
    seen = outcomes(sidecar)
    pids = [sidecar.pid]
    for _ in range(2):
        await kill_and_wait_restart(sidecar, seen)
        pids.append(sidecar.pid)
        assert len(leftovers(tmp_path)) == 1, "only the live sidecar's socket folder"
    exit = await sidecar.stop()
    assert exit.requested and exit.code == 0
    for pid in pids:
        await no_process(pid)
    assert leftovers(tmp_path) == []


async def test_an_apply_the_game_cancelled_is_settled_once_by_the_next_one(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path)
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    os.kill(sidecar.pid, signal.SIGSTOP)
    sending = asyncio.create_task(tracked.apply(batch(2)))
    await eventually(lambda: tracked.pending is not None, what="the batch is sent")
    sending.cancel()  # the game gives up: whether batch 2 lands is unknown
    with pytest.raises(asyncio.CancelledError):
        await sending
    os.kill(sidecar.pid, signal.SIGCONT)
    assert tracked.pending is not None and tracked.revision == 1
    reply = await tracked.apply(batch(3))  # batch 2 is settled first, under its delta ID
    assert reply.revision == 3 and tracked.pending is None
    reference = await reference_state(tmp_path, [batch(1), batch(2), batch(3)])
    assert same_world(await get_state(sidecar, "g"), reference)
    await sidecar.stop()
