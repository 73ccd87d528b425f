"""Issue 20, without restarts: the real sidecar's exit is observed, what was in
flight ends with the typed SidecarGone, a hung sidecar is declared gone, a stop
says truthfully how the process ended, and nothing is left behind.
(docs/protocol.md §1, "When the sidecar exits".) Latencies are measured by
scripts/bench/bench_crash_recovery.py; the waits here are generous bounds."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import grpc
import pytest
from crash_rig import GONE_WAIT_S, HANG_WAIT_S, batch, launch, leftovers, no_process
from launchers import SidecarCommand, player_env

from sidecar.client import SidecarClient, SidecarExit, SidecarGone, SidecarStatus, error_reason
from sidecar.client._launcher import spawn, stop_process
from sidecar.v1 import agent_service_pb2 as apb
from sidecar.v1 import session_service_pb2 as spb

pytestmark = pytest.mark.timeout(120)


def assert_killed(exit: SidecarExit, *, requested: bool = False, hung: bool = False) -> None:
    assert (exit.code, exit.signal, exit.requested, exit.hung) == (None, signal.SIGKILL, requested, hung), exit


async def test_kill_9_during_a_delta_stream_ends_it_with_sidecar_gone(tmp_path: Path,
                                                                      sidecar_cmd: SidecarCommand) -> None:
    sidecar = await launch(tmp_path, command=sidecar_cmd.serve)  # the venv and the frozen build
    statuses: list[SidecarStatus] = []
    sidecar.on_status(statuses.append)
    address, pid = sidecar.handshake.address, sidecar.pid
    await sidecar.client.open_session("g")
    call = sidecar.client.sessions.StreamDeltas()
    await call.write(spb.StreamDeltasRequest(session_id="g", base_revision=0, delta_id="d1", ops=batch(1)))
    assert (await call.read()).revision == 1
    reader = asyncio.create_task(call.read())  # in flight when the process dies

    os.kill(pid, signal.SIGKILL)
    with pytest.raises(SidecarGone) as err:
        await asyncio.wait_for(reader, GONE_WAIT_S)
    assert error_reason(err.value) == "SIDECAR_GONE" and err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert err.value.endpoint == address and address in str(err.value)
    assert err.value.exit is not None and not err.value.will_restart  # no policy: it stays gone
    assert_killed(err.value.exit)

    exit = await asyncio.wait_for(sidecar.wait_exit(), GONE_WAIT_S)
    assert_killed(exit)
    assert exit.pid == pid and exit.stderr_tail and len(exit.stderr_tail) <= 20
    assert sidecar.status is SidecarStatus.FAILED and statuses == [SidecarStatus.FAILED]
    # Every new call fails with the same typed error, the write on the dead stream too.
    with pytest.raises(SidecarGone):
        await sidecar.client.get_info()
    with pytest.raises(SidecarGone):
        await call.write(spb.StreamDeltasRequest(session_id="g", base_revision=1, delta_id="d2", ops=batch(2)))
    await no_process(pid)
    assert leftovers(tmp_path) == [], "the socket folder of a killed sidecar must be removed"
    assert await sidecar.stop() == exit  # stopping a gone sidecar reports how it went


async def test_kill_9_during_a_run_ends_it_with_sidecar_gone(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path, chunk_delay_ms=200.0)  # a run lasting seconds
    await sidecar.client.open_session("g")
    request = apb.RunRequest(session_id="g", narrate=apb.NarrateInput(text="The bell rings."))
    events = sidecar.client.run(request)
    kinds = []
    with pytest.raises(SidecarGone) as err:
        async for event in events:
            kinds.append(event.WhichOneof("kind"))
            if kinds[-1] == "text" and kinds.count("text") == 1:
                os.kill(sidecar.pid, signal.SIGKILL)
    assert "finished" not in kinds
    assert err.value.exit is not None
    assert_killed(err.value.exit)
    await sidecar.stop()
    assert leftovers(tmp_path) == []


@pytest.mark.slow
async def test_a_hung_sidecar_is_declared_gone_and_killed(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path)
    pid = sidecar.pid
    await sidecar.client.open_session("g")
    os.kill(pid, signal.SIGSTOP)
    in_flight = asyncio.ensure_future(sidecar.client.sessions.GetState(spb.GetStateRequest(session_id="g")))
    with pytest.raises(SidecarGone) as err:
        await asyncio.wait_for(in_flight, HANG_WAIT_S)
    assert err.value.exit is not None
    assert_killed(err.value.exit, hung=True)
    assert "hung" in str(err.value)
    assert sidecar.status is SidecarStatus.FAILED
    await no_process(pid)
    assert leftovers(tmp_path) == []


async def test_stop_is_orderly_and_says_so(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path)
    seen: list[SidecarExit] = []
    sidecar.on_exit(seen.append)
    exit = await sidecar.stop()
    assert (exit.code, exit.signal, exit.requested, exit.hung, exit.orderly) == (0, None, True, False, True)
    assert seen == [exit] and sidecar.status is SidecarStatus.STOPPED
    assert leftovers(tmp_path) == []


@pytest.mark.slow
async def test_stop_of_a_hung_sidecar_kills_it_without_the_grace_periods(tmp_path: Path) -> None:
    sidecar = await launch(tmp_path)
    os.kill(sidecar.pid, signal.SIGSTOP)
    # With 60 s grace periods, only the hung shortcut ends within the bound.
    exit = await asyncio.wait_for(sidecar.stop(timeout=60.0), HANG_WAIT_S)
    assert_killed(exit, requested=True, hung=True)
    assert not exit.orderly and "requested" in exit.describe()
    assert sidecar.status is SidecarStatus.STOPPED
    assert leftovers(tmp_path) == []


@pytest.mark.slow
async def test_the_sidecar_permits_the_clients_keepalive_pings(tmp_path: Path) -> None:
    """A client pinging each second (KEEPALIVE_OPTIONS) on an idle connection is
    not sent GOAWAY too_many_pings (gRPC's default server policy does after three)."""
    env = player_env(tmp_path)
    child = await spawn([], command=None, env=env, token=None, timeout=60.0, on_stderr=None)
    client = SidecarClient(child.handshake.target, child.token)
    try:
        await client.get_info()
        assert client.channel.get_state() is grpc.ChannelConnectivity.READY
        # Idle for six pings: a GOAWAY turns the channel IDLE (then it would reconnect).
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.channel.wait_for_state_change(grpc.ChannelConnectivity.READY), 6.0)
    finally:
        await client.close()
        await stop_process(child.proc, 5.0)
