// Probe: where the C# client's CPU per call goes. On one sidecar, interleaved in
// blocks so load drifts hit every variant alike, the same one-op ApplyDeltas and
// StreamDeltas batches, and whole scripted runs, through: the library; the raw
// generated stub on the library's channel; the raw stub on channels built other ways.
// Prints p50 latency, the process's CPU and the thread-pool work items per call for
// each, and each run's time to its first TextDelta.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Net.Http;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Grpc.Core;
using Grpc.Net.Client;

static class Probe
{
    public static async Task<int> RunAsync(SidecarProcessOptions options, int perBlock, int rounds)
    {
        await using var sidecar = await SidecarProcess.LaunchAsync(options);
        var client = sidecar.Client;
        await client.OpenSessionAsync("probe");
        var auth = new Metadata { { "authorization", "Bearer " + sidecar.Token } };
        var path = sidecar.Handshake.Address;

        GrpcChannel ViaHttpClient() => GrpcChannel.ForAddress("http://localhost", new GrpcChannelOptions
        {
            HttpClient = new HttpClient(Handler(path)) { Timeout = Timeout.InfiniteTimeSpan },
            DisposeHttpClient = true,
        });
        GrpcChannel ViaHandler() => GrpcChannel.ForAddress("http://localhost", new GrpcChannelOptions
        {
            HttpHandler = Handler(path), DisposeHttpClient = true,
        });
        var httpClientStub = new SessionService.SessionServiceClient(ViaHttpClient());
        var handlerStub = new SessionService.SessionServiceClient(ViaHandler());
        var libStub = client.Sessions;
        long rev = 0;
        var n = 0;
        CallOptions Opts(bool deadline) => new CallOptions(auth, deadline ? DateTime.UtcNow.AddSeconds(30) : (DateTime?)null);
        ApplyDeltasRequest Req()
        {
            var r = new ApplyDeltasRequest { SessionId = "probe", BaseRevision = rev, DeltaId = "p" + n++ };
            r.Ops.Add(new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "tick", Value = new Value { IntValue = n } } });
            return r;
        }

        var unary = new List<(string Name, Func<Task>)>
        {
            ("library ApplyDeltasAsync", async () => rev = (await client.ApplyDeltasAsync("probe", rev, Req().Ops, "p" + n++)).Revision),
            ("stub, library channel, deadline", async () => rev = (await libStub.ApplyDeltasAsync(Req(), Opts(true))).Revision),
            ("stub, library channel, no deadline", async () => rev = (await libStub.ApplyDeltasAsync(Req(), Opts(false))).Revision),
            ("stub, HttpHandler channel, deadline", async () => rev = (await handlerStub.ApplyDeltasAsync(Req(), Opts(true))).Revision),
            ("stub, HttpClient channel, deadline", async () => rev = (await httpClientStub.ApplyDeltasAsync(Req(), Opts(true))).Revision),
            ("stub, HttpClient channel, no deadline", async () => rev = (await httpClientStub.ApplyDeltasAsync(Req(), Opts(false))).Revision),
        };
        var libStream = client.StreamDeltas();
        var rawLib = libStub.StreamDeltas(Opts(false));
        var rawHc = httpClientStub.StreamDeltas(Opts(false));
        async Task RawApply(AsyncDuplexStreamingCall<StreamDeltasRequest, StreamDeltasResponse> call)
        {
            var r = new StreamDeltasRequest { SessionId = "probe", BaseRevision = rev, DeltaId = "s" + n++ };
            r.Ops.Add(new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "tick", Value = new Value { IntValue = n } } });
            await call.RequestStream.WriteAsync(r);
            await call.ResponseStream.MoveNext(CancellationToken.None);
            rev = call.ResponseStream.Current.Revision;
        }
        var stream = new List<(string Name, Func<Task>)>
        {
            ("library DeltaStream.ApplyAsync", async () =>
            {
                var r = new StreamDeltasRequest { SessionId = "probe", BaseRevision = rev, DeltaId = "s" + n++ };
                r.Ops.Add(new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "tick", Value = new Value { IntValue = n } } });
                rev = (await libStream.ApplyAsync(r)).Revision;
            }),
            ("stream stub, library channel", () => RawApply(rawLib)),
            ("stream stub, HttpClient channel", () => RawApply(rawHc)),
        };
        // Warm scripted runs, whole: the library's Run loop against the bare stub's; the time to
        // the first TextDelta of each is kept apart (the block's latency is the whole run).
        var runReq = new RunRequest { SessionId = "probe", Narrate = new NarrateInput { Text = "The gate opens." } };
        var agentStub = client.Agent;
        var firstToken = new Dictionary<string, List<double>> { ["library Run"] = new List<double>(), ["bare stub Run"] = new List<double>() };
        var runs = new List<(string Name, Func<Task>)>
        {
            ("library Run", async () =>
            {
                var t0 = Stopwatch.GetTimestamp();
                double first = -1;
                await foreach (var e in client.Run(runReq))
                {
                    if (e.KindCase == RunEvent.KindOneofCase.Text && first < 0) first = (Stopwatch.GetTimestamp() - t0) * 1e6 / Stopwatch.Frequency;
                }
                firstToken["library Run"].Add(first);
            }),
            ("bare stub Run", async () =>
            {
                var t0 = Stopwatch.GetTimestamp();
                double first = -1;
                using var call = agentStub.Run(runReq, Opts(false));
                while (await call.ResponseStream.MoveNext(CancellationToken.None))
                {
                    if (call.ResponseStream.Current.Event.KindCase == RunEvent.KindOneofCase.Text && first < 0)
                        first = (Stopwatch.GetTimestamp() - t0) * 1e6 / Stopwatch.Frequency;
                }
                firstToken["bare stub Run"].Add(first);
            }),
        };
        var all = unary.Concat(stream).Concat(runs).ToList();
        var lat = all.ToDictionary(v => v.Name, _ => new List<double>());
        var cpu = all.ToDictionary(v => v.Name, _ => 0.0);
        var items = all.ToDictionary(v => v.Name, _ => 0L);
        for (var w = 0; w < 2; w++) foreach (var (_, f) in all) for (var i = 0; i < perBlock; i++) await f(); // JIT, connections
        await Task.Delay(500);
        for (var r = 0; r < rounds; r++)
        {
            foreach (var (name, f) in all)
            {
                var c0 = Process.GetCurrentProcess().TotalProcessorTime;
                var w0 = ThreadPool.CompletedWorkItemCount;
                for (var i = 0; i < perBlock; i++)
                {
                    var t0 = Stopwatch.GetTimestamp();
                    await f();
                    lat[name].Add((Stopwatch.GetTimestamp() - t0) * 1e6 / Stopwatch.Frequency);
                }
                cpu[name] += (Process.GetCurrentProcess().TotalProcessorTime - c0).TotalMilliseconds * 1000;
                items[name] += ThreadPool.CompletedWorkItemCount - w0;
            }
        }
        foreach (var (name, _) in all)
        {
            var s = lat[name].OrderBy(x => x).ToList();
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "{0,-40} p50 {1,6:0} us  cpu {2,5:0} us/call  {3,4:0.0} thread-pool items/call",
                name, s[s.Count / 2], cpu[name] / s.Count, items[name] / (double)s.Count));
        }
        foreach (var (name, v) in firstToken)
        {
            var s = v.OrderBy(x => x).ToList();
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "{0,-40} first TextDelta p50 {1,6:0} us ({2} runs)", name, s[s.Count / 2], s.Count));
        }
        await libStream.CompleteAsync();
        return 0;
    }

    private static SocketsHttpHandler Handler(string path) => new SocketsHttpHandler
    {
        ConnectCallback = async (context, token) =>
        {
            var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            await socket.ConnectAsync(new UnixDomainSocketEndPoint(path), token);
            return new NetworkStream(socket, ownsSocket: true);
        },
        EnableMultipleHttp2Connections = false,
    };
}
