// BenchClient: figures for the C# client against the real sidecar, printed as one
// JSON object; the same workload as clients/cpp/bench/bench_client.cpp (launches,
// unary ApplyDeltas vs StreamDeltas, scripted runs), plus the heap bytes the
// process allocates per received TextDelta.
//
//   BenchClient SIDECAR_EXE CONFIG_TOML ALLOC_TOML [--launches N] [--batches N] [--runs N]
//               [--warmup-seconds S] [--alloc-sampled-runs N] [--no-deadline]
//   BenchClient clients/cpp/tests/fake_sidecar.sh - - --launches N --launcher-only 1
//   BenchClient SIDECAR_EXE CONFIG_TOML - --probe CALLS_PER_BLOCK ROUNDS   (Probe.cs)
//
// --launcher-only 1: the launcher alone, against the fake sidecar script started with
// "until-eof" (handshake at once, exit on stdin EOF), as the C++ bench does it.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Google.Protobuf;
using GameSidecar.Client;
using GameSidecar.V1;

if (args.Length < 3) return Fail("usage: BenchClient SIDECAR_EXE CONFIG_TOML ALLOC_TOML [--launches N] [--batches N] [--runs N] [--warmup-seconds S] [--alloc-sampled-runs N] [--no-deadline]");
int launches = 5, batches = 500, runs = 5;
var deadline = true;
double warmupSeconds = 3;
var sampledRuns = 100;
var launcherOnly = false;
for (var i = 3; i < args.Length; i++)
{
    if (args[i] == "--no-deadline") deadline = false; // baseline: unary calls without grpc-timeout
    if (i + 1 >= args.Length) continue;
    if (args[i] == "--launches") launches = int.Parse(args[i + 1]);
    if (args[i] == "--batches") batches = int.Parse(args[i + 1]);
    if (args[i] == "--runs") runs = int.Parse(args[i + 1]);
    if (args[i] == "--launcher-only") launcherOnly = args[i + 1] == "1";
    if (args[i] == "--alloc-sampled-runs") sampledRuns = int.Parse(args[i + 1]);
    if (args[i] == "--warmup-seconds") warmupSeconds = double.Parse(args[i + 1], CultureInfo.InvariantCulture);
}
string exe = args[0], config = args[1], allocConfig = args[2];
SidecarProcessOptions Options(string cfg) => new SidecarProcessOptions
{
    Executable = exe,
    Arguments = new List<string> { "serve", "--config", cfg },
    HandshakeTimeout = TimeSpan.FromSeconds(30),
    ExitGrace = TimeSpan.FromSeconds(5),
    Client = new SidecarClientOptions { CallTimeout = deadline ? TimeSpan.FromSeconds(30) : (TimeSpan?)null },
};
var probeAt = Array.IndexOf(args, "--probe");
if (probeAt > 0) return await Probe.RunAsync(Options(config), int.Parse(args[probeAt + 1]), int.Parse(args[probeAt + 2]));
double Ms(long ticks) => ticks * 1000.0 / Stopwatch.Frequency;

if (launcherOnly)
{
    var hsMs = new List<double>();
    var endMs = new List<double>();
    for (var i = 0; i < launches; i++)
    {
        var o = Options(config);
        o.Arguments = new List<string> { "until-eof" };
        var t0 = Stopwatch.GetTimestamp();
        var p = await SidecarProcess.LaunchAsync(o);
        var t1 = Stopwatch.GetTimestamp();
        await p.StopAsync();
        hsMs.Add(Ms(t1 - t0));
        endMs.Add(Ms(Stopwatch.GetTimestamp() - t1));
    }
    Console.WriteLine("{\"bench\":\"csharp_launcher\"," + $"\"launches\":{launches}," +
        J("fake_launch_to_handshake_ms_p50", Pct(hsMs, 0.5), "0.00") + "," + J("fake_stop_ms_p50", Pct(endMs, 0.5), "0.00") + "}");
    return 0;
}

// Launch -> handshake, and Stop (stdin EOF -> reaped).
var launchMs = new List<double>();
var firstCallMs = new List<double>();
var stopMs = new List<double>();
for (var i = 0; i < launches; i++)
{
    var t0 = Stopwatch.GetTimestamp();
    var p = await SidecarProcess.LaunchAsync(Options(config));
    var t1 = Stopwatch.GetTimestamp();
    await p.Client.GetInfoAsync();
    var t2 = Stopwatch.GetTimestamp();
    await p.StopAsync();
    var t3 = Stopwatch.GetTimestamp();
    launchMs.Add(Ms(t1 - t0));
    firstCallMs.Add(Ms(t2 - t0));
    stopMs.Add(Ms(t3 - t2));
}

await using var sidecar = await SidecarProcess.LaunchAsync(Options(config));
var client = sidecar.Client;
await client.OpenSessionAsync("bench");

