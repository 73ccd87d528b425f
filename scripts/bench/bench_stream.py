#!/usr/bin/env python
"""Streaming overhead of the sidecar against a fake OpenAI-compatible server.

Three processes: the fake server (tests/fakes/openai_server.py, streaming
chunks at a fixed rate, each stamped with its CLOCK_MONOTONIC send time), the
real sidecar (launched like a game does, its profiles pointing at the fake
server), and this client. In the same run it
measures, at 1 and 64 concurrent streams:

- direct: an httpx SSE client calling the fake server itself (the baseline), and
  the same with aiohttp (the client the sidecar's sse transport uses: `_vs_aiohttp`);
- sidecar: gRPC `Run` calls, time to the first text event and per-chunk lag;
- the LiteLLM proxy (when `--proxy-bin` points at a `litellm` CLI from a venv
  with `litellm[proxy]`), measured the same way as direct.

Both transports are measured: profile "bench" (`transport = "litellm"`: litellm
streams the reply) and "bench_sse" (the default transport "auto", which is
"sse" for an OpenAI-compatible server at an api_base: the sidecar sends the
request and reads the SSE, no litellm); figures for the latter end in `_sse`. Then it probes larger
concurrency for `max_concurrent_streams_ok`. Prints one
JSON object. Usage: .venv/bin/python scripts/bench/bench_stream.py [--proxy-bin PATH]

`--trace-runs N` adds, per transport, N rounds at 1 stream: a direct aiohttp run, one
bare grpc.aio round trip to a server that does nothing (the floor,
scripts/bench/bench_grpc_floor.py), a sidecar run with its stage timestamps on
(sidecar/runtrace.py) and, with `--proxy-bin`, the direct client through the LiteLLM
proxy, so all of them see the same load. From those: `added_ttft_ms_p50`,
`floor_ms_p50`, `proxy_added_ttft_ms_p50` (the default transport), where the sidecar's
time goes stage by stage (`trace_<transport>`), and the screen's hold on a reply's
first word (`screen_hold_ms_p50`). `--trace-only` skips the rest.

`--load N` probes the concurrency levels of `--loaded-probe` again with N processes
spinning on the CPU (the machine busy): `max_concurrent_streams_ok_sse_loaded`. Under
load a level is dependable when no stream failed and the sidecar's token lag p99 is
within the coalescing window (+ 5 ms) of the direct client's at that level. Token lag is
of what follows a stream's first text (`token_lag_ms_p99`; `_with_first` counts the first
text too, which the screen holds for a chunk: that is the time to the first token's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import grpc
import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sidecar import runtrace  # noqa: E402
from sidecar.client import SidecarProcess  # noqa: E402
from sidecar.v1 import agent_service_pb2 as apb  # noqa: E402
from sidecar.v1 import state_pb2 as spb  # noqa: E402
from sidecar.v1 import types_pb2 as tpb  # noqa: E402

COALESCE_MS = 16.0
#: The API key everywhere: the fake server ignores it, the LiteLLM proxy uses it as its master key.
BENCH_KEY = "sk-" + "5eed" * 16
LAG_SLACK_MS = 5.0
FLOOR_METHOD = "/floor.Floor/First"  # scripts/bench/bench_grpc_floor.py


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def stamps_lag(text: str, now_ns: int) -> list[float]:
    return [(now_ns - int(tok[1:])) / 1e6 for tok in text.split() if tok.startswith("t") and tok[1:].isdigit()]


class Sample:
    def __init__(self) -> None:
        self.ttft: list[float] = []
        self.lag: list[float] = []
        #: The lag of what came after a stream's first text (its first text is the
        #: time to the first token's business, where the screen's hold on the first word is).
        self.steady_lag: list[float] = []
        self.errors = 0
        #: What failed, by kind (a gRPC status code, or the exception's type).
        self.kinds: dict[str, int] = {}

    def record_lag(self, text: str, now_ns: int, first: bool) -> None:
        lags = stamps_lag(text, now_ns)
        self.lag.extend(lags)
        if not first:
            self.steady_lag.extend(lags)

    def failed(self, exc: BaseException) -> None:
        self.errors += 1
        code = getattr(exc, "code", None)
        kind = str(code()) if callable(code) else type(exc).__name__
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


async def start_upstream(chunks: int, interval_ms: float) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "tests" / "fakes" / "openai_server.py"),
        "--chunks", str(chunks), "--interval-ms", str(interval_ms), "--stamp",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    url = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
    return proc, url


async def sse_stream(client: httpx.AsyncClient, url: str, model: str, sample: Sample) -> None:
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "Narrate."}]}
    start = time.monotonic()
    first = True
    try:
        async with client.stream("POST", url + "/chat/completions", json=body,
                                 headers={"Authorization": f"Bearer {BENCH_KEY}"}) as resp:
            if resp.status_code != 200:
                sample.errors += 1
                return
            async for line in resp.aiter_lines():
                first = _record_line(line, sample, start, first)
    except Exception:  # noqa: BLE001 - counted
        sample.errors += 1


def _record_line(line: str, sample: Sample, start: float, first: bool) -> bool:
    """One SSE line read by a direct baseline: records the first token's time and each
    token's lag; returns whether the first text is still to come."""
    if not line.startswith("data: ") or line == "data: [DONE]":
        return first
    chunk = json.loads(line[6:])
    choices = chunk.get("choices") or []
    text = (choices[0].get("delta") or {}).get("content") if choices else None
    if not text:
        return first
    now = time.monotonic_ns()
    if first:
        sample.ttft.append((time.monotonic() - start) * 1000)
    sample.record_lag(text, now, first)
    return False


