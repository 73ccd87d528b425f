// The real sidecar process, launched by the C# launcher with the scripted model:
// handshake, auth, sessions, revisions, StreamDeltas, export/import.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Grpc.Core;
using Xunit;

namespace GameSidecar.Client.Tests
{
    [Collection("sidecar")]
    public class RealSidecarTests
    {
        private readonly SidecarFixture _sidecar;

        public RealSidecarTests(SidecarFixture sidecar) { _sidecar = sidecar; }

        private SidecarClient Client => _sidecar.Client;

        [Fact]
        public async Task HandshakeOverTheDefaultTransportThenGetInfo()
        {
            // The default transport: a Unix socket on POSIX, TCP loopback on Windows.
            Assert.Equal(!TestEnv.IsWindows, _sidecar.Process.Handshake.IsUnix);
            Assert.Equal(!TestEnv.IsWindows, System.IO.File.Exists(_sidecar.Process.Handshake.Address));
            var info = await Client.GetInfoAsync();
            Assert.Equal(TestEnv.ServingPid(_sidecar.Process.Pid), info.Pid);
            Assert.Contains(1, info.ProtocolVersions);
            Assert.Equal(_sidecar.Process.Handshake.Version, info.Version);
            Assert.Contains(info.Profiles, p => p.Name == "scripted");
            // The sidecar's JSON log lines reached the callback (its "serving" line among them).
            Assert.Contains(_sidecar.Logs, line => line.StartsWith("{") && line.Contains("\"level\"") && line.Contains("serving"));
        }

        [Fact]
        public async Task WrongTokenIsUnauthenticatedAndTouchesNothing()
        {
            using var intruder = new SidecarClient(_sidecar.Process.Handshake, "not-the-token");
            var e = await Assert.ThrowsAsync<SidecarUnauthenticatedException>(() => intruder.OpenSessionAsync("auth-probe"));
            Assert.Equal(StatusCode.Unauthenticated, e.StatusCode);
            Assert.Equal("UNAUTHENTICATED", e.ReasonName);
            // The session was not created: the right client gets NOT_FOUND for it.
            var notFound = await Assert.ThrowsAsync<SidecarNotFoundException>(() => Client.CloseSessionAsync("auth-probe"));
            Assert.Equal("SESSION_NOT_FOUND", notFound.ReasonName);
        }

        [Fact]
        public async Task OpenSessionCreatesThenResumes()
        {
            var first = await Client.OpenSessionAsync("resume");
            Assert.True(first.Created);
            await Client.ApplyDeltasAsync("resume", first.Revision, TestEnv.GateScene());
            var again = await Client.OpenSessionAsync("resume");
            Assert.False(again.Created);
            Assert.Equal(first.Revision + 1, again.Revision);
        }

        [Fact]
        public async Task StaleBaseRevisionIsTheTypedExceptionAndChangesNothing()
        {
            var rev = await _sidecar.OpenScene("stale");
            var next = await Client.ApplyDeltasAsync("stale", rev, new[] { TestEnv.Fact("tick", 1) });
            Assert.Equal(rev + 1, next.Revision);
            var e = await Assert.ThrowsAsync<StaleRevisionException>(
                () => Client.ApplyDeltasAsync("stale", rev, new[] { TestEnv.Fact("tick", 2) }));
            Assert.Equal(StatusCode.Aborted, e.StatusCode);
            Assert.Equal(next.Revision, e.CurrentRevision);
            Assert.Equal(next.Revision.ToString(), e.Metadata["current_revision"]);
            var state = await Client.GetStateAsync(new GetStateRequest { SessionId = "stale" });
            Assert.Equal(next.Revision, state.Revision);
            Assert.Equal(1, state.Snapshot.SceneFacts.Single(f => f.Key == "tick").Value.IntValue);
        }

