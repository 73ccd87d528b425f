"""Issue 34: a tracked session keeps what the game writes across a restart of the
real sidecar (killed with SIGKILL), with one contract (docs/protocol.md §1, "Tracked
writes across a restart"): each write is acknowledged, kept (WriteKept: the handle
sends it and says when it lands), or not applied (WriteNotApplied: the game decides).
Never dropped in silence, never applied twice, never reordered."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
from pathlib import Path
from typing import Any

import grpc
import pytest
from crash_rig import GONE_WAIT_S, RESTART_WAIT_S, batch, get_state, launch, outcomes, reference_state, same_world
from waits import eventually

from sidecar.client import (
    RestartPolicy,
    SessionLost,
    SidecarGone,
    SidecarProcess,
    SidecarStatus,
    TrackedSession,
    WriteKept,
    WriteNotApplied,
    error_reason,
    is_retryable,
)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

#: A restart slow enough to write into before it is READY.
SLOW = RestartPolicy(max_restarts=10, backoff_initial_s=0.3)


async def kill_and_wait_down(sidecar: SidecarProcess) -> None:
    os.kill(sidecar.pid, signal.SIGKILL)
    await eventually(lambda: sidecar.client.gone, timeout=GONE_WAIT_S, what="the client sees it gone")


async def write(tracked: TrackedSession, k: int) -> WriteKept:
    with pytest.raises(WriteKept) as kept:
        await tracked.apply(batch(k), delta_id=f"b{k}")
    return kept.value


def ticks(state: Any) -> list[int]:
    return [int(e.text.split()[1]) for e in state.snapshot.events]


async def test_writes_made_while_the_sidecar_restarts_are_kept_and_land_once_in_order(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=SLOW)
    seen = outcomes(sidecar)
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    await kill_and_wait_down(sidecar)
    kept = [await write(tracked, k) for k in (2, 3, 4)]
    assert tracked.held == ("b2", "b3", "b4") and tracked.revision == 1
    first = kept[0]
    assert error_reason(first) == "WRITE_KEPT" and first.will_restart and not is_retryable(first)
    assert isinstance(first, SidecarGone) and first.exit is not None and first.exit.signal == signal.SIGKILL
    assert "do not send it again" in str(first)
    replies = await asyncio.wait_for(asyncio.gather(*(k.landed for k in kept)), RESTART_WAIT_S)
    assert [r.revision for r in replies] == [2, 3, 4] and not any(r.replayed for r in replies)
    assert sidecar.status is SidecarStatus.READY and tracked.held == () and tracked.revision == 4
    assert [(b.delta_id, b.applied, b.revision) for b in seen[0].resent] == [("b2", True, 2), ("b3", True, 3),
                                                                               ("b4", True, 4)]
    await tracked.apply(batch(5))
    reference = await reference_state(tmp_path, [batch(k) for k in range(1, 6)])
    assert same_world(await get_state(sidecar, "g"), reference)
    await sidecar.stop()


async def test_a_burst_of_writes_across_kills_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    """The game of the held-out drill: it writes every 2 ms and carries on at WriteKept."""
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")],
                           restart=RestartPolicy(max_restarts=10, backoff_initial_s=0.05))
    seen = outcomes(sidecar)
    tracked = await sidecar.client.track("g")
    landed: dict[int, asyncio.Future[Any]] = {}
    acknowledged: set[int] = set()
    stop = asyncio.Event()

    async def game() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            try:
                await tracked.apply(batch(k), delta_id=f"b{k}")
                acknowledged.add(k)
            except WriteKept as kept:
                landed[k] = kept.landed
            except WriteNotApplied:  # the held queue is full: the game writes it again later
                k -= 1
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.002)

    writer = asyncio.create_task(game())
    for restart in range(1, 4):
        await eventually(lambda r=restart: tracked.revision >= 20 * r, timeout=RESTART_WAIT_S, what="writes go on")
        os.kill(sidecar.pid, signal.SIGKILL)
        await eventually(lambda r=restart: len(seen) == r, timeout=RESTART_WAIT_S, what="the restart is READY")
    await eventually(lambda: tracked.revision >= 80, timeout=RESTART_WAIT_S, what="writes go on after")
    stop.set()
    await writer
    await asyncio.wait_for(asyncio.gather(*landed.values()), RESTART_WAIT_S)
    written = len(acknowledged) + len(landed)
    assert landed, "some writes met a restart"
    state = await get_state(sidecar, "g")
    assert state.revision == written == tracked.revision, "each write applied exactly once"
    assert {e.id for e in state.snapshot.entities} == {f"e{k}" for k in range(1, written + 1)}
    assert ticks(state) == sorted(ticks(state)), "in the order written"
    await sidecar.stop()


async def test_the_held_queue_is_bounded_and_refuses_past_it_without_dropping_the_rest(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=SLOW)
    tracked = await sidecar.client.track("g")
    tracked.max_held = 2
    await tracked.apply(batch(1))
    await kill_and_wait_down(sidecar)
    kept = [await write(tracked, 2), await write(tracked, 3)]
    with pytest.raises(WriteNotApplied) as refused:
        await tracked.apply(batch(4), delta_id="b4")
    assert not isinstance(refused.value, SidecarGone), "never mistaken for a kept write"
    assert error_reason(refused.value) == "WRITE_NOT_APPLIED" and refused.value.code() == grpc.StatusCode.ABORTED
    assert refused.value.delta_id == "b4" and "max_held" in str(refused.value)
    assert tracked.held == ("b2", "b3")
    await asyncio.wait_for(asyncio.gather(*(k.landed for k in kept)), RESTART_WAIT_S)
    reply = await tracked.apply(batch(4), delta_id="b4")  # the game's choice: write it again
    assert reply.revision == 4
    await sidecar.stop()


async def test_without_a_restart_to_follow_held_writes_fail_as_not_applied(tmp_path: Path) -> None:
    # No policy: a write after the exit is refused at once, as not applied.
    alone = await launch(tmp_path)
    tracked = await alone.client.track("g")
    await kill_and_wait_down(alone)
    with pytest.raises(WriteNotApplied, match="no restart follows"):
        await tracked.apply(batch(1))
    assert tracked.pending is None and tracked.held == ()
    await alone.stop()
    # A policy used up while writes are held: every one fails, typed, with the last exit.
    # The relaunch finds the state dir locked by another (this test), so it cannot start.
    state = tmp_path / "state"
    sidecar = await launch(tmp_path, ["--state-dir", str(state)],
                           restart=RestartPolicy(max_restarts=1, backoff_initial_s=0.5))
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    await kill_and_wait_down(sidecar)
    with open(state / "state.lock", "a+") as lock:  # noqa: ASYNC230  # the dead one's lock went with it
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        kept = await write(tracked, 2)
        with pytest.raises(WriteNotApplied, match="policy is used up") as failed:
            await asyncio.wait_for(kept.landed, RESTART_WAIT_S)
    assert failed.value.delta_id == "b2" and failed.value.exit is not None
    assert sidecar.status is SidecarStatus.FAILED and tracked.held == ()
    with pytest.raises(WriteNotApplied, match="no restart follows"):
        await tracked.apply(batch(3))
    await sidecar.stop()


async def test_writes_held_for_a_session_the_restart_lost_fail_as_not_applied(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, restart=SLOW)  # no --state-dir
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    await kill_and_wait_down(sidecar)
    kept = await write(tracked, 2)
    with pytest.raises(WriteNotApplied, match="lost in the restart"):
        await asyncio.wait_for(kept.landed, RESTART_WAIT_S)
    assert tracked.lost and tracked.held == ()
    with pytest.raises(SessionLost):
        await tracked.apply(batch(3))
    await sidecar.stop()


async def test_a_replayed_batch_never_moves_the_revision_back(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path)
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1), delta_id="a")
    await tracked.apply(batch(2))
    replay = await tracked.apply(batch(1), delta_id="a")  # the game resends A under its ID
    assert replay.replayed and replay.revision == 1
    assert tracked.revision == 2
    reply = await tracked.apply(batch(3))  # not STALE_REVISION
    assert reply.revision == 3
    await sidecar.stop()


async def test_tracking_a_tracked_session_again_gives_the_same_handle_and_its_writes_survive(
    tmp_path: Path,
) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=SLOW)
    first = await sidecar.client.track("g")
    second = await sidecar.client.track("g")
    assert second is first and list(sidecar.client.tracked) == ["g"]
    await first.apply(batch(1))
    await kill_and_wait_down(sidecar)
    kept = [await write(first, 2), await write(second, 3)]
    await asyncio.wait_for(asyncio.gather(*(k.landed for k in kept)), RESTART_WAIT_S)
    reference = await reference_state(tmp_path, [batch(1), batch(2), batch(3)])
    assert same_world(await get_state(sidecar, "g"), reference)
    await sidecar.stop()


async def test_no_call_succeeds_while_the_client_reports_restarting(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=SLOW)
    seen = outcomes(sidecar)
    tracked = await sidecar.client.track("g")
    await tracked.apply(batch(1))
    resuming = asyncio.Event()
    go_on = asyncio.Event()
    real_resume = TrackedSession.resume

    async def slow_resume(self: TrackedSession, sessions: Any) -> Any:
        resuming.set()  # the new process is up and attached; its sessions are not resumed yet
        await go_on.wait()
        return await real_resume(self, sessions)

    tracked.resume = slow_resume.__get__(tracked)  # type: ignore[method-assign]  # hold the restart here
    os.kill(sidecar.pid, signal.SIGKILL)
    await asyncio.wait_for(resuming.wait(), RESTART_WAIT_S)
    assert sidecar.status is SidecarStatus.RESTARTING and sidecar.client.gone
    with pytest.raises(SidecarGone, match="restarts: wait for READY") as err:
        await sidecar.client.get_info()
    assert err.value.will_restart and not isinstance(err.value, WriteKept)
    with pytest.raises(SidecarGone):
        await sidecar.client.apply_deltas("g", 1, batch(2), "raw")  # untracked: refused, not held
    kept = await write(tracked, 2)  # tracked: held
    go_on.set()
    await asyncio.wait_for(kept.landed, RESTART_WAIT_S)
    assert seen and sidecar.status is SidecarStatus.READY
    assert (await get_state(sidecar, "g")).revision == 2
    await sidecar.stop()


@pytest.mark.parametrize("policy", [SLOW, None], ids=["restarting", "no-policy"])
async def test_a_call_that_ends_gone_never_finds_the_status_ready(tmp_path: Path, policy: RestartPolicy | None) -> None:
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=policy)
    tracked = await sidecar.client.track("g")

    async def send() -> SidecarStatus:
        try:
            await tracked.apply(batch(1))
        except SidecarGone:  # WriteKept with a policy, else the unknown outcome
            return sidecar.status  # read in the same step the error arrives
        raise AssertionError("the apply was acknowledged")

    os.kill(sidecar.pid, signal.SIGSTOP)
    sending = asyncio.create_task(send())
    await eventually(lambda: tracked.pending is not None, what="the batch is sent")
    os.kill(sidecar.pid, signal.SIGKILL)
    status = await asyncio.wait_for(sending, GONE_WAIT_S)
    assert status is (SidecarStatus.RESTARTING if policy else SidecarStatus.FAILED)
    await sidecar.stop()


async def test_a_game_writing_as_fast_as_it_can_does_not_keep_the_restart_from_finishing(tmp_path: Path) -> None:
    """Writes that come faster than held ones are sent wait for the last sends (the gate),
    instead of being held behind them for ever."""
    sidecar = await launch(tmp_path, ["--state-dir", str(tmp_path / "state")], restart=SLOW)
    seen = outcomes(sidecar)
    tracked = await sidecar.client.track("g")
    tracked.max_held = 100  # the sends take a round trip each: keep the test short
    stop = asyncio.Event()
    written = 0

    async def game() -> None:
        nonlocal written
        while not stop.is_set():
            try:
                await tracked.apply(batch(written + 1), delta_id=f"b{written + 1}")
            except WriteKept:
                pass
            except WriteNotApplied:  # full: this game tries again after a millisecond
                await asyncio.sleep(0.001)
                continue
            written += 1
            await asyncio.sleep(0.0005)

    writer = asyncio.create_task(game())
    await eventually(lambda: written >= 10, what="writes go on")
    os.kill(sidecar.pid, signal.SIGKILL)
    await eventually(lambda: seen, timeout=RESTART_WAIT_S, what="the restart finishes")
    await eventually(lambda: tracked.revision > 200, timeout=RESTART_WAIT_S, what="writes go on after")
    stop.set()
    await writer
    await eventually(lambda: not tracked.held and tracked.pending is None, what="everything sent")
    state = await get_state(sidecar, "g")
    assert state.revision == written == tracked.revision
    await sidecar.stop()