// Warm-up, not measured: .NET starts methods as unoptimized tier-0 code and
// recompiles hot ones on a background thread (tier 1, with PGO) only after a quiet
// spell with no new tier-0 code; on a loaded 2-core machine 200 calls left the
// recompilation running into the measured loop (its thread took ~20% of the CPU
// under perf). So: warm both paths for a fixed time, then wait for the JIT to settle.
// A game reaches this steady state in its first seconds.
long rev = 0;
var warmup = 0;
var warmUntil = Stopwatch.GetTimestamp() + (long)(warmupSeconds * Stopwatch.Frequency);
await using (var warm = client.StreamDeltas())
{
    while (Stopwatch.GetTimestamp() < warmUntil)
    {
        rev = (await client.ApplyDeltasAsync("bench", rev, new[] { Fact(warmup) }, "wu" + warmup)).Revision;
        var req = new StreamDeltasRequest { SessionId = "bench", BaseRevision = rev, DeltaId = "ws" + warmup };
        req.Ops.Add(Fact(warmup));
        rev = (await warm.ApplyAsync(req)).Revision;
        warmup++;
    }
    await warm.CompleteAsync();
}
await Task.Delay(TimeSpan.FromSeconds(1));

// Unary ApplyDeltas, one op per batch (the per-tick case). Next to the latency, the
// client's CPU per call (this process, all threads), as the C++ bench reports it: on a
// machine shared with the sidecar, CPU the client burns while it waits delays the server.
var unaryUs = new List<double>();
var unaryCpu = CpuUs();
var unaryItems = ThreadPool.CompletedWorkItemCount;
for (var i = 0; i < batches; i++)
{
    var ops = new[] { Fact(i) };
    var t0 = Stopwatch.GetTimestamp();
    var r = await client.ApplyDeltasAsync("bench", rev, ops, "u" + i);
    unaryUs.Add(Ms(Stopwatch.GetTimestamp() - t0) * 1000);
    rev = r.Revision;
}
var unaryCpuPerCall = (CpuUs() - unaryCpu) / Math.Max(1, batches);
// Thread-pool work items run per call (all of them Grpc.Net.Client's and System.Net.Http's:
// Probe.cs shows the library adds none); each may wake a thread that then spins.
var unaryItemsPerCall = (ThreadPool.CompletedWorkItemCount - unaryItems) / (double)Math.Max(1, batches);

// The same batches over one StreamDeltas stream, one at a time.
var streamUs = new List<double>();
double streamCpuPerCall, streamItemsPerCall;
await using (var stream = client.StreamDeltas())
{
    var streamCpu = CpuUs();
    var streamItems = ThreadPool.CompletedWorkItemCount;
    for (var i = 0; i < batches; i++)
    {
        var req = new StreamDeltasRequest { SessionId = "bench", BaseRevision = rev, DeltaId = "s" + i };
        req.Ops.Add(Fact(i));
        var t0 = Stopwatch.GetTimestamp();
        var r = await stream.ApplyAsync(req);
        streamUs.Add(Ms(Stopwatch.GetTimestamp() - t0) * 1000);
        rev = r.Revision;
    }
    streamCpuPerCall = (CpuUs() - streamCpu) / Math.Max(1, batches);
    streamItemsPerCall = (ThreadPool.CompletedWorkItemCount - streamItems) / (double)Math.Max(1, batches);
    await stream.CompleteAsync();
}

// Scripted runs: the first pays for the model layer's background import.
var ttftMs = new List<double>();
var totalMs = new List<double>();
double coldTtft = 0;
for (var i = 0; i <= runs; i++)
{
    var req = new RunRequest { SessionId = "bench", Narrate = new NarrateInput { Text = "The gate opens." } };
    double first = -1;
    var t0 = Stopwatch.GetTimestamp();
    await foreach (var e in client.Run(req))
    {
        if (e.KindCase == RunEvent.KindOneofCase.Text && first < 0) first = Ms(Stopwatch.GetTimestamp() - t0);
    }
    var total = Ms(Stopwatch.GetTimestamp() - t0);
    if (first < 0) return Fail("run streamed no text");
    if (i == 0) coldTtft = first;
    else
    {
        ttftMs.Add(first);
        totalMs.Add(total);
    }
}

// The same three loops through the bare generated stub (RawStub.cs), after the library's.
var (rawUnaryUs, rawRev) = await RawStub.UnaryAsync(client, "bench", rev, batches);
var (rawStreamUs, _) = await RawStub.StreamAsync(client, "bench", rawRev, batches);
var rawTtftMs = await RawStub.FirstTokenAsync(client, "bench", runs);

// Heap bytes per TextDelta (Allocations.cs): the library's Run loop, the bare stub's,
// the message parse alone, and AllocationTick samples by owner over `sampledRuns` runs.
var alloc = await Allocations.MeasureAsync(Options(allocConfig), sampledRuns);

