#!/usr/bin/env python3
"""The game thread's cost of the Unreal plugin's lifecycle, measured on the library it
calls (build/unreal/capi/libgame_sidecar.so, through ctypes) against the real sidecar
(the scripted model of clients/cpp/tests/sidecar_test.toml). Issue 32's figures:

- `deinitialize_*`: what `UGameSidecarSubsystem::Deinitialize` costs the game thread.
  It is `game_sidecar_release` (the stop finishes on the library's thread); before,
  it was `game_sidecar_destroy`, which waited for the orderly stop. Both are measured,
  with a healthy sidecar and with a hung one (SIGSTOP: deaf to stdin's end and to
  SIGTERM, so only the graces' end and SIGKILL stop it; the default graces, 3 s + 2 s).
- `queued_run_wait_*`: how long a run start waits when another session has a call
  stuck (the sidecar of tests/fakes/stalling_sidecar.py answers ApplyDeltas on
  "stalled-*" sessions after 3 s): from `game_sidecar_run_start` to its RUN_STARTED
  event in the drain. Before per-session lanes the run waited behind the stuck call.

Usage: .venv/bin/python scripts/bench/bench_unreal_lifecycle.py [--healthy 20] [--hung 3] [--runs 10]
Prints one JSON object. POSIX only (SIGSTOP).
"""

from __future__ import annotations

import argparse
import ctypes as C
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "build" / "unreal" / "capi" / "libgame_sidecar.so"
CONFIG = ROOT / "clients" / "cpp" / "tests" / "sidecar_test.toml"
STALLING = ROOT / "tests" / "fakes" / "stalling_sidecar.py"

EVENT_RUN, RUN_STARTED, RUN_FINISHED, RUN_ERROR = 3, 0, 6, 7


class Event(C.Structure):
    _fields_ = [
        ("kind", C.c_int),
        ("handle", C.c_uint64),
        ("result", C.c_void_p),
        ("run_kind", C.c_int),
        ("run_id", C.c_char_p),
        ("seq", C.c_uint64),
        ("text", C.c_char_p),
        ("sentence_end", C.c_int),
        ("mentions", C.c_void_p),
        ("mention_count", C.c_size_t),
        ("action_id", C.c_char_p),
        ("event_json", C.c_char_p),
        ("status", C.c_int),
    ]


CALLBACK = C.CFUNCTYPE(None, C.POINTER(Event), C.c_void_p)


class LaunchOptions(C.Structure):
    _fields_ = [
        ("struct_size", C.c_size_t),
        ("executable", C.c_char_p),
        ("args", C.POINTER(C.c_char_p)),
        ("arg_count", C.c_size_t),
        ("env", C.POINTER(C.c_char_p)),
        ("env_count", C.c_size_t),
        ("working_directory", C.c_char_p),
        ("handshake_timeout_ms", C.c_int32),
        ("exit_grace_ms", C.c_int32),
        ("terminate_grace_ms", C.c_int32),
        ("call_timeout_ms", C.c_int32),
        ("on_log", C.c_void_p),
        ("log_user_data", C.c_void_p),
        ("restart_max", C.c_int32),
        ("restart_window_ms", C.c_int32),
        ("restart_backoff_initial_ms", C.c_int32),
        ("restart_backoff_max_ms", C.c_int32),
    ]


class RunRequest(C.Structure):
    _fields_ = [
        ("struct_size", C.c_size_t),
        ("input", C.c_int),
        ("session_id", C.c_char_p),
        ("actor_id", C.c_char_p),
        ("text", C.c_char_p),
        ("speaker_id", C.c_char_p),
        ("options", C.c_void_p),
        ("option_count", C.c_size_t),
        ("run_id", C.c_char_p),
        ("profile", C.c_char_p),
    ]


def load(path: Path) -> C.CDLL:
    lib = C.CDLL(str(path))
    lib.game_sidecar_create.restype = C.c_void_p
    lib.game_sidecar_destroy.argtypes = [C.c_void_p]
    lib.game_sidecar_release.argtypes = [C.c_void_p]
    lib.game_sidecar_wait_released.argtypes = [C.c_int32]
    lib.game_sidecar_launch.argtypes = [C.c_void_p, C.POINTER(LaunchOptions)]
    lib.game_sidecar_launch.restype = C.c_void_p
    lib.game_sidecar_result_code.argtypes = [C.c_void_p]
    lib.game_sidecar_result_free.argtypes = [C.c_void_p]
    lib.game_sidecar_pid.argtypes = [C.c_void_p]
    lib.game_sidecar_call.argtypes = [C.c_void_p, C.c_char_p, C.c_char_p]
    lib.game_sidecar_call.restype = C.c_void_p
    lib.game_sidecar_call_async.argtypes = [C.c_void_p, C.c_char_p, C.c_char_p, CALLBACK, C.c_void_p]
    lib.game_sidecar_call_async.restype = C.c_uint64
    lib.game_sidecar_run_start.argtypes = [C.c_void_p, C.POINTER(RunRequest), CALLBACK, C.c_void_p]
    lib.game_sidecar_run_start.restype = C.c_uint64
    lib.game_sidecar_drain.argtypes = [C.c_void_p, C.c_size_t]
    lib.game_sidecar_wait_event.argtypes = [C.c_void_p, C.c_int32]
    return lib


