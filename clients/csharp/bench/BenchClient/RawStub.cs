// The bench's three measured loops again, through the generated stub directly (no
// client library), with the library's own call options (token header; unary calls
// also its deadline): what Grpc.Net.Client costs by itself on this machine, in the
// same run as the library and the C++ client, so a gap between the library and the
// C++ client can be told apart from one between Grpc.Net.Client and the C++ client.
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;

static class RawStub
{
    private static double Us(long t0) => (Stopwatch.GetTimestamp() - t0) * 1e6 / Stopwatch.Frequency;

    private static DeltaOp Fact(int i) => new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = "tick", Value = new Value { IntValue = i } } };

    public static async Task<(List<double> Us, long Revision)> UnaryAsync(SidecarClient client, string session, long rev, int batches)
    {
        var us = new List<double>(batches);
        for (var i = 0; i < batches; i++)
        {
            var req = new ApplyDeltasRequest { SessionId = session, BaseRevision = rev, DeltaId = "ru" + i };
            req.Ops.Add(Fact(i));
            var t0 = Stopwatch.GetTimestamp();
            var r = await client.Sessions.ApplyDeltasAsync(req, client.Options(CancellationToken.None));
            us.Add(Us(t0));
            rev = r.Revision;
        }
        return (us, rev);
    }

    public static async Task<(List<double> Us, long Revision)> StreamAsync(SidecarClient client, string session, long rev, int batches)
    {
        var us = new List<double>(batches);
        using var call = client.Sessions.StreamDeltas(client.Options(CancellationToken.None, unary: false));
        for (var i = 0; i < batches; i++)
        {
            var req = new StreamDeltasRequest { SessionId = session, BaseRevision = rev, DeltaId = "rs" + i };
            req.Ops.Add(Fact(i));
            var t0 = Stopwatch.GetTimestamp();
            await call.RequestStream.WriteAsync(req);
            if (!await call.ResponseStream.MoveNext(CancellationToken.None)) throw new System.InvalidOperationException("stream ended");
            us.Add(Us(t0));
            rev = call.ResponseStream.Current.Revision;
        }
        await call.RequestStream.CompleteAsync();
        while (await call.ResponseStream.MoveNext(CancellationToken.None)) { }
        return (us, rev);
    }

    /// <summary>Milliseconds to the first TextDelta of each of `runs` scripted runs.</summary>
    public static async Task<List<double>> FirstTokenAsync(SidecarClient client, string session, int runs)
    {
        var ms = new List<double>(runs);
        for (var i = 0; i < runs; i++)
        {
            var req = new RunRequest { SessionId = session, Narrate = new NarrateInput { Text = "The gate opens." } };
            double first = -1;
            var t0 = Stopwatch.GetTimestamp();
            using var call = client.Agent.Run(req, client.Options(CancellationToken.None, unary: false));
            while (await call.ResponseStream.MoveNext(CancellationToken.None))
            {
                if (call.ResponseStream.Current.Event.KindCase == RunEvent.KindOneofCase.Text && first < 0) first = Us(t0) / 1000;
            }
            if (first < 0) throw new System.InvalidOperationException("run streamed no text");
            ms.Add(first);
        }
        return ms;
    }
}