async def sse_bench(url: str, model: str, streams: int, rounds: int) -> Sample:
    sample = Sample()
    limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=streams + 8)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        async def worker() -> None:
            for _ in range(rounds):
                await sse_stream(client, url, model, sample)

        await asyncio.gather(*(worker() for _ in range(streams)))
    return sample


async def aiohttp_stream(session: aiohttp.ClientSession, url: str, model: str, sample: Sample) -> None:
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "Narrate."}]}
    start = time.monotonic()
    first = True
    try:
        async with session.post(url + "/chat/completions", json=body,
                                headers={"Authorization": f"Bearer {BENCH_KEY}"}) as resp:
            if resp.status != 200:
                sample.errors += 1
                return
            async for raw in resp.content:
                line = raw.decode().strip()
                first = _record_line(line, sample, start, first)
    except Exception:  # noqa: BLE001 - counted
        sample.errors += 1


async def aiohttp_bench(url: str, model: str, streams: int, rounds: int) -> Sample:
    """The same direct baseline with aiohttp (the client the sse transport uses)."""
    sample = Sample()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=streams + 8)) as session:
        async def worker() -> None:
            for _ in range(rounds):
                await aiohttp_stream(session, url, model, sample)

        await asyncio.gather(*(worker() for _ in range(streams)))
    return sample


async def sidecar_bench(sidecar: SidecarProcess, streams: int, rounds: int, profile: str = "bench") -> Sample:
    sample = Sample()
    agent = sidecar.client.agent

    async def worker(actor: str) -> None:
        for _ in range(rounds):
            request = apb.RunRequest(session_id="bench", actor_id=actor, profile=profile,
                                     narrate=apb.NarrateInput(text="A bell rings."))
            start = time.monotonic()
            first = True
            try:
                async for response in agent.Run(request):
                    event = response.event
                    if event.HasField("text"):
                        now = time.monotonic_ns()
                        if first:
                            sample.ttft.append((time.monotonic() - start) * 1000)
                        sample.record_lag(event.text.text, now, first)
                        first = False
            except Exception as exc:  # noqa: BLE001 - counted
                sample.failed(exc)

    await asyncio.gather(*(worker(f"npc-{i}") for i in range(streams)))
    return sample


#: The stages of a traced run in the order a run reaches them: the client's own two
#: ends, the fake server's send time of the first text chunk, and the sidecar's marks.
TRACE_STAGES = ("client_send", "call", "parsed", "servicer", "submitted", "slot", "prompt", "send", "body",
                "upstream_sent", "headers", "first_line", "first_delta", "relayed", "emitted", "proto", "written",
                "client_received")


