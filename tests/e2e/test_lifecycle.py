"""The real sidecar process, launched the way a game launches it (docs/protocol.md §1, §2),
from the venv and from the frozen build (`sidecar_cmd`, tests/e2e/conftest.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from launchers import SidecarCommand
from waits import eventually, eventually_blocking

from sidecar.client import (
    ExitedBeforeHandshake,
    HandshakeTimeout,
    LaunchError,
    MalformedHandshake,
    SidecarClient,
    SidecarProcess,
    SpawnFailed,
    StateDirLocked,
    error_reason,
)
from sidecar.host_watch import process_alive
from sidecar.v1 import sidecar_service_pb2 as sidecar_pb

pytestmark = pytest.mark.timeout(60)

#: Liveness bound for "the sidecar exits" checks. The 1 s target is measured by
#: scripts/bench/bench_startup.py; a test only proves that it exits at all, promptly.
EXIT_WAIT_S = 5.0




async def test_handshake_token_and_getinfo(sidecar_cmd: SidecarCommand) -> None:
    async with await sidecar_cmd.launch() as sidecar:
        hs = sidecar.handshake
        assert hs.transport == "unix" and hs.protocol == 1 and hs.pid == sidecar.pid
        assert hs.token, "a generated token must be reported in the handshake"
        sock_dir = Path(hs.address).parent
        assert stat.S_IMODE(sock_dir.stat().st_mode) == 0o700
        info = await sidecar.client.get_info()
        assert info.version and list(info.protocol_versions) == [1]
        assert info.pid == sidecar.pid
        assert any(p.local for p in info.profiles)


async def test_game_chosen_token_is_not_echoed(sidecar_cmd: SidecarCommand) -> None:
    async with await sidecar_cmd.launch(token="chosen-by-the-game") as sidecar:
        assert sidecar.handshake.token is None
        assert (await sidecar.client.get_info()).pid == sidecar.pid


async def test_wrong_or_missing_token_is_unauthenticated(sidecar_cmd: SidecarCommand) -> None:
    async with await sidecar_cmd.launch(token="right") as sidecar:
        for token in ("wrong", None):
            client = SidecarClient(sidecar.handshake.target, token)
            try:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await client.get_info()
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
                assert error_reason(err.value) == "UNAUTHENTICATED"
                # Streams are guarded too, and the call never reaches the servicer.
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await client.open_session("s1")
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            finally:
                await client.close()
        # Nothing was created by the refused calls.
        info = await sidecar.client.get_info(include_stats=True)
        assert [s.session_id for s in info.stats] == []


async def test_health_without_token_and_reflection_with_it(sidecar_cmd: SidecarCommand) -> None:
    async with await sidecar_cmd.launch() as sidecar:
        async with grpc.aio.insecure_channel(sidecar.handshake.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "sidecar.v1.SessionService", "sidecar.v1.SidecarService"):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(sidecar.client.channel)
        ask = reflection_pb2.ServerReflectionRequest(list_services="")
        replies = [r async for r in refl.ServerReflectionInfo(iter([ask]))]
        names = {s.name for s in replies[0].list_services_response.service}
        assert {"sidecar.v1.SidecarService", "sidecar.v1.SessionService", "sidecar.v1.AgentService",
                "grpc.health.v1.Health"} <= names


async def test_tcp_loopback_listen(sidecar_cmd: SidecarCommand) -> None:
    async with await sidecar_cmd.launch(["--listen", "tcp://127.0.0.1:0"]) as sidecar:
        hs = sidecar.handshake
        assert hs.transport == "tcp" and hs.address.startswith("127.0.0.1:")
        assert int(hs.address.rsplit(":", 1)[1]) > 0
        assert (await sidecar.client.get_info()).pid == sidecar.pid


async def test_stdin_eof_exits_cleanly_and_removes_socket_dir(sidecar_cmd: SidecarCommand) -> None:
    sidecar = await sidecar_cmd.launch()
    sock_dir = Path(sidecar.handshake.address).parent
    assert sock_dir.exists()
    await sidecar.client.close()
    assert sidecar.proc.stdin is not None
    sidecar.proc.stdin.close()
    code = await asyncio.wait_for(sidecar.proc.wait(), EXIT_WAIT_S)
    assert code == 0
    assert not sock_dir.exists()
    # Nothing but the handshake ever reached stdout.
    assert sidecar.proc.stdout is not None
    assert await sidecar.proc.stdout.read() == b""


async def test_shutdown_rpc_drains_and_exits(sidecar_cmd: SidecarCommand) -> None:
    sidecar = await sidecar_cmd.launch()
    sock_dir = Path(sidecar.handshake.address).parent
    await sidecar.client.sidecar.Shutdown(sidecar_pb.ShutdownRequest(reason="test"))
    code = await asyncio.wait_for(sidecar.proc.wait(), EXIT_WAIT_S)
    assert code == 0 and not sock_dir.exists()
    await eventually(lambda: "shutdown requested" in sidecar.stderr_tail(), what="the shutdown is logged")
    await sidecar.close()


def test_missing_magic_exits_2_with_a_clear_message(sidecar_cmd: SidecarCommand) -> None:
    env = {k: v for k, v in sidecar_cmd.env.items() if k != "GAME_SIDECAR_MAGIC"}
    proc = subprocess.run(sidecar_cmd.argv(), env=env, capture_output=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"GAME_SIDECAR_MAGIC=game-sidecar-v1" in proc.stderr and b"--no-magic" in proc.stderr


def test_stderr_logs_are_json_lines(sidecar_cmd: SidecarCommand) -> None:
    env = dict(sidecar_cmd.env, GAME_SIDECAR_MAGIC="game-sidecar-v1")
    proc = subprocess.Popen(sidecar_cmd.argv(), env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdin is not None
    first = proc.stdout.readline()
    assert json.loads(first)["sidecar"] == "game-sidecar"
    proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.wait(timeout=EXIT_WAIT_S) == 0
    assert proc.stdout.read() == b""
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert lines, "expected some logs"
    for line in lines:
        doc = json.loads(line)
        assert {"ts", "level", "msg"} <= doc.keys()


PARENT = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    env = dict(os.environ, GAME_SIDECAR_MAGIC="game-sidecar-v1")
    child = subprocess.Popen([*json.loads(sys.argv[1]), *sys.argv[2:]], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = child.stdout.readline()
    sys.stdout.write(line.decode()); sys.stdout.flush()
    time.sleep(600)
    """
)