        [Fact]
        public async Task TrackedSessionFollowsTheRevisionAndCatchesUpAfterAStaleBase()
        {
            var session = await Client.OpenTrackedSessionAsync("tracked");
            var start = session.Revision;
            await session.ApplyAsync(TestEnv.GateScene());
            await session.ApplyAsync(TestEnv.Fact("tick", 1));
            Assert.Equal(start + 2, session.Revision);
            // Someone else (another client) moves the session on: the handle is stale once, then current.
            using (var other = new SidecarClient(_sidecar.Process.Handshake, _sidecar.Process.Token))
                await other.ApplyDeltasAsync("tracked", session.Revision, new[] { TestEnv.Fact("tick", 2) });
            var e = await Assert.ThrowsAsync<StaleRevisionException>(() => session.ApplyAsync(TestEnv.Fact("tick", 3)));
            Assert.Equal(start + 3, session.Revision);
            Assert.Equal(e.CurrentRevision, session.Revision);
            var ok = await session.ApplyAsync(TestEnv.Fact("tick", 3));
            Assert.Equal(start + 4, ok.Revision);
        }

        [Fact]
        public async Task TrackedSessionFollowsEveryWritePathOfItsClient()
        {
            // Issue 21: writes through the same client (explicit base, DeltaStream, ReplaceState) move the
            // handle on, so its next ApplyAsync is not STALE_REVISION.
            var session = await Client.OpenTrackedSessionAsync("tracked-paths");
            await session.ApplyAsync(TestEnv.GateScene());
            var explicitBase = await Client.ApplyDeltasAsync("tracked-paths", session.Revision, new[] { TestEnv.Fact("tick", 1) });
            Assert.Equal(explicitBase.Revision, session.Revision);
            Assert.Equal(explicitBase.Revision + 1, (await session.ApplyAsync(TestEnv.Fact("tick", 2))).Revision);

            await using (var stream = Client.StreamDeltas())
            {
                var request = new StreamDeltasRequest { SessionId = "tracked-paths", BaseRevision = session.Revision, DeltaId = "tp-s1" };
                request.Ops.Add(TestEnv.Fact("tick", 3));
                var ack = await stream.ApplyAsync(request);
                Assert.Equal(ack.Revision, session.Revision);
                Assert.Empty(stream.Unacknowledged);
                Assert.Empty(await stream.CompleteAsync());
            }
            Assert.Equal(session.Revision + 1, (await session.ApplyAsync(TestEnv.Fact("tick", 4))).Revision);

            var snapshot = (await Client.GetStateAsync(new GetStateRequest { SessionId = "tracked-paths" })).Snapshot;
            var replaced = await Client.ReplaceStateAsync(new ReplaceStateRequest { SessionId = "tracked-paths", Snapshot = snapshot });
            Assert.Equal(replaced.Revision, session.Revision);
            Assert.Equal(replaced.Revision + 1, (await session.ApplyAsync(TestEnv.Fact("tick", 5))).Revision);
        }

        [Fact]
        public async Task UnknownSessionIsNotFound()
        {
            var e = await Assert.ThrowsAsync<SidecarNotFoundException>(
                () => Client.ApplyDeltasAsync("no-such-session", 0, new[] { TestEnv.Fact("tick", 1) }));
            Assert.Equal(StatusCode.NotFound, e.StatusCode);
            Assert.Equal("SESSION_NOT_FOUND", e.ReasonName);
            Assert.Contains("no-such-session", e.Message);
        }

        [Fact]
        public async Task StreamDeltasAcksPipelinedBatchesInOrder()
        {
            var rev = await _sidecar.OpenScene("stream");
            await using var stream = Client.StreamDeltas();
            const int n = 20;
            for (var i = 0; i < n; i++)
            {
                var request = new StreamDeltasRequest { SessionId = "stream", BaseRevision = rev + i, DeltaId = $"s{i}" };
                request.Ops.Add(TestEnv.Fact("tick", i));
                await stream.WriteAsync(request);
            }
            for (var i = 0; i < n; i++)
            {
                var ack = await stream.ReadAsync();
                Assert.NotNull(ack);
                Assert.Equal($"s{i}", ack!.DeltaId);
                Assert.Equal(rev + i + 1, ack.Revision);
                Assert.Null(ack.Error);
            }
            // A rejected batch is reported in its answer and the stream goes on.
            var stale = new StreamDeltasRequest { SessionId = "stream", BaseRevision = rev, DeltaId = "old" };
            stale.Ops.Add(TestEnv.Fact("tick", -1));
            var e = await Assert.ThrowsAsync<StaleRevisionException>(() => stream.ApplyAsync(stale));
            Assert.Equal(rev + n, e.CurrentRevision);
            var good = new StreamDeltasRequest { SessionId = "stream", BaseRevision = rev + n, DeltaId = "next" };
            good.Ops.Add(TestEnv.Fact("tick", n));
            var applied = await stream.ApplyAsync(good);
            Assert.Equal(rev + n + 1, applied.Revision);
            Assert.Empty(await stream.CompleteAsync());
        }