class Sidecar:
    """One launched object; `args[0]` is the executable."""

    def __init__(self, lib: C.CDLL, args: list[str]) -> None:
        self.lib = lib
        self.gs = lib.game_sidecar_create()
        self._argv = (C.c_char_p * (len(args) - 1))(*[a.encode() for a in args[1:]])
        options = LaunchOptions(struct_size=C.sizeof(LaunchOptions), executable=args[0].encode())
        options.args = C.cast(self._argv, C.POINTER(C.c_char_p))
        options.arg_count = len(args) - 1
        result = lib.game_sidecar_launch(self.gs, C.byref(options))
        code = lib.game_sidecar_result_code(result)
        lib.game_sidecar_result_free(result)
        if code != 0:
            sys.exit(f"launch failed: code {code}")
        self.pid = lib.game_sidecar_pid(self.gs)

    def call(self, method: str, body: str) -> None:
        result = self.lib.game_sidecar_call(self.gs, method.encode(), body.encode())
        code = self.lib.game_sidecar_result_code(result)
        self.lib.game_sidecar_result_free(result)
        if code != 0:
            sys.exit(f"{method} failed: code {code}")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def summary(name: str, samples: list[float]) -> dict[str, float]:
    return {f"{name}_p50_ms": ms(statistics.median(samples)), f"{name}_max_ms": ms(max(samples))}


def deinitialize(lib: C.CDLL, exe: str, end: str, hung: bool, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        sidecar = Sidecar(lib, [exe, "serve", "--config", str(CONFIG)])
        sidecar.call("GetInfo", "")
        if hung:
            os.kill(sidecar.pid, signal.SIGSTOP)
        start = time.perf_counter()
        getattr(lib, end)(sidecar.gs)
        samples.append(time.perf_counter() - start)
        if lib.game_sidecar_wait_released(60000) != 0:
            sys.exit("a released sidecar did not finish stopping within 60 s")
    return samples


def queued_run_wait(lib: C.CDLL, count: int) -> list[float]:
    python = str(Path(sys.executable))
    sidecar = Sidecar(lib, [python, str(STALLING), "serve", "--config", str(CONFIG)])
    sidecar.call("OpenSession", '{"sessionId": "stalled-1"}')
    sidecar.call("OpenSession", '{"sessionId": "free-1"}')
    started: dict[int, float] = {}
    ended: set[int] = set()

    @CALLBACK
    def on_event(event: C.POINTER(Event), _: C.c_void_p) -> None:  # type: ignore[valid-type]
        e = event.contents
        if e.kind == EVENT_RUN and e.run_kind == RUN_STARTED:
            started[e.handle] = time.perf_counter()
        if e.kind != EVENT_RUN or e.run_kind in (RUN_FINISHED, RUN_ERROR):
            ended.add(e.handle)

    samples = []
    request = RunRequest(struct_size=C.sizeof(RunRequest), input=1, session_id=b"free-1", text=b"The gate opens.")
    body = b'{"sessionId": "stalled-1", "ops": [{"recordEvent": {"text": "a slow write"}}]}'
    for _ in range(count):
        stuck = lib.game_sidecar_call_async(sidecar.gs, b"ApplyDeltas", body, on_event, None)
        time.sleep(0.05)  # the stuck call is in flight
        t0 = time.perf_counter()
        run = lib.game_sidecar_run_start(sidecar.gs, C.byref(request), on_event, None)
        while run not in ended or stuck not in ended:
            lib.game_sidecar_drain(sidecar.gs, 0)
            lib.game_sidecar_wait_event(sidecar.gs, 5)
        samples.append(started[run] - t0)
    lib.game_sidecar_destroy(sidecar.gs)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--healthy", type=int, default=20, help="launches per healthy measurement")
    parser.add_argument("--hung", type=int, default=3, help="launches per hung measurement (about 5 s each)")
    parser.add_argument("--runs", type=int, default=10, help="runs queued behind a stuck call")
    parser.add_argument("--library", type=Path, default=LIB)
    parser.add_argument("--exe", default=str(ROOT / ".venv" / "bin" / "game-sidecar"))
    args = parser.parse_args()
    lib = load(args.library)
    out: dict[str, object] = {"library": str(args.library)}
    for name, end in (("deinitialize", "game_sidecar_release"), ("destroy", "game_sidecar_destroy")):
        out.update(summary(f"{name}_healthy", deinitialize(lib, args.exe, end, False, args.healthy)))
        out.update(summary(f"{name}_hung", deinitialize(lib, args.exe, end, True, args.hung)))
    out.update(summary("queued_run_wait", queued_run_wait(lib, args.runs)))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
