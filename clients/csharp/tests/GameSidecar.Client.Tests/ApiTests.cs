// Issue 21's API: the reason enum and IsRetryable, DeltaIdReusedException, Narrate's
// pieces with UTF-16 mention spans, DecideAsync, and ReplaceState / ImportSession in
// pieces above the sidecar's max_request_bytes, against a real sidecar (api_test.toml).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Google.Protobuf;
using Grpc.Core;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public sealed class ApiSidecarFixture : IAsyncLifetime
    {
        public SidecarProcess Process { get; private set; } = null!;

        public async Task InitializeAsync()
        {
            Process = await SidecarProcess.LaunchAsync(TestEnv.RealOptions(TestEnv.Here("api_test.toml")));
        }

        public async Task DisposeAsync()
        {
            if (Process != null) await Process.DisposeAsync();
        }
    }

    public class ApiTests : IClassFixture<ApiSidecarFixture>
    {
        private const string Tavern = "/Game/Maps/Tavern.Tavern_0001";
        private const string Goblin = "BP_Goblin_C_2147483647";
        private const string Hero = "9b2d5c1e-hero-0000-0000-000000000001";
        private readonly ApiSidecarFixture _sidecar;

        public ApiTests(ApiSidecarFixture sidecar) { _sidecar = sidecar; }

        private SidecarClient Client => _sidecar.Process.Client;

        private static Snapshot BigWorld(int entities)
        {
            var world = new Snapshot();
            for (var i = 0; i < entities; i++)
                world.Entities.Add(new Entity { Id = $"e{i}", Kind = EntityKind.Character, Name = $"n{i}", Description = new string('z', 16_000) });
            return world;
        }

        [Fact]
        public async Task AWorldBiggerThanMaxRequestBytesIsReplacedAndImportedInPieces()
        {
            var opened = await Client.OpenTrackedSessionAsync("big");
            var before = opened.Revision;
            var request = new ReplaceStateRequest { SessionId = "big", Snapshot = BigWorld(80) };
            Assert.True(request.CalculateSize() > 1024 * 1024); // over the sidecar's receive limit
            var replaced = await Client.ReplaceStateAsync(request);
            Assert.Equal(before + 1, replaced.Revision);
            Assert.Equal(replaced.Revision, opened.Revision); // the tracker followed the chunked write
            var state = await Client.GetStateAsync(new GetStateRequest { SessionId = "big" });
            Assert.Equal(80, state.Snapshot.Entities.Count);
            Assert.Equal(16_000, state.Snapshot.Entities[79].Description.Length);

            var export = await Client.ExportSessionAsync("big");
            Assert.True(export.Blob.Length > 1024 * 1024);
            var imported = await Client.ImportSessionAsync(new ImportSessionRequest { SessionId = "big-copy", Blob = export.Blob });
            Assert.Equal("big-copy", imported.SessionId);
            Assert.Equal(replaced.Revision, imported.Revision);
            // The chunked path answers with ImportSession's errors.
            var again = await Assert.ThrowsAsync<SidecarException>(
                () => Client.ImportSessionAsync(new ImportSessionRequest { SessionId = "big-copy", Blob = export.Blob }));
            Assert.Equal(ErrorReason.SessionExists, again.Reason);
            // A small world still goes in one message, as before.
            var small = await Client.ReplaceStateAsync(new ReplaceStateRequest { SessionId = "big", Snapshot = BigWorld(1) });
            Assert.Equal(replaced.Revision + 1, small.Revision);
        }

        [Fact]
        public async Task NarrateGivesSentenceEndsAndMentionSpansInUtf16()
        {
            await Client.OpenSessionAsync("names");
            await Client.ApplyDeltasAsync("names", 0, new[]
            {
                TestEnv.Upsert(Tavern, EntityKind.Location, "The Rusty Anchor"),
                TestEnv.Upsert(Goblin, EntityKind.Character, "Grüb 🐗", Tavern),
                TestEnv.Upsert(Hero, EntityKind.Player, "Zoë", Tavern),
            });
            var request = new RunRequest { SessionId = "names", Profile = "mentions", Narrate = new NarrateInput { Text = "The hero runs." } };
            request.Narrate.EntityIds.Add(Hero);
            var pieces = await RunTests.Collect(Client.Narrate(request));
            Assert.Equal("🐉 Halt, Zoë! Grüb 🐗 blocks the door of The Rusty Anchor.", string.Concat(pieces));
            Assert.True(pieces.Last().SentenceEnd);
            var named = pieces.SelectMany(p => p.Mentions.Select(m => (m.EntityId, p.Text.Substring(m.Start, m.Length)))).ToList();
            Assert.Equal(new[] { (Hero, "Zoë"), (Goblin, "Grüb 🐗"), (Tavern, "The Rusty Anchor") }, named);
        }

        [Fact]
        public async Task DecideReturnsTheChosenActionOfTheGame()
        {
            await Client.OpenSessionAsync("decide");
            await Client.ApplyDeltasAsync("decide", 0, new[]
            {
                TestEnv.Upsert(Tavern, EntityKind.Location, "The Rusty Anchor"),
                TestEnv.Upsert(Goblin, EntityKind.Character, "Grub", Tavern),
            });
            var options = new[]
            {
                new ActionOption { ActionId = "act_wait", Label = "Wait" },
                new ActionOption { ActionId = "act_attack", Label = "Attack", TargetId = Tavern },
            };
            var chosen = await Client.DecideAsync("decide", Goblin, "A stranger walks in. #choose:2", options);
            Assert.Equal("act_attack", chosen.ActionId);
            Assert.Equal(1, chosen.Index);
            await Assert.ThrowsAsync<ArgumentException>(() => Client.DecideAsync(TestEnv.Narrate("decide", "Not a decision.")));
        }

        [Fact]
        public async Task AReusedDeltaIdThrowsDeltaIdReusedWithTheFirstRevision()
        {
            var opened = await Client.OpenSessionAsync("reuse");
            var first = await Client.ApplyDeltasAsync("reuse", opened.Revision, new[] { TestEnv.Fact("tick", 1) }, deltaId: "d-1");
            var e = await Assert.ThrowsAsync<DeltaIdReusedException>(
                () => Client.ApplyDeltasAsync("reuse", first.Revision, new[] { TestEnv.Fact("tick", 2) }, deltaId: "d-1"));
            Assert.Equal(StatusCode.AlreadyExists, e.StatusCode);
            Assert.Equal(ErrorReason.DeltaIdReused, e.Reason);
            Assert.Equal(first.Revision, e.Revision);
            Assert.False(e.IsRetryable);
            Assert.Equal(first.Revision, (await Client.OpenSessionAsync("reuse")).Revision); // nothing applied
        }
    }

    public class ApiUnitTests
    {
        private static readonly IReadOnlyDictionary<string, string> None = new Dictionary<string, string>();

        [Fact]
        public void ReasonIsTheGeneratedEnumAndAnUnknownOneIsUnspecified()
        {
            var stale = SidecarErrors.Create(StatusCode.Aborted, "STALE_REVISION", "stale", None, null);
            Assert.Equal(ErrorReason.StaleRevision, stale.Reason);
            Assert.Equal("STALE_REVISION", stale.ReasonName);
            var future = SidecarErrors.Create(StatusCode.Internal, "SOME_NEWER_REASON", "", None, null);
            Assert.Equal(ErrorReason.Unspecified, future.Reason);
            Assert.Equal("SOME_NEWER_REASON", future.ReasonName);
            var transport = SidecarErrors.Create(StatusCode.Unavailable, "", "connection refused", None, null);
            Assert.Equal(ErrorReason.Unspecified, transport.Reason);
        }

        [Theory]
        [InlineData("QUEUE_FULL", true)]
        [InlineData("PROVIDER_TIMEOUT", true)]
        [InlineData("PROVIDER_RATE_LIMITED", true)]
        [InlineData("PROVIDER_UNAVAILABLE", true)]
        [InlineData("STORAGE_FULL", true)]
        [InlineData("STALE_REVISION", false)]
        [InlineData("SHUTTING_DOWN", false)]
        [InlineData("RUN_CANCELLED", false)]
        [InlineData("INVALID_DELTA", false)]
        [InlineData("PROVIDER_AUTH", false)]
        [InlineData("INTERNAL", false)]
        [InlineData("DELTA_ID_REUSED", false)]
        [InlineData("", false)]
        public void IsRetryableFollowsTheDocumentedList(string reason, bool retryable)
        {
            Assert.Equal(retryable, SidecarErrors.Create(StatusCode.Unavailable, reason, "", None, null).IsRetryable);
        }

        [Fact]
        public void ASidecarGoneIsRetryableOnlyWhenARestartFollows()
        {
            var crash = new SidecarExit(SidecarExitKind.Signaled, null, 9, "", requested: false, hung: false);
            Assert.True(new SidecarGoneException(crash, "unix:/s", restarts: true).IsRetryable);
            Assert.False(new SidecarGoneException(crash, "unix:/s", restarts: false).IsRetryable);
            var stopped = new SidecarExit(SidecarExitKind.Exited, 0, null, "", requested: true, hung: false);
            Assert.False(new SidecarGoneException(stopped, "unix:/s", restarts: true).IsRetryable);
        }

        [Fact]
        public void DeltaIdReusedReadsTheRevision()
        {
            var metadata = new Dictionary<string, string> { { "revision", "12" } };
            var e = Assert.IsType<DeltaIdReusedException>(SidecarErrors.Create(StatusCode.AlreadyExists, "DELTA_ID_REUSED", "reused", metadata, null));
            Assert.Equal(12, e.Revision);
        }

        // Spans as the wire gives them: UTF-8 byte offsets into the delta's text.
        private static EntityMention Wire(string text, string name, string id)
        {
            var at = text.IndexOf(name, StringComparison.Ordinal);
            return new EntityMention
            {
                EntityId = id,
                Start = Encoding.UTF8.GetByteCount(text.Substring(0, at)),
                Length = Encoding.UTF8.GetByteCount(name),
            };
        }

        [Theory]
        [InlineData("Zoë meets Grub.", "Grub")]                 // 2-byte character before: off by one in bytes
        [InlineData("東の門でGrubが待つ。", "Grub")]               // 3-byte characters
        [InlineData("🐉🐉 Grub waits.", "Grub")]                 // astral: 4 bytes, 2 UTF-16 units each
        [InlineData("Halt! 𝔊rüb 🐗 stands.", "𝔊rüb 🐗")]          // astral inside the name
        [InlineData("Grub", "Grub")]
        public void MentionSpansAreConvertedToUtf16(string text, string name)
        {
            var delta = new TextDelta { Text = text, SentenceEnd = true };
            delta.Mentions.Add(Wire(text, name, "id"));
            var piece = NarrationPiece.From(delta);
            var m = Assert.Single(piece.Mentions);
            Assert.Equal(name, piece.Text.Substring(m.Start, m.Length));
            Assert.Equal(text.IndexOf(name, StringComparison.Ordinal), m.Start);
            Assert.True(piece.SentenceEnd);
        }

        [Fact]
        public void AnOffsetPastTheTextIsClamped()
        {
            Assert.Equal(3, NarrationPiece.Utf16Index("Zoë", 99));
            Assert.Equal(0, NarrationPiece.Utf16Index("Zoë", 0));
        }

        [Fact]
        public async Task WithoutAHandlerTheLaunchFailsBeforeTheProcessStarts()
        {
            var marker = System.IO.Path.Combine(System.IO.Path.GetTempPath(), "gs-nohandler-" + Guid.NewGuid().ToString("N"));
            var options = new SidecarProcessOptions
            {
                Executable = "/bin/sh",
                Arguments = new List<string> { "-c", $"touch '{marker}'; exec sleep 30" },
                HandshakeTimeout = TimeSpan.FromSeconds(5),
                Client = new SidecarClientOptions { BuiltInHandler = false }, // what the netstandard2.1 build has
            };
            var e = await Assert.ThrowsAsync<SidecarNoHttpHandlerException>(() => SidecarProcess.LaunchAsync(options));
            Assert.Contains("YetAnotherHttpHandler", e.Message);
            Assert.Contains("SidecarHost.HttpHandlerFactory", e.Message);
            Assert.Contains("SidecarClientOptions.HttpHandlerFactory", e.Message);
            Assert.Contains("docs/unity.md", e.Message);
            Assert.Null(e.ProcessId);
            Assert.False(System.IO.File.Exists(marker)); // nothing was started
        }

        [Fact]
        public void TheNetstandardBuildHasNoBuiltInHandlerAndThisOneHas()
        {
            // This suite runs the net10.0 build; the netstandard2.1 build compiles the const to false.
            Assert.True(new SidecarClientOptions().BuiltInHandler);
            Assert.True(SidecarTransport.HasBuiltInHandler);
        }
    }
}
