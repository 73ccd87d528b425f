"""What the issue 20 tests share (tests/e2e/test_sidecar_exit.py,
test_sidecar_restart.py): the real sidecar launched by `SidecarProcess.launch`
in a player's environment with the scripted model, deterministic batches, and
the checks "no process left" and "no socket folder left"."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from launchers import player_env
from waits import eventually

from sidecar.client import RestartOutcome, SidecarProcess
from sidecar.host_watch import process_alive
from sidecar.v1 import session_service_pb2 as spb
from sidecar.v1 import state_pb2 as pb
from sidecar.v1 import types_pb2 as tpb

#: Liveness bound for a handshake: a cold, shared machine compiles modules first.
LAUNCH_TIMEOUT_S = 60.0
#: Generous bounds for what the benchmark measures (scripts/bench/bench_crash_recovery.py):
#: the 100 ms, 5 s and 1 s figures are not asserted here.
GONE_WAIT_S = 10.0
HANG_WAIT_S = 30.0
RESTART_WAIT_S = 60.0


def write_config(tmp_path: Path, chunk_delay_ms: float = 1.0) -> Path:
    config = tmp_path / "sidecar.toml"
    config.write_text(
        'default_profile = "fake"\n[profiles.fake]\nmodel = "scripted/crash"\nmax_retries = 0\n'
        f"[profiles.fake.script]\nchunk_delay_ms = {chunk_delay_ms}\n"
    )
    return config


async def launch(tmp_path: Path, args: Sequence[str] = (), *, chunk_delay_ms: float = 1.0,
                 **kwargs: Any) -> SidecarProcess:
    """The real sidecar as a game launches it, with the scripted model; the socket
    folder goes under the test's own TMPDIR, so leftovers are seen."""
    # player_env makes the folders; a second launch in the same test reuses them.
    env = player_env(tmp_path) if not (tmp_path / "home").exists() else _env(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp)
    config = write_config(tmp_path, chunk_delay_ms)
    return await SidecarProcess.launch(["--config", str(config), *args], env=env,
                                       timeout=LAUNCH_TIMEOUT_S, **kwargs)


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "PATH": str(tmp_path / "empty-bin"), "LANG": "C.UTF-8"}


def leftovers(tmp_path: Path) -> list[str]:
    """Socket folders a launch left in the test's TMPDIR."""
    tmp = tmp_path / "tmp"
    return sorted(p.name for p in tmp.iterdir()) if tmp.exists() else []


async def no_process(pid: int) -> None:
    await eventually(lambda: not process_alive(pid), timeout=GONE_WAIT_S, what=f"pid {pid} is gone")


def entity(k: int) -> pb.DeltaOp:
    return pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(
        entity=pb.Entity(id=f"e{k}", fields={"k": tpb.FieldValue(value=tpb.Value(int_value=k))})))


def batch(k: int) -> list[pb.DeltaOp]:
    """Batch k: entity e<k> and an event naming it."""
    event = pb.DeltaOp(record_event=pb.RecordEventOp(event=pb.GameEvent(text=f"tick {k}", entity_ids=[f"e{k}"])))
    return [entity(k), event]


async def get_state(sidecar: SidecarProcess, session_id: str) -> spb.GetStateResponse:
    reply: spb.GetStateResponse = await sidecar.client.sessions.GetState(spb.GetStateRequest(session_id=session_id))
    return reply


async def reference_state(tmp_path: Path, batches: Sequence[Sequence[pb.DeltaOp]],
                          replaced: tuple[pb.Snapshot, int] | None = None) -> spb.GetStateResponse:
    """The world the acknowledged batches make in a fresh sidecar that never crashed
    (after a ReplaceState to `replaced` = (snapshot, revision) when given)."""
    async with await launch(tmp_path) as sidecar:
        await sidecar.client.open_session("g")
        revision = 0
        if replaced is not None:
            request = spb.ReplaceStateRequest(session_id="g", snapshot=replaced[0], revision=replaced[1])
            revision = (await sidecar.client.sessions.ReplaceState(request)).revision
        for ops in batches:
            revision = (await sidecar.client.apply_deltas("g", revision, ops)).revision
        return await get_state(sidecar, "g")


def same_world(a: spb.GetStateResponse, b: spb.GetStateResponse) -> bool:
    return a.revision == b.revision and a.snapshot == b.snapshot





def outcomes(sidecar: SidecarProcess) -> list[RestartOutcome]:
    """Every RestartOutcome the sidecar reports, as it reports them."""
    seen: list[RestartOutcome] = []
    sidecar.on_restart(seen.append)
    return seen
