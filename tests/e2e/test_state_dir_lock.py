"""One sidecar per --state-dir (issue 13, item 12): the real process, launched
the way a game launches it. A second sidecar on the same directory exits at
once with code 3 and says why, before any handshake; the launcher reports it
as StateDirLocked; the first goes on serving; the lock dies with its holder, even
a SIGKILLed one."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from sidecar.client import ExitedBeforeHandshake, SidecarProcess, StateDirLocked
from sidecar.process_contract import EXIT_STATE_DIR_LOCKED
from sidecar.v1 import session_service_pb2 as spb

pytestmark = pytest.mark.timeout(120)


@pytest.mark.slow
async def test_a_second_sidecar_on_the_same_state_dir_exits_3(tmp_path: Path) -> None:
    state_dir = str(tmp_path / "state")
    first = await SidecarProcess.launch(["--state-dir", state_dir], timeout=60)
    try:
        await first.client.sessions.OpenSession(spb.OpenSessionRequest(session_id="g"))
        with pytest.raises(StateDirLocked) as busy:
            await SidecarProcess.launch(["--state-dir", state_dir], timeout=60)
        err = busy.value
        assert isinstance(err, ExitedBeforeHandshake) and err.returncode == EXIT_STATE_DIR_LOCKED == 3
        assert state_dir in err.stderr_tail and f"pid {first.pid}" in err.stderr_tail
        # The first one is untouched and still serves its sessions.
        opened = await first.client.sessions.OpenSession(spb.OpenSessionRequest(session_id="g"))
        assert not opened.created
    finally:
        await first.close()
    # Released on exit: the next one starts and finds the session.
    again = await SidecarProcess.launch(["--state-dir", state_dir], timeout=60)
    try:
        opened = await again.client.sessions.OpenSession(spb.OpenSessionRequest(session_id="g"))
        assert not opened.created
        # A holder killed outright leaves no lock behind either.
        os.kill(again.pid, signal.SIGKILL)
    finally:
        await again.close()
    last = await SidecarProcess.launch(["--state-dir", state_dir], timeout=60)
    await last.close()
