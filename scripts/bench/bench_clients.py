#!/usr/bin/env python
"""The three clients' benches in the same run, interleaved: each round runs the C++
bench, the C# bench (once per --csharp-env variant) and the Python bench back to back,
so a figure is compared with the others taken within the same minute on a shared
machine. Each round also times the C++ and C# launchers alone against the fake sidecar
script (clients/cpp/tests/fake_sidecar.sh, handshake at once): process spawn, pipes and
the handshake read, without the real sidecar's start-up. Prints one JSON line per bench
run (with the load average before it) and a p50 table per figure, C# against C++ in each
round.

Usage: .venv/bin/python scripts/bench/bench_clients.py [--rounds 3] [--launches 10]
           [--batches 1000] [--runs 10] [--csharp-env NAME=K=V,K=V ...] [--no-python]

Builds first (not timed): `cmake --build clients/cpp/build --target bench_client`
and `dotnet build -c Release clients/csharp/bench/BenchClient`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = str(ROOT / ".venv" / "bin" / "game-sidecar")
CONFIG = str(ROOT / "clients" / "cpp" / "bench" / "bench.toml")
ALLOC = str(ROOT / "clients" / "csharp" / "bench" / "alloc.toml")
FAKE = str(ROOT / "clients" / "cpp" / "tests" / "fake_sidecar.sh")
CPP = ROOT / "clients" / "cpp" / "build" / "bench_client"
CSHARP = ROOT / "clients" / "csharp" / "bench" / "BenchClient" / "bin" / "Release" / "net10.0" / "BenchClient.dll"
RAW = "_raw_stub"
FIGURES = [
    "launch_to_handshake_ms_p50",
    "fake_launch_to_handshake_ms_p50",
    "fake_stop_ms_p50",
    "apply_deltas_unary_us_p50",
    "apply_deltas_unary_us_p50_raw_stub",
    "apply_deltas_unary_cpu_us",
    "apply_deltas_unary_tp_items",
    "stream_deltas_us_p50",
    "stream_deltas_us_p50_raw_stub",
    "stream_deltas_cpu_us",
    "stream_deltas_tp_items",
    "run_first_token_ms_p50",
    "run_first_token_ms_p50_raw_stub",
    "heap_bytes_per_text_delta",
    "heap_bytes_per_text_delta_with_token",
]


def variant(spec: str) -> tuple[str, dict[str, str]]:
    """`name=K=V,K=V` -> (name, {K: V}); `name=` is the C# bench with no extra environment."""
    name, _, pairs = spec.partition("=")
    env = dict(p.split("=", 1) for p in pairs.split(",") if p)
    return name, env


def run(label: str, cmd: list[str], env: dict[str, str]) -> dict[str, object]:
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{label} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    result["client"], result["load1"] = label, round(load, 1)
    print(json.dumps(result), flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--csharp-env", action="append", default=[], metavar="NAME=K=V,...",
                        help="a C# variant with extra environment (repeatable); default: one, 'csharp='")
    parser.add_argument("--no-python", action="store_true")
    parser.add_argument("--launcher-launches", type=int, default=30, help="launches of the fake sidecar per client")
    args = parser.parse_args()
    counts = ["--launches", str(args.launches), "--batches", str(args.batches), "--runs", str(args.runs)]
    cpp = [str(CPP), EXE, CONFIG, *counts, "--crowd", "0"]
    fake = ["--launches", str(args.launcher_launches), "--launcher-only", "1"]
    clients: list[tuple[str, list[str], dict[str, str]]] = [("cpp", cpp, {})]
    launchers: dict[str, tuple[list[str], dict[str, str]]] = {"cpp": ([str(CPP), FAKE, "-", *fake], {})}
    for name, env in map(variant, args.csharp_env or ["csharp="]):
        clients.append((name, ["dotnet", str(CSHARP), EXE, CONFIG, ALLOC, *counts], env))
        launchers[name] = (["dotnet", str(CSHARP), FAKE, "-", "-", *fake], env)
    if not args.no_python:
        py = [sys.executable, str(ROOT / "scripts" / "bench" / "bench_client_py.py"), "--config", CONFIG, *counts]
        clients.append(("python", py, {}))
    rounds = []
    for _ in range(args.rounds):
        results = {label: run(label, cmd, env) for label, cmd, env in clients}
        for label, (cmd, env) in launchers.items():
            results[label].update({k: v for k, v in run(label, cmd, env).items() if k.startswith("fake_")})
        rounds.append(results)

    labels = [label for label, _, _ in clients]
    print("\n| figure | round | load | " + " | ".join(labels) + " | " +
          " | ".join(f"{n} vs cpp" for n in labels if n not in ("cpp", "python")) + " |")
    for fig in FIGURES:
        for i, r in enumerate(rounds, 1):
            cells = [r[n].get(fig) for n in labels]
            # A C# figure through the bare stub (`..._raw_stub`) is set against the C++ client's plain one.
            base = r["cpp"].get(fig.removesuffix(RAW))
            rel = []
            for n in labels:
                v = r[n].get(fig)
                if n in ("cpp", "python"):
                    continue
                ok = isinstance(v, (int, float)) and isinstance(base, (int, float)) and base
                rel.append(f"{(float(v) / float(base) - 1) * 100:+.0f}%" if ok else "")  # type: ignore[arg-type]
            text = " | ".join("" if c is None else str(c) for c in cells)
            print(f"| `{fig}` | {i} | {r['cpp']['load1']} | {text} | " + " | ".join(rel) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
