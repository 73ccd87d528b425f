#!/usr/bin/env python3
"""Crash recovery of each client (issue 20): kill -9 and SIGSTOP a supervised
sidecar while the client streams deltas and narrates; nothing acknowledged may
be lost or applied twice, recovery and hang detection must be quick, and the
game process must not grow. Results: docs/benchmarks.md, "Crash recovery".

    .venv/bin/python scripts/bench/bench_crash_recovery.py [--kills 50] [--hangs 10] [--seed 20]
        [--csharp-driver "dotnet run --project ..."] [--cpp-driver build/crash_driver]

The driver contract (one driver per client; the Python one is in this file,
`--driver python`; the C# and C++ ones are built by their clients). The
orchestrator runs each as a separate process:

    <driver command> --sidecar EXE --kills N --hangs N --seed S

EXE is the sidecar executable (launched as `EXE serve ...`). A driver does the
whole loop itself, with its client's own SidecarProcess / TrackedSession:
1. write a sidecar.toml with a scripted model (`default_profile = "fake"`,
   `[profiles.fake] model = "scripted/bench"`, `[state] max_events = 100000`) and
   launch the sidecar with `--config` and a fresh `--state-dir`, and a restart
   policy that allows every kill and holds the backoff at its initial 250 ms
   (max_restarts 1000 within 3600 s, backoff 250 ms up to 250 ms), so each kill
   times a first restart, not a backoff grown by the earlier kills;
2. track one session and apply a batch every 2 ms on top of the tracked revision
   (batch k, the one making revision k, upserts entity `e<k>` with field k=<k> and
   records the event "tick <k>"; delta ID "bench-<k>"), while narrating in a loop.
   It writes through the restarts (issue 34, docs/protocol.md §1, "Tracked writes
   across a restart"): at WRITE_KEPT it carries on (the tracker sends the batch and
   says when it lands), at WRITE_NOT_APPLIED it writes the same batch again once
   READY; it never resends a batch itself;
3. N times: wait a random 50-500 ms, kill -9 the current sidecar, and time from
   the kill to the first batch acknowledged by the restarted process;
4. N hangs: SIGSTOP the sidecar, time until the client reports it exited hung;
5. stop the sidecar, apply the acknowledged batches 1..R in a fresh sidecar
   without crashes, compare GetState (snapshots equal), and count acknowledged
   ops missing from the final world and ops applied twice (a "tick <k>" event
   more than once).
Then print ONE line of JSON (last line of stdout) with at least:
  {"client": "python"|"csharp"|"cpp", "kills": int, "acked_ops_lost": int,
   "ops_applied_twice": int, "recover_ms_p50": float, "recover_ms_max": float,
   "hang_detect_ms_max": float, "rss_mb_growth": float, "fds_growth": int,
   "rss_mb_samples": [float, ...]}
(rss_mb_samples: the RSS after each measured kill, the baseline first; the
orchestrator turns them into "rss_mb_trend", the verdict's figure: see rss_trend)
and, since issue 34, "writes_lost" (batches acknowledged, or kept and told to land,
that are not in the final world, plus kept ones that never landed),
"writes_applied_twice" (batches whose event is in the world more than once) and
"write_blocked_ms_max" (the longest a write call kept the game waiting during the
kills; target: no more than a restart, 3000 ms; "write_blocked_ms_max_hangs" is
the same during the hangs, where a write in flight waits for the hang verdict);
"writes_kept" and "writes_refused" count the two outcomes.
(extra fields are allowed: here gone_ms_p50/max, from the kill to the
SIDECAR_GONE error of the batch in flight; ready_ms_p50, from the kill to
READY; state_matches_reference;
acked_batches). rss/fds are the driver process's own, from after the 5th kill
(warm) to the end. A driver whose runtime is not warm by then kills more before
its baseline and reports how many as "warm_kills" (their recoveries count in
the figures): the C# one, 80 extra, because CoreCLR's tiered JIT recompiles a
method after 30 and again after 60 calls, and a restart's code runs once per
restart, so the process compiles code (and opens two descriptors per assembly
the optimized code reaches) until about the 65th restart; it reads RSS after an
aggressive collection and malloc_trim, which return the GC's free regions and
the JIT's freed scratch memory (its JSON has the RSS before the trim, the heap,
JIT code and the GC's committed size too). docs/benchmarks.md, "Crash recovery:
where the C# driver's memory went", has the figures. Targets: 0 lost, 0 twice,
p50 <= 1000 ms, max <= 3000 ms, hang detected within 5000 ms, no growth: no
descriptor more, and an RSS trend (rss_mb_trend, the least-squares slope of the
samples times the measured kills) of at most 1 MB; rss_mb_growth, the last
sample less the first, is printed too (malloc's arenas and a GC's free regions
move it by a megabyte or more either way, so a verdict on two readings was a
coin toss for the C# driver).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sidecar.client import (  # noqa: E402
    RestartOutcome,
    RestartPolicy,
    SidecarExit,
    SidecarGone,
    SidecarProcess,
    SidecarStatus,
    WriteKept,
    WriteNotApplied,
)
from sidecar.v1 import session_service_pb2 as spb  # noqa: E402
from sidecar.v1 import state_pb2 as pb  # noqa: E402
from sidecar.v1 import types_pb2 as tpb  # noqa: E402

CONFIG = ('default_profile = "fake"\n[profiles.fake]\nmodel = "scripted/bench"\nmax_retries = 0\n'
          "[profiles.fake.script]\nchunk_delay_ms = 5.0\n[state]\nmax_events = 100000\n")
OPS_PER_BATCH = 2
BENCH_POLICY = RestartPolicy(max_restarts=1000, window_s=3600.0, backoff_initial_s=0.25, backoff_max_s=0.25)
WARM_KILLS = 5
MAX_REVISIONS = 2_000_000
TARGETS = {"acked_ops_lost": 0, "ops_applied_twice": 0, "recover_ms_p50": 1000, "recover_ms_max": 3000,
           "hang_detect_ms_max": 5000, "rss_mb_trend": 1.0, "fds_growth": 0,
           "writes_lost": 0, "writes_applied_twice": 0, "write_blocked_ms_max": 3000}
#: The game writes a batch this often, through the restarts (the held-out drill's pace).
WRITE_GAP_S = 0.002


def batch(k: int) -> list[pb.DeltaOp]:
    fields = {"k": tpb.FieldValue(value=tpb.Value(int_value=k))}
    return [pb.DeltaOp(upsert_entity=pb.UpsertEntityOp(entity=pb.Entity(id=f"e{k}", fields=fields))),
            pb.DeltaOp(record_event=pb.RecordEventOp(event=pb.GameEvent(text=f"tick {k}", entity_ids=[f"e{k}"])))]


def footprint() -> tuple[float, int]:
    """(RSS in MB, open fds) of this process."""
    with open("/proc/self/status") as status:
        rss_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return rss_kb / 1024, len(os.listdir("/proc/self/fd"))


class PythonDriver:
    def __init__(self, exe: str, kills: int, hangs: int, seed: int, workdir: Path) -> None:
        self.exe, self.kills, self.hangs, self.rng = exe, kills, hangs, random.Random(seed)
        self.workdir = workdir
        self.config = workdir / "sidecar.toml"
        self.config.write_text(CONFIG)
        # One flag per revision, allocated up front: the driver's own bookkeeping must
        # not grow the footprint that is measured.
        self.acked = bytearray(MAX_REVISIONS)
        self.killed_pid = 0
        self.killed_at = 0.0
        self.recovered = asyncio.Event()
        self.recover_ms: list[float] = []
        self.gone_ms: list[float] = []
        self.ready_ms: list[float] = []
        self.hung_exits: list[tuple[float, SidecarExit]] = []
        self.hung_seen = asyncio.Event()
        self.acked_more = asyncio.Event()
        #: Batches kept through a restart (WriteKept), and those of them that landed:
        #: each must (counts, not the futures: the driver's own memory is measured).
        self.kept = 0
        self.landed = 0
        self.ready_due = False
        self.refused = 0
        self.blocked_ms = 0.0
        self.blocked_hang_ms = 0.0
        self.hanging = False
        self.done = False
        #: RSS (MB) after each kill from the baseline on: the trend the verdict reads.
        self.rss_samples: list[float] = []

    async def launch(self, args: list[str], restart: RestartPolicy | None) -> SidecarProcess:
        return await SidecarProcess.launch(["--config", str(self.config), *args], command=[self.exe, "serve"],
                                           restart=restart, timeout=60.0)

    async def run(self) -> dict[str, object]:
        sidecar = await self.launch(["--state-dir", str(self.workdir / "state")], BENCH_POLICY)
        ready = asyncio.Event()
        ready.set()
        sidecar.on_status(lambda s: self._on_status(s, ready))
        sidecar.on_exit(self._on_exit)
        sidecar.on_restart(self._on_restart)
        tracked = await sidecar.client.track("bench")
        game = asyncio.create_task(self._game(sidecar, tracked, ready))
        narrator = asyncio.create_task(self._narrate(sidecar, ready))
        baseline = footprint()
        hang_ms: list[float] = []
        for n in range(self.kills):
            await ready.wait()
            await asyncio.sleep(self.rng.uniform(0.05, 0.5))
            self.recovered.clear()
            self.killed_pid, self.killed_at = sidecar.pid, time.perf_counter()
            self.ready_due = True
            os.kill(self.killed_pid, signal.SIGKILL)
            await asyncio.wait_for(self.recovered.wait(), 60.0)
            if n + 1 == WARM_KILLS:
                baseline = footprint()
            if n + 1 >= WARM_KILLS:
                self.rss_samples.append(footprint()[0])
        self.hanging = True
        for _ in range(self.hangs):
            await ready.wait()
            await asyncio.sleep(self.rng.uniform(0.05, 0.5))
            self.hung_seen.clear()
            started = time.perf_counter()
            os.kill(sidecar.pid, signal.SIGSTOP)
            await asyncio.wait_for(self.hung_seen.wait(), 60.0)
            hang_ms.append((self.hung_exits[-1][0] - started) * 1000)
        await ready.wait()
        self.acked_more.clear()
        await asyncio.wait_for(self.acked_more.wait(), 60.0)  # one more batch on the last process
        end = footprint()
        self.done = True
        await asyncio.gather(game, narrator, return_exceptions=True)
        state = await sidecar.client.sessions.GetState(spb.GetStateRequest(session_id="bench"))
        await sidecar.stop()
        reference = await self._reference(state.revision)
        return self._report(state, reference, hang_ms, baseline, end)

    def _on_status(self, status: SidecarStatus, ready: asyncio.Event) -> None:
        if status is not SidecarStatus.READY:
            ready.clear()
            return
        ready.set()
        if self.ready_due:  # kept batches land before READY: this is not the recovery
            self.ready_due = False
            self.ready_ms.append((time.perf_counter() - self.killed_at) * 1000)

    def _on_exit(self, exit: SidecarExit) -> None:
        if exit.hung:
            self.hung_exits.append((time.perf_counter(), exit))
            self.hung_seen.set()

    def _on_restart(self, outcome: RestartOutcome) -> None:
        pass  # each kept batch's `landed` says when it is in (_landed)

    async def _game(self, sidecar: SidecarProcess, tracked: object, ready: asyncio.Event) -> None:
        """Writes batch after batch, every WRITE_GAP_S, through the restarts (issue 34): at
        WriteKept it carries on (the tracker sends it), at WriteNotApplied it writes the
        batch again once READY; it never resends a batch itself."""
        from sidecar.client import TrackedSession

        assert isinstance(tracked, TrackedSession)
        k = 0
        while not self.done:
            k += 1
            pid, started = sidecar.pid, time.perf_counter()
            try:
                await tracked.apply(batch(k), delta_id=f"bench-{k}")
            except WriteKept as kept:
                self._gone_seen()
                self.kept += 1
                kept.landed.add_done_callback(lambda landed, k=k: self._landed(k, landed))
            except WriteNotApplied:
                self.refused += 1
                k -= 1  # not in the session: the same batch again, once it can be
                await ready.wait()
            except SidecarGone:  # no restart follows: cannot happen under BENCH_POLICY
                raise
            else:
                self._acked(k, pid != self.killed_pid)
            blocked = (time.perf_counter() - started) * 1000
            if self.hanging:  # a write in flight to a stopped sidecar waits for the hang verdict
                self.blocked_hang_ms = max(self.blocked_hang_ms, blocked)
            else:
                self.blocked_ms = max(self.blocked_ms, blocked)
            await asyncio.sleep(WRITE_GAP_S)

    def _gone_seen(self) -> None:
        if self.killed_at and not self.recovered.is_set() and len(self.gone_ms) < len(self.recover_ms) + 1:
            self.gone_ms.append((time.perf_counter() - self.killed_at) * 1000)

    def _landed(self, k: int, landed: asyncio.Future[object]) -> None:
        if not landed.cancelled() and landed.exception() is None:
            self.landed += 1
            self._acked(k, True)

    def _acked(self, k: int, by_a_new_process: bool) -> None:
        self.acked[k] = 1
        self.acked_more.set()
        if by_a_new_process and self.killed_at and not self.recovered.is_set():
            self.recover_ms.append((time.perf_counter() - self.killed_at) * 1000)
            self.recovered.set()

    async def _narrate(self, sidecar: SidecarProcess, ready: asyncio.Event) -> None:
        while not self.done:
            try:
                async for _ in sidecar.client.narrate("bench", "The bell rings."):
                    pass
            except SidecarGone:
                await ready.wait()

    async def _reference(self, revision: int) -> spb.GetStateResponse:
        """Batches 1..revision applied in a fresh sidecar that never crashed."""
        async with await self.launch([], None) as sidecar:
            await sidecar.client.open_session("bench")
            for k in range(1, revision + 1):
                await sidecar.client.apply_deltas("bench", k - 1, batch(k))
            reply: spb.GetStateResponse = await sidecar.client.sessions.GetState(
                spb.GetStateRequest(session_id="bench"))
            return reply

    def _report(self, state: spb.GetStateResponse, reference: spb.GetStateResponse, hang_ms: list[float],
                baseline: tuple[float, int], end: tuple[float, int]) -> dict[str, object]:
        entities = {e.id: e for e in state.snapshot.entities}
        acked = [k for k, flag in enumerate(self.acked) if flag]
        lost = sum(1 for k in acked if entities.get(f"e{k}") is None
                   or entities[f"e{k}"].fields["k"].value.int_value != k)
        # A kept batch that never landed is lost too (the game was told it would be sent).
        never_landed = self.kept - self.landed
        ticks: dict[str, int] = {}
        for event in state.snapshot.events:
            ticks[event.text] = ticks.get(event.text, 0) + 1
        twice = sum(n - 1 for n in ticks.values() if n > 1)
        return {
            "client": "python", "kills": len(self.recover_ms), "acked_ops_lost": lost * OPS_PER_BATCH,
            "ops_applied_twice": twice * OPS_PER_BATCH,
            "recover_ms_p50": round(statistics.median(self.recover_ms), 1),
            "recover_ms_max": round(max(self.recover_ms), 1),
            "hang_detect_ms_max": round(max(hang_ms), 1) if hang_ms else None,
            "rss_mb_growth": round(end[0] - baseline[0], 2), "fds_growth": end[1] - baseline[1],
            "ready_ms_p50": round(statistics.median(self.ready_ms), 1) if self.ready_ms else None,
            "gone_ms_p50": round(statistics.median(self.gone_ms), 1) if self.gone_ms else None,
            "gone_ms_max": round(max(self.gone_ms), 1) if self.gone_ms else None,
            "state_matches_reference": state.revision == reference.revision and state.snapshot == reference.snapshot,
            "acked_batches": len(acked), "hangs": len(hang_ms),
            "writes_lost": lost + never_landed, "writes_applied_twice": twice,
            "write_blocked_ms_max": round(self.blocked_ms, 1),
            "write_blocked_ms_max_hangs": round(self.blocked_hang_ms, 1), "writes_kept": self.kept,
            "writes_refused": self.refused,
            "rss_mb_samples": [round(v, 2) for v in self.rss_samples],
        }


def default_sidecar() -> str:
    return str(Path(sys.executable).with_name("game-sidecar"))


def run_driver(command: list[str], args: argparse.Namespace) -> dict[str, object]:
    argv = [*command, "--sidecar", args.sidecar, "--kills", str(args.kills), "--hangs", str(args.hangs),
            "--seed", str(args.seed)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"client": command[0], "error": f"exit {done.returncode}: {done.stderr[-2000:]}"}
    result: dict[str, object] = json.loads(lines[-1])
    return result


def rss_trend(result: dict[str, object]) -> float | None:
    """RSS growth across the measured kills as a trend: the least-squares slope of the
    driver's per-kill samples times the kills between the first and the last. A leak
    grows by the same amount each restart, so the slope finds it whatever the noise;
    two readings alone swing by a megabyte or more as malloc's arenas and a GC's free
    regions move (docs/benchmarks.md, "Crash recovery: where the C# driver's memory
    went"). Without samples (an older driver): rss_mb_growth."""
    samples = result.get("rss_mb_samples")
    if isinstance(samples, list) and len(samples) >= 3 and all(isinstance(v, int | float) for v in samples):
        slope = statistics.linear_regression(range(len(samples)), samples).slope
        return round(slope * (len(samples) - 1), 2)
    growth = result.get("rss_mb_growth")
    return float(growth) if isinstance(growth, int | float) else None


def verdict(result: dict[str, object]) -> str:
    missed = []
    for key, limit in TARGETS.items():
        value = result.get(key)
        if not isinstance(value, int | float) or value > limit:
            missed.append(key)
    return "all targets met" if not missed else "missed: " + ", ".join(missed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--hangs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--sidecar", default=default_sidecar(), help="the sidecar executable (EXE serve ...)")
    parser.add_argument("--csharp-driver", help="command of the C# driver (the contract above)")
    parser.add_argument("--cpp-driver", help="command of the C++ driver (the contract above)")
    parser.add_argument("--driver", choices=["python"], help="run only the Python driver and print its JSON")
    args = parser.parse_args()
    if args.driver == "python":
        with tempfile.TemporaryDirectory(prefix="bench-crash-") as tmp:
            driver = PythonDriver(args.sidecar, args.kills, args.hangs, args.seed, Path(tmp))
            print(json.dumps(asyncio.run(driver.run())), flush=True)
        return 0
    drivers = [("python", [sys.executable, str(Path(__file__).resolve()), "--driver", "python"])]
    for name, command in (("csharp", args.csharp_driver), ("cpp", args.cpp_driver)):
        if command:
            drivers.append((name, shlex.split(command)))
    failed = False
    for name, command in drivers:
        result = run_driver(command, args)
        result["rss_mb_trend"] = rss_trend(result)
        samples = result.pop("rss_mb_samples", None)  # the trend stands for them on the line
        result["rss_samples"] = len(samples) if isinstance(samples, list) else 0
        print(json.dumps(result), flush=True)
        text = verdict(result)
        failed |= text != "all targets met"
        print(f"# {name}: {text}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