        [Fact]
        public async Task ApplyOnACompletedStreamFailsAtOnceAndTheSessionIsUntouched()
        {
            // A write refused on the spot ends ApplyAsync with gRPC's own error, not a wait for an
            // answer that cannot come (the guard turns a hang into a TimeoutException).
            var rev = await _sidecar.OpenScene("stream-done");
            await using var stream = Client.StreamDeltas();
            Assert.Empty(await stream.CompleteAsync());
            var late = new StreamDeltasRequest { SessionId = "stream-done", BaseRevision = rev, DeltaId = "late" };
            late.Ops.Add(TestEnv.Fact("tick", 1));
            await Assert.ThrowsAsync<InvalidOperationException>(() => stream.ApplyAsync(late).WaitAsync(TimeSpan.FromSeconds(60)));
            Assert.Equal(rev, (await Client.OpenSessionAsync("stream-done")).Revision);
        }

        [Fact]
        public async Task CancellingTheStreamFailsTheNextApplyAsCancelled()
        {
            var rev = await _sidecar.OpenScene("stream-cancel");
            using var cts = new System.Threading.CancellationTokenSource();
            await using var stream = Client.StreamDeltas(cts.Token);
            var first = new StreamDeltasRequest { SessionId = "stream-cancel", BaseRevision = rev, DeltaId = "c1" };
            first.Ops.Add(TestEnv.Fact("tick", 1));
            Assert.Equal(rev + 1, (await stream.ApplyAsync(first)).Revision);
            cts.Cancel();
            var second = new StreamDeltasRequest { SessionId = "stream-cancel", BaseRevision = rev + 1, DeltaId = "c2" };
            second.Ops.Add(TestEnv.Fact("tick", 2));
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => stream.ApplyAsync(second).WaitAsync(TimeSpan.FromSeconds(60)));
            Assert.Equal(rev + 1, (await Client.OpenSessionAsync("stream-cancel")).Revision);
        }

        [Fact]
        public async Task ExportThenImportUnderAnotherId()
        {
            var rev = await _sidecar.OpenScene("saved");
            var export = await Client.ExportSessionAsync("saved");
            Assert.Equal(rev, export.Revision);
            var imported = await Client.ImportSessionAsync(new ImportSessionRequest { SessionId = "loaded", Blob = export.Blob });
            Assert.Equal("loaded", imported.SessionId);
            Assert.Equal(rev, imported.Revision);
            var e = await Assert.ThrowsAsync<SidecarException>(
                () => Client.ImportSessionAsync(new ImportSessionRequest { SessionId = "loaded", Blob = export.Blob }));
            Assert.Equal("SESSION_EXISTS", e.ReasonName);
            var garbage = await Assert.ThrowsAsync<SidecarException>(() => Client.ImportSessionAsync(
                new ImportSessionRequest { SessionId = "junk", Blob = Google.Protobuf.ByteString.CopyFromUtf8("junk") }));
            Assert.Equal(StatusCode.InvalidArgument, garbage.StatusCode);
            Assert.Equal("INVALID_BLOB", garbage.ReasonName);
        }

        [Fact]
        public async Task PreviewPromptShowsAliasesNotEngineIds()
        {
            await _sidecar.OpenScene("preview");
            var preview = await Client.PreviewPromptAsync(TestEnv.Narrate("preview", "Wren looks at the gate."));
            Assert.NotEmpty(preview.Messages);
            var all = string.Concat(preview.Messages.Select(m => m.Content));
            Assert.Contains("Wren looks at the gate.", all);
            Assert.Contains("Wren", all.Replace("Wren looks at the gate.", ""));
            Assert.DoesNotContain("BP_Player_C_0", all);
            Assert.DoesNotContain("level/gate", all);
        }
    }
}
