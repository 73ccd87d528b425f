// Heap bytes per received TextDelta, and who allocates them.
//
// Four figures from one sidecar, measured in alternating rounds so load drifts hit
// the loops alike: the client library's SidecarClient.Run, without and with a
// cancellation token (a game's usual call); the same stream read
// with the generated stub directly (no wrapper: what Grpc.Net.Client costs by
// itself); and the parse of one such RunResponse alone (the message itself). Then,
// with an in-process EventListener on the runtime's GC AllocationTick events (one
// sample per ~100 KB allocated, with the type that crossed the mark), which
// assemblies' types the per-token bytes are: a sampled type of GameSidecar.Client
// would be ours. The listener allocates too, so it runs only after the byte counts.
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Google.Protobuf;
using GameSidecar.Client;
using GameSidecar.V1;
using Grpc.Core;

static class Allocations
{
    public sealed record Result(double PerDelta, double PerDeltaWithToken, double PerDeltaRawStub, double DeltasPerRun, double MessageBytes,
        int Samples, IReadOnlyList<(string Owner, int Samples)> ByOwner, IReadOnlyList<(string Type, int Samples)> TopTypes);

    public static async Task<Result> MeasureAsync(SidecarProcessOptions options, int sampledRuns)
    {
        await using var sidecar = await SidecarProcess.LaunchAsync(options);
        var client = sidecar.Client;
        await client.OpenSessionAsync("alloc");
        var req = new RunRequest { SessionId = "alloc", Narrate = new NarrateInput { Text = "The gate opens." } };
        var auth = new Metadata { { "authorization", "Bearer " + sidecar.Token } };
        string sample = "";

        async Task<long> Wrapped()
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
        // What a game does: a run it can cancel (Unity's destroyCancellationToken, a timeout).
        async Task<long> WrappedWithToken()
        {
            using var cts = new CancellationTokenSource();
            long deltas = 0;
            await foreach (var e in client.Run(req, cts.Token))
            {
                if (e.KindCase == RunEvent.KindOneofCase.Text) deltas++;
            }
            return deltas;
        }
        async Task<long> RawStub()
        {
            long deltas = 0;
            using var call = client.Agent.Run(req, new CallOptions(auth));
            while (await call.ResponseStream.MoveNext(CancellationToken.None))
            {
                if (call.ResponseStream.Current.Event.KindCase == RunEvent.KindOneofCase.Text) deltas++;
            }
            return deltas;
        }

        for (var i = 0; i < 3; i++) { await Wrapped(); await WrappedWithToken(); await RawStub(); } // JIT, connection, model layer
        const int rounds = 3, runsPerRound = 5;
        long wrappedBytes = 0, wrappedDeltas = 0, tokenBytes = 0, tokenDeltas = 0, rawBytes = 0, rawDeltas = 0;
        for (var r = 0; r < rounds; r++)
        {
            (long b, long d) w = await Count(Wrapped, runsPerRound), t = await Count(WrappedWithToken, runsPerRound),
                s = await Count(RawStub, runsPerRound);
            wrappedBytes += w.b; wrappedDeltas += w.d; tokenBytes += t.b; tokenDeltas += t.d; rawBytes += s.b; rawDeltas += s.d;
        }

        var wire = new RunResponse { Event = new RunEvent { RunId = Guid.NewGuid().ToString("N"), Seq = 7, Text = new TextDelta { Text = sample, Attempt = 1 } } }.ToByteArray();
        for (var i = 0; i < 1000; i++) RunResponse.Parser.ParseFrom(wire);
        const int parses = 10000;
        var parseBefore = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < parses; i++) RunResponse.Parser.ParseFrom(wire);
        var perParse = (GC.GetAllocatedBytesForCurrentThread() - parseBefore) / (double)parses;

        Dictionary<string, int> types;
        using (var listener = new AllocationTicks())
        {
            for (var i = 0; i < sampledRuns; i++) await Wrapped();
            types = listener.Snapshot();
        }
        var byOwner = types.GroupBy(kv => Owner(kv.Key)).Select(g => (g.Key, g.Sum(kv => kv.Value)))
            .OrderByDescending(x => x.Item2).ToList();
        var top = types.OrderByDescending(kv => kv.Value).Take(12).Select(kv => (kv.Key, kv.Value)).ToList();
        return new Result(wrappedBytes / (double)Math.Max(1, wrappedDeltas), tokenBytes / (double)Math.Max(1, tokenDeltas),
            rawBytes / (double)Math.Max(1, rawDeltas),
            wrappedDeltas / (double)(rounds * runsPerRound), perParse, types.Values.Sum(), byOwner, top);
    }

    private static async Task<(long Bytes, long Deltas)> Count(Func<Task<long>> run, int runs)
    {
        GC.Collect();
        var before = GC.GetTotalAllocatedBytes(precise: true);
        long deltas = 0;
        for (var i = 0; i < runs; i++) deltas += await run();
        return (GC.GetTotalAllocatedBytes(precise: true) - before, deltas);
    }

    /// <summary>Who a sampled type belongs to; a generic instantiation counts for the code
    /// that instantiated it (an AsyncStateMachineBox of a Grpc method is Grpc's).</summary>
    public static string Owner(string type)
    {
        if (type.Contains("GameSidecar.Client")) return "client library (ours)";
        if (type.Contains("Grpc.")) return "Grpc.Net.Client";
        if (type.Contains("System.Net.Http")) return "System.Net.Http (HTTP/2)";
        if (type.StartsWith("GameSidecar.V1.") || type.StartsWith("Google.Protobuf") || type == "System.String") return "the message (parse)";
        return "other: " + type;
    }

    private sealed class AllocationTicks : EventListener
    {
        private readonly Dictionary<string, int> _types = new Dictionary<string, int>();

        public Dictionary<string, int> Snapshot()
        {
            lock (_types) return new Dictionary<string, int>(_types);
        }

        protected override void OnEventSourceCreated(EventSource source)
        {
            // Keyword 0x1 = GC; AllocationTick is a verbose GC event.
            if (source.Name == "Microsoft-Windows-DotNETRuntime") EnableEvents(source, EventLevel.Verbose, (EventKeywords)0x1);
        }

        protected override void OnEventWritten(EventWrittenEventArgs e)
        {
            if (e.EventName == null || !e.EventName.StartsWith("GCAllocationTick", StringComparison.Ordinal)) return;
            var i = e.PayloadNames?.IndexOf("TypeName") ?? -1;
            var name = i >= 0 ? e.Payload?[i]?.ToString() ?? "?" : "?";
            lock (_types) _types[name] = _types.TryGetValue(name, out var n) ? n + 1 : 1;
        }
    }
}