@pytest.mark.parametrize("extra", [[], ["--no-stdin-watch"]], ids=["stdin-and-parent", "parent-watch-only"])
def test_parent_killed_with_sigkill_takes_the_sidecar_along(extra: list[str], tmp_path: Path,
                                                           sidecar_cmd: SidecarCommand) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), json.dumps(sidecar_cmd.serve), *extra],
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=os.getcwd(), env=sidecar_cmd.env)
    assert parent.stdout is not None
    handshake = json.loads(parent.stdout.readline())
    pid = handshake["pid"]
    sock_dir = Path(handshake["address"]).parent
    assert process_alive(pid) and sock_dir.exists()
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    eventually_blocking(lambda: not process_alive(pid), EXIT_WAIT_S, what="the sidecar exits with its parent")
    assert not sock_dir.exists()


async def test_launcher_reports_exit_before_handshake() -> None:
    with pytest.raises(ExitedBeforeHandshake) as err:
        await SidecarProcess.launch(
            command=[sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(5)"])
    assert err.value.returncode == 5 and "boom" in err.value.stderr_tail
    assert not isinstance(err.value, StateDirLocked)  # only exit code 3 means that


async def test_launcher_reports_a_program_that_cannot_start(tmp_path: Path) -> None:
    """Not a bare OSError: a launch error like the others (C++: kSpawnFailed), naming
    the program, whether it is missing or not executable."""
    import errno

    missing = tmp_path / "no-such-sidecar"
    with pytest.raises(SpawnFailed) as err:
        await SidecarProcess.launch(command=[str(missing)])
    assert isinstance(err.value, LaunchError) and err.value.errno == errno.ENOENT
    assert err.value.command == str(missing) and str(missing) in str(err.value)
    assert isinstance(err.value.__cause__, FileNotFoundError)
    not_executable = tmp_path / "game-sidecar"
    not_executable.write_text("#!/bin/sh\n", encoding="utf-8")
    with pytest.raises(SpawnFailed) as denied:
        await SidecarProcess.launch(command=[str(not_executable)])
    assert denied.value.errno == errno.EACCES


async def test_launcher_reports_malformed_handshake() -> None:
    # A JSON object with a "sidecar" key is the handshake line; this one is another tool's.
    line = '{"sidecar": "other-tool", "protocol": 1}'
    with pytest.raises(MalformedHandshake) as err:
        await SidecarProcess.launch(command=[sys.executable, "-c",
                                             f"import sys, time; print({line!r}); sys.stdout.flush();"
                                             " sys.stderr.write('oops\\n'); time.sleep(30)"])
    assert err.value.line == line and "not a game-sidecar handshake" in str(err.value)


async def test_launcher_skips_log_lines_merged_into_stdout(sidecar_cmd: SidecarCommand) -> None:
    """docs/protocol.md §1: stderr merged into stdout (Unreal's CreateProc with one
    pipe) puts the sidecar's JSON log lines before its handshake; they are skipped,
    passed on as log lines, and the launch works."""
    lines: list[str] = []
    merged = ["/bin/sh", "-c", 'exec "$0" "$@" 2>&1', *sidecar_cmd.serve]
    async with await sidecar_cmd.launch(command=merged, on_stderr=lines.append) as sidecar:
        info = await sidecar.client.get_info()
        assert info.pid == sidecar.pid
    # "serving" is logged before the handshake is written: it came first on the pipe.
    serving = [line for line in lines if json.loads(line).get("msg") == "serving"] if lines else []
    assert serving, lines[:5]


async def test_launcher_gives_up_on_a_program_that_prints_no_handshake() -> None:
    """Past the bound (200 lines / 64 KiB) a program printing only other lines is no
    sidecar: refused at once, not at the timeout."""
    script = ("import json, time\n"
              "for i in range(300): print(json.dumps({'ts': 1.0, 'level': 'info', 'msg': f'line {i}'}), flush=True)\n"
              "time.sleep(30)\n")
    with pytest.raises(MalformedHandshake) as err:
        await SidecarProcess.launch(command=[sys.executable, "-c", script], timeout=60.0)
    assert "not a game-sidecar: no handshake line within the first 200 lines / 65536 bytes" in str(err.value)
    assert err.value.line == json.dumps({"ts": 1.0, "level": "info", "msg": "line 200"})


async def test_launcher_skips_a_few_non_json_lines_before_the_handshake(sidecar_cmd: SidecarCommand) -> None:
    """A plain text line (a loader's banner) and JSON log lines before it do not matter."""
    script = ("import os, sys\n"
              "print('banner: not json', flush=True)\n"
              "print('{\"ts\": 1.0, \"level\": \"info\", \"msg\": \"starting\"}', flush=True)\n"
              "os.execv(sys.argv[1], sys.argv[1:])\n")
    lines: list[str] = []
    command = [sys.executable, "-c", script, *sidecar_cmd.serve]
    async with await sidecar_cmd.launch(command=command, on_stderr=lines.append) as sidecar:
        assert (await sidecar.client.get_info()).pid == sidecar.pid
    assert lines[:2] == ["banner: not json", '{"ts": 1.0, "level": "info", "msg": "starting"}']


@pytest.mark.slow  # waits out the launcher's handshake timeout
async def test_launcher_times_out() -> None:
    with pytest.raises(HandshakeTimeout):
        await SidecarProcess.launch(command=[sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)


def test_a_bad_config_value_stops_the_sidecar_before_the_handshake(sidecar_cmd: SidecarCommand, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "sidecar.toml"
    config.write_text("[runs]\nmax_concurrent = 0\n")
    from sidecar.process_contract import MAGIC_ENV, MAGIC_VALUE

    env = {**sidecar_cmd.env, MAGIC_ENV: MAGIC_VALUE}  # as a game launches it
    proc = subprocess.run([*sidecar_cmd.argv(), "--config", str(config)], env=env, capture_output=True,
                          timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == b""  # no handshake
    assert f"config {config}: [runs] max_concurrent = 0: Expected `int` >= 1".encode() in proc.stderr


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_stop_signal_at_any_moment_of_start_up_ends_in_order(sidecar_cmd: SidecarCommand, tmp_path, signame) -> None:  # type: ignore[no-untyped-def]
    """Issue 31: a signal right after the handshake killed the sidecar by its default
    action 1 time in 5, leaving its socket folder. Sent at many points of start-up, from
    the first milliseconds to just after the handshake, each ends the process with exit 0
    and no socket folder left; a signal that lands before Python itself is up may still
    end it by default, and then nothing was created yet."""
    import signal as signals
    import time

    from sidecar.process_contract import MAGIC_ENV, MAGIC_VALUE

    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**sidecar_cmd.env, MAGIC_ENV: MAGIC_VALUE, "TMPDIR": str(temp)}
    for delay in (0.0, 0.05, 0.15, 0.3, 0.6, "handshake"):
        proc = subprocess.Popen(sidecar_cmd.argv("--no-stdin-watch"), env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        assert proc.stdout is not None
        if delay == "handshake":
            proc.stdout.readline()  # the handshake line: the signal follows at once
        else:
            time.sleep(float(delay))
        proc.send_signal(getattr(signals, signame))
        code = proc.wait(timeout=30)
        proc.stdout.close()
        # Before the interpreter has imported the sidecar (how long that takes depends on
        # the machine's load, so no delay is sure to be past it), the default action may
        # still end it (killed, or KeyboardInterrupt: exit 1), with nothing made yet; once
        # the handshake is out, every stop is orderly.
        before_handshake = delay != "handshake"
        assert code == 0 or (before_handshake and code in (-getattr(signals, signame), 1)), (delay, code)
        assert list(temp.iterdir()) == [], (delay, code, list(temp.iterdir()))