def first_stamp(text: str) -> int | None:
    """The fake server's send time (ns) of the first chunk in `text`."""
    for tok in text.split():
        if tok.startswith("t") and tok[1:].isdigit():
            return int(tok[1:])
    return None


def stage_durations(trace_file: Path, client: dict[str, dict[str, int]]
                    ) -> tuple[dict[str, list[float]], list[tuple[float, float]], list[float]]:
    """Each stage's duration per traced run (ms, keyed "before>after"); per run its
    time to the first token with the GC pause time inside it; and per run its time to
    the first token less the screen's hold (relayed -> emitted)."""
    durations: dict[str, list[float]] = {}
    unheld: list[float] = []
    # Per run: (time to first token, GC pause ms within it), to tell GC from other tails.
    gc_in_ttft: list[tuple[float, float]] = []
    for line in trace_file.read_text().splitlines():
        record = json.loads(line)
        marks = client.get(record["run_id"])
        if marks is None or "client_received" not in marks:
            continue
        t0, t1 = marks["client_send"], marks["client_received"]
        paused = sum(min(end, t1) - max(begin, t0) for _, begin, end in record.get("gc", []) if end > t0 and begin < t1)
        gc_in_ttft.append(((t1 - t0) / 1e6, paused / 1e6))
        merged = {**record["marks"], **marks}
        present = [s for s in TRACE_STAGES if s in merged]
        for before, after in zip(present, present[1:], strict=False):
            durations.setdefault(f"{before}>{after}", []).append((merged[after] - merged[before]) / 1e6)
        if "relayed" in merged and "emitted" in merged:
            unheld.append((t1 - t0 - (merged["emitted"] - merged["relayed"])) / 1e6)
    return durations, gc_in_ttft, unheld


async def traced_pairs(sidecar: SidecarProcess, upstream: str, profile: str, runs: int,
                       trace_file: Path, floor: Floor, proxy_url: str = "") -> dict[str, object]:
    """`runs` rounds at 1 stream, each a direct aiohttp run, one bare gRPC round trip
    (the floor), a traced sidecar run and, with a proxy, the same direct client through
    the LiteLLM proxy: the added times to the first token from runs that saw the same
    load, and the sidecar's time split into stages (p50/p99 of each stage, in ms)."""
    direct = Sample()
    side = Sample()
    via_proxy = Sample()
    floor_ms: list[float] = []
    client: dict[str, dict[str, int]] = {}
    agent = sidecar.client.agent
    async with aiohttp.ClientSession() as session:
        for i in range(runs):
            await aiohttp_stream(session, upstream, "ok", direct)
            floor_ms.append(await floor.round_trip())
            if proxy_url:
                await aiohttp_stream(session, proxy_url, "ok", via_proxy)
            run_id = f"trace-{profile}-{i}"
            request = apb.RunRequest(session_id="bench", actor_id="npc-0", profile=profile, run_id=run_id,
                                     narrate=apb.NarrateInput(text="A bell rings."))
            start = time.monotonic_ns()
            marks: dict[str, int] = {"client_send": start}
            try:
                async for response in agent.Run(request):
                    if response.event.HasField("text") and "client_received" not in marks:
                        now = time.monotonic_ns()
                        marks["client_received"] = now
                        side.ttft.append((now - start) / 1e6)
                        stamp = first_stamp(response.event.text.text)
                        if stamp is not None:
                            marks["upstream_sent"] = stamp
            except Exception as exc:  # noqa: BLE001 - counted
                side.failed(exc)
            client[run_id] = marks
    durations, gc_in_ttft, unheld = stage_durations(trace_file, client)
    proxied = {
        "proxy_ttft_ms_p50": round(pct(via_proxy.ttft, 0.5), 3),
        "proxy_added_ttft_ms_p50": round(pct(via_proxy.ttft, 0.5) - pct(direct.ttft, 0.5), 3),
        "proxy_added_ttft_ms_p99": round(pct(via_proxy.ttft, 0.99) - pct(direct.ttft, 0.99), 3),
        "proxy_errors": via_proxy.errors,
    } if proxy_url else {}
    hold = durations.get("relayed>emitted", [])
    return {
        "pairs": runs,
        "errors": direct.errors + side.errors,
        "floor_ms_p50": round(pct(floor_ms, 0.5), 3),
        "floor_ms_p99": round(pct(floor_ms, 0.99), 3),
        # The screen's hold (sidecar/llm/screen.py): a reply's first word waits for the
        # next chunk to show it is no role label ("Narrator:"); one chunk interval here.
        "screen_hold_ms_p50": round(pct(hold, 0.5), 3),
        "added_ttft_ms_p50_without_hold": round(pct(unheld, 0.5) - pct(direct.ttft, 0.5), 3),
        "added_ttft_ms_p99_without_hold": round(pct(unheld, 0.99) - pct(direct.ttft, 0.99), 3),
        **proxied,
        "direct_aiohttp_ttft_ms_p50": round(pct(direct.ttft, 0.5), 3),
        "direct_aiohttp_ttft_ms_p99": round(pct(direct.ttft, 0.99), 3),
        "sidecar_ttft_ms_p50": round(pct(side.ttft, 0.5), 3),
        "sidecar_ttft_ms_p99": round(pct(side.ttft, 0.99), 3),
        "added_ttft_ms_p50": round(pct(side.ttft, 0.5) - pct(direct.ttft, 0.5), 3),
        "added_ttft_ms_p99": round(pct(side.ttft, 0.99) - pct(direct.ttft, 0.99), 3),
        "stages_ms_p50_p99": {k: [round(pct(v, 0.5), 3), round(pct(v, 0.99), 3)] for k, v in durations.items()},
        # The slowest 2% of first tokens: how many had a GC pause in them, and its total.
        "slowest_2pct_with_gc": _gc_share(gc_in_ttft),
    }