Console.WriteLine("{" + string.Join(",", new[]
{
    "\"bench\":\"csharp_client\"",
    $"\"launches\":{launches}",
    J("launch_to_handshake_ms_p50", Pct(launchMs, 0.5)), J("launch_to_handshake_ms_max", Pct(launchMs, 1.0)),
    "\"handshake_target_ms\":500",
    J("launch_to_first_call_ms_p50", Pct(firstCallMs, 0.5)), J("stop_ms_p50", Pct(stopMs, 0.5)),
    $"\"batches\":{batches}", $"\"warmup_batches\":{warmup}", J("warmup_seconds", warmupSeconds), $"\"unary_deadline\":{(deadline ? "true" : "false")}",
    J("apply_deltas_unary_us_p50", Pct(unaryUs, 0.5), "0"), J("apply_deltas_unary_us_p99", Pct(unaryUs, 0.99), "0"),
    J("stream_deltas_us_p50", Pct(streamUs, 0.5), "0"), J("stream_deltas_us_p99", Pct(streamUs, 0.99), "0"),
    J("apply_deltas_unary_us_p50_raw_stub", Pct(rawUnaryUs, 0.5), "0"), J("stream_deltas_us_p50_raw_stub", Pct(rawStreamUs, 0.5), "0"),
    J("stream_vs_unary_p50", Pct(streamUs, 0.5) / Math.Max(1.0, Pct(unaryUs, 0.5)), "0.00"),
    J("apply_deltas_unary_cpu_us", unaryCpuPerCall, "0"), J("stream_deltas_cpu_us", streamCpuPerCall, "0"),
    J("apply_deltas_unary_tp_items", unaryItemsPerCall, "0.0"), J("stream_deltas_tp_items", streamItemsPerCall, "0.0"),
    $"\"runtime\":\"{Runtime()}\"",
    $"\"runs\":{runs}",
    J("run_cold_first_token_ms", coldTtft), J("run_first_token_ms_p50", Pct(ttftMs, 0.5)), J("run_total_ms_p50", Pct(totalMs, 0.5)),
    J("run_first_token_ms_p50_raw_stub", Pct(rawTtftMs, 0.5)),
    J("alloc_text_deltas_per_run", alloc.DeltasPerRun, "0"),
    J("heap_bytes_per_text_delta", alloc.PerDelta, "0"),
    J("heap_bytes_per_text_delta_with_token", alloc.PerDeltaWithToken, "0"),
    J("heap_bytes_per_text_delta_raw_stub", alloc.PerDeltaRawStub, "0"),
    J("parse_bytes_per_text_delta_message", alloc.MessageBytes, "0"),
    $"\"alloc_tick_samples\":{alloc.Samples}",
    "\"alloc_tick_samples_by_owner\":{" + string.Join(",", alloc.ByOwner.Select(o => $"\"{o.Owner}\":{o.Samples}")) + "}",
    "\"alloc_tick_top_types\":{" + string.Join(",", alloc.TopTypes.Select(o => $"\"{o.Type.Replace("\"", "'")}\":{o.Samples}")) + "}",
}) + "}");
return 0;

// The runtime settings this run used, so a figure says what it was measured under.
static string Runtime()
{
    static string Env(string name) => Environment.GetEnvironmentVariable(name) ?? "unset";
    var tiered = AppContext.GetData("System.Runtime.TieredCompilation")?.ToString() ?? "default";
    return $"{System.Runtime.InteropServices.RuntimeInformation.FrameworkDescription}; TieredCompilation={tiered} (env {Env("DOTNET_TieredCompilation")}); " +
        $"GC server={System.Runtime.GCSettings.IsServerGC} latency={System.Runtime.GCSettings.LatencyMode}; " +
        $"DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS={Env("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS")}; " +
        $"DOTNET_ThreadPool_UnfairSemaphoreSpinLimit={Env("DOTNET_ThreadPool_UnfairSemaphoreSpinLimit")}";
}

static double CpuUs() => Process.GetCurrentProcess().TotalProcessorTime.TotalMilliseconds * 1000;

static DeltaOp Fact(int i) => new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "tick", Value = new Value { IntValue = i } } };

static double Pct(List<double> v, double p)
{
    if (v.Count == 0) return 0;
    var s = v.OrderBy(x => x).ToList();
    var i = Math.Min(s.Count - 1, (int)(p * (s.Count - 1) + 0.5));
    return s[i];
}

static string J(string key, double value, string format = "0.0") =>
    $"\"{key}\":{value.ToString(format, CultureInfo.InvariantCulture)}";

static int Fail(string what)
{
    Console.Error.WriteLine("BenchClient: " + what);
    return 1;
}
