// BenchClient: figures for the C# client against the real sidecar, printed as one
// JSON object; the same workload as clients/cpp/bench/bench_client.cpp (launches,
// unary ApplyDeltas vs StreamDeltas, scripted runs), plus the heap bytes the
// process allocates per received TextDelta.
//
//   BenchClient SIDECAR_EXE CONFIG_TOML ALLOC_TOML [--launches N] [--batches N] [--runs N]
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Threading.Tasks;
using Google.Protobuf;
using GameSidecar.Client;
using GameSidecar.V1;

if (args.Length < 3) return Fail("usage: BenchClient SIDECAR_EXE CONFIG_TOML ALLOC_TOML [--launches N] [--batches N] [--runs N]");
int launches = 5, batches = 500, runs = 5;
var deadline = true;
for (var i = 3; i < args.Length; i++)
{
    if (args[i] == "--no-deadline") deadline = false; // baseline: unary calls without grpc-timeout
    if (i + 1 >= args.Length) continue;
    if (args[i] == "--launches") launches = int.Parse(args[i + 1]);
    if (args[i] == "--batches") batches = int.Parse(args[i + 1]);
    if (args[i] == "--runs") runs = int.Parse(args[i + 1]);
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
double Ms(long ticks) => ticks * 1000.0 / Stopwatch.Frequency;

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
// recompiles hot ones in the background, so the first few hundred calls of a
// process measure the JIT, not the client. A game reaches steady state in seconds.
long rev = 0;
const int warmup = 200;
for (var i = 0; i < warmup; i++) rev = (await client.ApplyDeltasAsync("bench", rev, new[] { Fact(i) }, "wu" + i)).Revision;
await using (var warm = client.StreamDeltas())
{
    for (var i = 0; i < warmup; i++)
    {
        var req = new StreamDeltasRequest { SessionId = "bench", BaseRevision = rev, DeltaId = "ws" + i };
        req.Ops.Add(Fact(i));
        rev = (await warm.ApplyAsync(req)).Revision;
    }
    await warm.CompleteAsync();
}

// Unary ApplyDeltas, one op per batch (the per-tick case).
var unaryUs = new List<double>();
for (var i = 0; i < batches; i++)
{
    var ops = new[] { Fact(i) };
    var t0 = Stopwatch.GetTimestamp();
    var r = await client.ApplyDeltasAsync("bench", rev, ops, "u" + i);
    unaryUs.Add(Ms(Stopwatch.GetTimestamp() - t0) * 1000);
    rev = r.Revision;
}

// The same batches over one StreamDeltas stream, one at a time.
var streamUs = new List<double>();
await using (var stream = client.StreamDeltas())
{
    for (var i = 0; i < batches; i++)
    {
        var req = new StreamDeltasRequest { SessionId = "bench", BaseRevision = rev, DeltaId = "s" + i };
        req.Ops.Add(Fact(i));
        var t0 = Stopwatch.GetTimestamp();
        var r = await stream.ApplyAsync(req);
        streamUs.Add(Ms(Stopwatch.GetTimestamp() - t0) * 1000);
        rev = r.Revision;
    }
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

// Heap bytes per TextDelta: everything the process allocates (all threads) while
// receiving long runs, divided by the TextDeltas received; next to it, what parsing
// one such message costs by itself (RunResponse + RunEvent + TextDelta + its string).
var (allocPerDelta, deltasPerRun, messageBytes) = await MeasureAllocations(Options(allocConfig));

Console.WriteLine("{" + string.Join(",", new[]
{
    "\"bench\":\"csharp_client\"",
    $"\"launches\":{launches}",
    J("launch_to_handshake_ms_p50", Pct(launchMs, 0.5)), J("launch_to_handshake_ms_max", Pct(launchMs, 1.0)),
    "\"handshake_target_ms\":500",
    J("launch_to_first_call_ms_p50", Pct(firstCallMs, 0.5)), J("stop_ms_p50", Pct(stopMs, 0.5)),
    $"\"batches\":{batches}", $"\"warmup_batches\":{warmup}", $"\"unary_deadline\":{(deadline ? "true" : "false")}",
    J("apply_deltas_unary_us_p50", Pct(unaryUs, 0.5), "0"), J("apply_deltas_unary_us_p99", Pct(unaryUs, 0.99), "0"),
    J("stream_deltas_us_p50", Pct(streamUs, 0.5), "0"), J("stream_deltas_us_p99", Pct(streamUs, 0.99), "0"),
    J("stream_vs_unary_p50", Pct(streamUs, 0.5) / Math.Max(1.0, Pct(unaryUs, 0.5)), "0.00"),
    $"\"runs\":{runs}",
    J("run_cold_first_token_ms", coldTtft), J("run_first_token_ms_p50", Pct(ttftMs, 0.5)), J("run_total_ms_p50", Pct(totalMs, 0.5)),
    J("alloc_text_deltas_per_run", deltasPerRun, "0"),
    J("heap_bytes_per_text_delta", allocPerDelta, "0"),
    J("parse_bytes_per_text_delta_message", messageBytes, "0"),
}) + "}");
return 0;

static async Task<(double PerDelta, double DeltasPerRun, double MessageBytes)> MeasureAllocations(SidecarProcessOptions options)
{
    await using var sidecar = await SidecarProcess.LaunchAsync(options);
    var client = sidecar.Client;
    await client.OpenSessionAsync("alloc");
    var req = new RunRequest { SessionId = "alloc", Narrate = new NarrateInput { Text = "The gate opens." } };
    string sample = "";
    async Task<long> OneRun()
    {
        long deltas = 0;
        await foreach (var e in client.Run(req))
        {
            if (e.KindCase != RunEvent.KindOneofCase.Text) continue;
            deltas++;
            sample = e.Text.Text;
        }
        return deltas;
    }
    for (var i = 0; i < 3; i++) await OneRun(); // warm: JIT, connection, model layer
    const int measured = 10;
    long totalDeltas = 0;
    GC.Collect();
    var before = GC.GetTotalAllocatedBytes(precise: true);
    for (var i = 0; i < measured; i++) totalDeltas += await OneRun();
    var allocated = GC.GetTotalAllocatedBytes(precise: true) - before;

    var wire = new RunResponse { Event = new RunEvent { RunId = Guid.NewGuid().ToString("N"), Seq = 7, Text = new TextDelta { Text = sample, Attempt = 1 } } }.ToByteArray();
    for (var i = 0; i < 1000; i++) RunResponse.Parser.ParseFrom(wire);
    const int parses = 10000;
    var parseBefore = GC.GetAllocatedBytesForCurrentThread();
    for (var i = 0; i < parses; i++) RunResponse.Parser.ParseFrom(wire);
    var perParse = (GC.GetAllocatedBytesForCurrentThread() - parseBefore) / (double)parses;
    return (allocated / (double)Math.Max(1, totalDeltas), totalDeltas / (double)measured, perParse);
}

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