def _gc_share(runs: list[tuple[float, float]]) -> dict[str, float]:
    slowest = sorted(runs, reverse=True)[: max(1, len(runs) // 50)]
    return {
        "runs": len(slowest),
        "with_gc_pause": sum(1 for _, paused in slowest if paused > 0),
        "gc_ms_max": round(max((paused for _, paused in slowest), default=0.0), 3),
        "ttft_ms_min": round(min((t for t, _ in slowest), default=0.0), 3),
        "runs_with_gc_pause_overall": sum(1 for _, paused in runs if paused > 0),
    }


class Floor:
    """One bare grpc.aio round trip, send -> first message, to a server of its own that
    does nothing (scripts/bench/bench_grpc_floor.py): the floor under any added time."""

    def __init__(self, proc: asyncio.subprocess.Process, path: str) -> None:
        self.proc = proc
        self.channel = grpc.aio.insecure_channel(f"unix:{path}")
        self._call = self.channel.unary_stream(FLOOR_METHOD)

    @classmethod
    async def start(cls, tmp: Path) -> Floor:
        path = str(tmp / "floor.sock")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "scripts" / "bench" / "bench_grpc_floor.py"), "--serve", "aio", "--path", path,
            stdout=asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        if (await proc.stdout.readline()).strip() != b"ready":
            raise RuntimeError("the floor server did not start")
        floor = cls(proc, path)
        for _ in range(200):  # warm-up, as bench_grpc_floor.py discards its first 200
            await floor.round_trip()
        return floor

    async def round_trip(self) -> float:
        start = time.perf_counter()
        async for _ in self._call(b"q"):
            return (time.perf_counter() - start) * 1000
        raise RuntimeError("the floor server sent nothing")

    async def close(self) -> None:
        await self.channel.close()
        self.proc.terminate()
        await self.proc.wait()


class Load:
    """`n` processes that spin on the CPU: the machine busy, as a game's own threads keep it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._procs: list[asyncio.subprocess.Process] = []

    async def __aenter__(self) -> Load:
        for _ in range(self.n):
            self._procs.append(await asyncio.create_subprocess_exec(
                sys.executable, "-c", "while True: pass"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for proc in self._procs:
            proc.kill()
            await proc.wait()
        self._procs.clear()


async def litellm_cpu_per_stream(upstream: str) -> float:
    """CPU milliseconds litellm alone spends on one stream of the fake server (in this
    process, reading it the way the sidecar does): the floor under the sidecar's cost."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    litellm.disable_streaming_logging = True
    start, n = 0.0, 20
    for i in range(n + 1):
        if i == 1:  # the first call pays litellm's lazy imports: not counted
            start = time.process_time()
        stream = await litellm.acompletion(
            model="openai/ok", api_base=upstream, api_key=BENCH_KEY, stream=True,
            stream_options={"include_usage": True}, messages=[{"role": "user", "content": "Narrate."}],
        )
        async for chunk in stream:
            if getattr(chunk, "usage", None):
                break
        await stream.aclose()
    return (time.process_time() - start) / n * 1000


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Disconnects:
    """Reads the fake server's "disconnect <ns>" lines all the time (so its pipe never fills)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.times: list[int] = []
        self._task = asyncio.create_task(self._read(proc))

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            parts = line.decode().split()
            if len(parts) == 2 and parts[0] == "disconnect":
                self.times.append(int(parts[1]))

    async def first_after(self, start_ns: int, timeout_s: float = 5.0) -> int:
        for _ in range(int(timeout_s / 0.0005)):
            later = [t for t in self.times if t >= start_ns]
            if later:
                return min(later)
            await asyncio.sleep(0.0005)
        raise TimeoutError("the fake server never saw the stream close")


async def cancel_to_close(sidecar: SidecarProcess, seen: Disconnects, runs: int, use_cancel_run: bool) -> list[float]:
    """Milliseconds from cancelling a streaming run (client cancel, or CancelRun) to the
    fake server seeing its HTTP stream closed."""
    delays = []
    for i in range(runs):
        run_id = f"cancel-{use_cancel_run}-{i}"
        request = apb.RunRequest(session_id="bench", actor_id="npc-0", profile="endless", run_id=run_id,
                                 narrate=apb.NarrateInput(text="Go on and on."))
        call = sidecar.client.agent.Run(request)
        texts = 0
        async for response in call:
            texts += response.event.HasField("text")
            if texts == 3:
                break
        start = time.monotonic_ns()
        if use_cancel_run:
            await sidecar.client.agent.CancelRun(apb.CancelRunRequest(run_id=run_id))
        else:
            call.cancel()
        delays.append((await seen.first_after(start) - start) / 1e6)
        call.cancel()
    return delays


async def start_proxy(proxy_bin: str, upstream: str, tmp: Path) -> tuple[asyncio.subprocess.Process, str] | None:
    cfg = tmp / "proxy.yaml"
    cfg.write_text(
        "model_list:\n"
        "  - model_name: ok\n"
        "    litellm_params:\n"
        "      model: openai/ok\n"
        f"      api_base: {upstream}\n"
        "      api_key: sk-bench\n"
    )
    port = 40000 + os.getpid() % 20000
    with (tmp / "proxy.log").open("wb") as log:  # the child keeps its own copy of the file
        proc = await asyncio.create_subprocess_exec(
            proxy_bin, "--config", str(cfg), "--port", str(port), "--host", "127.0.0.1", "--num_workers", "1",
            stdout=asyncio.subprocess.DEVNULL, stderr=log,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": BENCH_KEY},
        )
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient() as client:
        for _ in range(240):
            try:
                if (await client.get(url + "/health/liveliness")).status_code == 200:
                    return proc, url + "/v1"
            except httpx.HTTPError:
                pass
            if proc.returncode is not None:
                return None
            await asyncio.sleep(0.5)
    proc.kill()
    return None


async def probe(sidecar: SidecarProcess, upstream: str, profile: str, levels: str, proxy_url: str,
                loaded: bool = False) -> tuple[dict[str, object], int]:
    """Each concurrency level in `levels`, two rounds: the direct aiohttp client first (when
    the fake server and this client cannot keep the lag target themselves, neither can
    anything between), then the sidecar, then the proxy if there is one. A level is
    dependable when no stream failed and the token lag p99 is within the coalescing window
    (+ slack) of the target; with the machine `loaded`, of the direct client's own lag
    at that level (the lag the machine itself imposes). Returns the levels and the highest
    level that held with every level below it."""
    probes: dict[str, object] = {}
    best = previous = 0
    for streams in sorted(int(x) for x in levels.split(",") if x):
        direct = await aiohttp_bench(upstream, "ok", streams, 2)
        side = await sidecar_bench(sidecar, streams, 2, profile)
        lag99 = round(pct(side.steady_lag, 0.99), 3)
        direct99 = round(pct(direct.steady_lag, 0.99), 3)
        bound = COALESCE_MS + LAG_SLACK_MS + (direct99 if loaded else 0.0)
        ok = side.errors == 0 and len(side.ttft) == 2 * streams and lag99 <= bound
        level: dict[str, object] = {
            "errors": side.errors, "error_kinds": side.kinds, "token_lag_ms_p99": lag99,
            "token_lag_ms_p99_with_first": round(pct(side.lag, 0.99), 3),
            "ttft_ms_p50": round(pct(side.ttft, 0.5), 3),
            "ttft_ms_p99": round(pct(side.ttft, 0.99), 3), "ok": ok, "lag_bound_ms": round(bound, 3),
            "direct_aiohttp_errors": direct.errors, "direct_aiohttp_token_lag_ms_p99": direct99,
            "direct_aiohttp_ttft_ms_p50": round(pct(direct.ttft, 0.5), 3)}
        if proxy_url:
            via = await aiohttp_bench(proxy_url, "ok", streams, 2)
            level.update(proxy_errors=via.errors, proxy_token_lag_ms_p99=round(pct(via.steady_lag, 0.99), 3),
                         proxy_ttft_ms_p50=round(pct(via.ttft, 0.5), 3),
                         proxy_ok=via.errors == 0 and len(via.ttft) == 2 * streams
                         and pct(via.steady_lag, 0.99) <= bound)
        probes[str(streams)] = level
        if ok and best == previous:  # dependable up to here: every level below held too
            best = streams
        previous = streams
    return probes, best


async def main(args: argparse.Namespace, proxy_bin: str) -> None:
    upstream_proc, upstream = await start_upstream(args.chunks, args.interval_ms)
    disconnects = Disconnects(upstream_proc)
    tmp = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    trace_file = tmp / "trace.jsonl"
    transports = [t for t in args.transports.split(",") if t]
    levels = args.probe + ("," + args.loaded_probe if args.load else "")
    max_streams = max([64, *[int(x) for x in levels.split(",") if x]])
    (tmp / "sidecar.toml").write_text(
        'default_profile = "bench_sse"\nlog_level = "warning"\n'
        f"[runs]\nmax_concurrent = {max_streams + 8}\nmax_queue = {4 * max_streams}\ncoalesce_ms = {COALESCE_MS}\n"
        + (  # without a litellm profile the sidecar never imports litellm (as a game configured so)
            f'[profiles.bench]\nmodel = "openai/ok"\napi_base = "{upstream}"\napi_key_env = "BENCH_KEY"\n'
            'transport = "litellm"\nfirst_token_timeout_s = 20.0\nmax_retries = 0\n'
            if "litellm" in transports else "")
        +
        f'[profiles.endless]\nmodel = "openai/endless"\napi_base = "{upstream}"\napi_key_env = "BENCH_KEY"\n'
        f'[profiles.bench_sse]\nmodel = "openai/ok"\napi_base = "{upstream}"\napi_key_env = "BENCH_KEY"\n'
        "first_token_timeout_s = 20.0\nmax_retries = 0\n"  # transport "auto": sse for this profile
    )
    env = {**os.environ, "BENCH_KEY": "sk-bench", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if args.trace_runs:
        env[runtrace.ENV] = str(trace_file)
    sidecar = await SidecarProcess.launch(["--config", str(tmp / "sidecar.toml")], env=env)
    result: dict[str, object] = {
        "chunks_per_stream": args.chunks,
        "chunk_interval_ms": args.interval_ms,
        "coalesce_ms": COALESCE_MS,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    profiles = [(p, s) for p, s, t in (("bench", "", "litellm"), ("bench_sse", "_sse", "sse")) if t in transports]
    proxy = None
    try:
        client = sidecar.client
        await client.open_session("bench")
        await client.apply_deltas("bench", 0, [
            spb.DeltaOp(upsert_entity=spb.UpsertEntityOp(entity=spb.Entity(
                id=f"npc-{i}", kind=tpb.ENTITY_KIND_CHARACTER, name=f"Npc{i}")))
            for i in range(max_streams)
        ])
        for _ in range(300):
            if (await client.get_info()).llm_ready:
                break
            await asyncio.sleep(0.2)
        for profile, _ in profiles:
            await sidecar_bench(sidecar, 4, 3, profile)  # warm-up: connections, caches
        await sse_bench(upstream, "ok", 4, 3)
        proxy_url = ""
        if proxy_bin:
            started = await start_proxy(proxy_bin, upstream, tmp)
            if started is None:
                log = (tmp / "proxy.log").read_text(errors="replace").strip().splitlines()
                result["litellm_proxy_added_ttft_ms_p50"] = "proxy did not start: " + " | ".join(log[-3:])
            else:
                proxy, proxy_url = started
                await sse_bench(proxy_url, "ok", 2, 3)  # warm-up
        else:
            result["litellm_proxy_added_ttft_ms_p50"] = "not measured (no --proxy-bin)"
        if args.trace_runs:
            floor = await Floor.start(tmp)
            try:
                for profile, suffix in profiles:
                    result[f"trace{suffix or '_litellm'}"] = trace = await traced_pairs(
                        sidecar, upstream, profile, args.trace_runs, trace_file, floor,
                        proxy_url if profile == "bench_sse" else "")
                    if profile == "bench_sse":  # the headline figures: the default transport
                        for key in ("added_ttft_ms_p50", "added_ttft_ms_p99", "floor_ms_p50", "floor_ms_p99",
                                    "proxy_added_ttft_ms_p50"):
                            if key in trace:
                                result[key] = trace[key]
            finally:
                await floor.close()
        measured = profiles
        if args.trace_only:
            profiles = []

        for profile, suffix in profiles:
            for streams, rounds in ((1, args.single_runs), (64, args.rounds)):
                direct = await sse_bench(upstream, "ok", streams, rounds)
                direct_aio = await aiohttp_bench(upstream, "ok", streams, rounds)
                cpu0 = cpu_seconds(sidecar.pid)
                side = await sidecar_bench(sidecar, streams, rounds, profile)
                cpu_per_stream = (cpu_seconds(sidecar.pid) - cpu0) / max(1, streams * rounds) * 1000
                tag = f"{streams}{suffix}"
                result[f"direct_ttft_ms_p50_at_{tag}"] = round(pct(direct.ttft, 0.5), 3)
                result[f"sidecar_ttft_ms_p50_at_{tag}"] = round(pct(side.ttft, 0.5), 3)
                result[f"sidecar_added_ttft_ms_p50_at_{tag}"] = round(pct(side.ttft, 0.5) - pct(direct.ttft, 0.5), 3)
                result[f"sidecar_added_ttft_ms_p99_at_{tag}"] = round(pct(side.ttft, 0.99) - pct(direct.ttft, 0.99), 3)
                result[f"direct_aiohttp_ttft_ms_p50_at_{tag}"] = round(pct(direct_aio.ttft, 0.5), 3)
                result[f"sidecar_added_vs_aiohttp_ttft_ms_p50_at_{tag}"] = round(
                    pct(side.ttft, 0.5) - pct(direct_aio.ttft, 0.5), 3)
                result[f"sidecar_added_vs_aiohttp_ttft_ms_p99_at_{tag}"] = round(
                    pct(side.ttft, 0.99) - pct(direct_aio.ttft, 0.99), 3)
                result[f"direct_token_lag_ms_p99_at_{tag}"] = round(pct(direct.steady_lag, 0.99), 3)
                result[f"token_lag_ms_p50_at_{tag}"] = round(pct(side.steady_lag, 0.5), 3)
                result[f"token_lag_ms_p99_at_{tag}"] = round(pct(side.steady_lag, 0.99), 3)
                result[f"token_lag_ms_p99_with_first_at_{tag}"] = round(pct(side.lag, 0.99), 3)
                result[f"errors_at_{tag}"] = direct.errors + direct_aio.errors + side.errors
                result[f"samples_at_{tag}"] = len(side.ttft)
                result[f"sidecar_cpu_ms_per_stream_at_{tag}"] = round(cpu_per_stream, 2)
        result["direct_ttft_ms_p50"] = result.get("direct_ttft_ms_p50_at_1")
        for how, flag in (("client_cancel", False), ("cancel_run", True)) if profiles else ():
            delays = await cancel_to_close(sidecar, disconnects, 20, flag)
            result[f"{how}_to_upstream_close_ms_p50"] = round(pct(delays, 0.5), 2)
            result[f"{how}_to_upstream_close_ms_max"] = round(max(delays), 2)
        result["token_lag_ms_p99"] = result.get("token_lag_ms_p99_at_64")

        if proxy_url and profiles:
            direct = await sse_bench(upstream, "ok", 1, args.single_runs)
            via = await sse_bench(proxy_url, "ok", 1, args.single_runs)
            result["litellm_proxy_ttft_ms_p50"] = round(pct(via.ttft, 0.5), 3)
            result["litellm_proxy_added_ttft_ms_p50"] = round(pct(via.ttft, 0.5) - pct(direct.ttft, 0.5), 3)
            result["litellm_proxy_errors"] = via.errors

        for profile, suffix in profiles:
            lag_ok = result[f"token_lag_ms_p99_at_64{suffix}"] <= COALESCE_MS + LAG_SLACK_MS  # type: ignore[operator]
            result[f"probes{suffix}"], best = await probe(sidecar, upstream, profile, args.probe, proxy_url)
            # The first table's 64 streams count as a level too.
            held = result[f"errors_at_64{suffix}"] == 0 and lag_ok
            result[f"max_concurrent_streams_ok{suffix}"] = max(best, 64) if held else 0
        if args.load:
            async with Load(args.load):
                for profile, suffix in measured:
                    result[f"probes{suffix}_loaded"], best = await probe(
                        sidecar, upstream, profile, args.loaded_probe, proxy_url, loaded=True)
                    result[f"max_concurrent_streams_ok{suffix}_loaded"] = best
            result["load_processes"] = args.load
        if ("bench", "") in profiles:
            result["litellm_alone_cpu_ms_per_stream"] = round(await litellm_cpu_per_stream(upstream), 2)
        result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
        result["cpu_count"] = os.cpu_count()
        result["python"] = sys.version.split()[0]
    finally:
        if proxy is not None and proxy.returncode is None:
            proxy.kill()
            await proxy.wait()
        await sidecar.close()
        assert upstream_proc.stdin is not None
        upstream_proc.stdin.close()
        await upstream_proc.wait()
    print(json.dumps(result))


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--single-runs", type=int, default=60, help="sequential runs at 1 stream")
    parser.add_argument("--rounds", type=int, default=3, help="runs per stream at 64 and above")
    parser.add_argument("--probe", default="128,200,256", help="concurrency levels probed for the maximum")
    parser.add_argument("--proxy-bin", default="", help="the `litellm` CLI of a venv with litellm[proxy]")
    parser.add_argument("--transports", default="litellm,sse", help="which transports to measure")
    parser.add_argument("--trace-runs", type=int, default=0,
                        help="traced 1-stream runs per transport, interleaved with direct ones (stage breakdown)")
    parser.add_argument("--trace-only", action="store_true", help="only the traced pairs")
    parser.add_argument("--load", type=int, default=0,
                        help="then probe again with this many processes spinning on the CPU (the machine busy)")
    parser.add_argument("--loaded-probe", default="64,128,200", help="concurrency levels probed under --load")
    args = parser.parse_args()
    proxy_bin = args.proxy_bin if args.proxy_bin and Path(args.proxy_bin).exists() else ""

    asyncio.run(main(args, proxy_bin))


if __name__ == "__main__":
    cli()
