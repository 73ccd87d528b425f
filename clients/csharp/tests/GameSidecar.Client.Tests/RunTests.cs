// Streamed runs through the real sidecar with the scripted model (docs/runs.md cues).
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Grpc.Core;
using Xunit;

namespace GameSidecar.Client.Tests
{
    [Collection("sidecar")]
    public class RunTests
    {
        private readonly SidecarFixture _sidecar;

        public RunTests(SidecarFixture sidecar) { _sidecar = sidecar; }

        private SidecarClient Client => _sidecar.Client;

        [Fact]
        public async Task ANarratedRunStreamsTextWithSentenceEndsThenUsageAndTimings()
        {
            await _sidecar.OpenScene("narrate");
            var events = new List<RunEvent>();
            await foreach (var e in Client.Run(TestEnv.Narrate("narrate", "Wren pushes the north gate open."))) events.Add(e);

            Assert.True(events.Count >= 4, Kinds(events));
            Assert.Equal(RunEvent.KindOneofCase.Started, events[0].KindCase);
            Assert.Equal("scripted", events[0].Started.Profile);
            var finished = events[^1];
            Assert.Equal(RunEvent.KindOneofCase.Finished, finished.KindCase);
            Assert.Equal(FinishReason.Stop, finished.Finished.FinishReason);
            Assert.True(finished.Finished.Timings.TotalMs > 0);
            Assert.True(finished.Finished.Timings.FirstTokenMs > 0);
            for (var i = 0; i < events.Count; i++)
            {
                Assert.Equal((ulong)(i + 1), events[i].Seq);
                Assert.Equal(events[0].RunId, events[i].RunId);
            }
            var texts = events.Where(e => e.KindCase == RunEvent.KindOneofCase.Text).Select(e => e.Text).ToList();
            Assert.Equal(TestEnv.ScriptedReply, string.Concat(texts.Select(t => t.Text))); // nothing lost or doubled
            Assert.True(texts.Count >= 2, "streamed, not delivered whole");
            var ends = texts.Where(t => t.SentenceEnd).Select(t => t.Text.TrimEnd()).ToList();
            Assert.Equal(3, ends.Count);
            Assert.All(ends, t => Assert.Contains(t[^1], ".!?"));
            var usageAt = events.FindIndex(e => e.KindCase == RunEvent.KindOneofCase.Usage);
            Assert.True(usageAt > events.FindLastIndex(e => e.KindCase == RunEvent.KindOneofCase.Text), "usage after the text");
            Assert.True(events[usageAt].Usage.CompletionTokens > 0);
            Assert.True(events[usageAt].Usage.PromptTokens > 0);
        }

        [Fact]
        public async Task CancellingTheTokenEndsTheRunAndTheSidecarRecordsItInterrupted()
        {
            await _sidecar.OpenScene("cancel");
            using var cts = new CancellationTokenSource();
            var seen = new List<RunEvent>();
            // #stall-mid: the scripted model streams about half its reply, then hangs.
            await Assert.ThrowsAnyAsync<OperationCanceledException>(async () =>
            {
                await foreach (var e in Client.Run(TestEnv.Narrate("cancel", "Something moves. #stall-mid", "slow"), cts.Token))
                {
                    seen.Add(e);
                    if (e.KindCase == RunEvent.KindOneofCase.Text) cts.Cancel();
                }
            });
            Assert.DoesNotContain(seen, e => e.KindCase == RunEvent.KindOneofCase.Finished);
            var runId = seen[0].RunId;
            // The sidecar saw the client go: it records the streamed text as interrupted and counts the cancel.
            Assert.True(await TestEnv.Eventually(async () =>
            {
                var page = await Client.ReadTranscriptAsync(new ReadTranscriptRequest { SessionId = "cancel" });
                return page.Entries.Any(x => x.RunId == runId && x.Interrupted);
            }), "no interrupted transcript entry for " + runId);
            var info = await Client.GetInfoAsync(includeStats: true);
            Assert.True(info.Stats.Single(s => s.SessionId == "cancel").ErrorsByReason["RUN_CANCELLED"] >= 1);
            // The sidecar serves the next run normally.
            var text = string.Concat(await Collect(Client.Narrate("cancel", "The wind dies down.")));
            Assert.Equal(TestEnv.ScriptedReply, text);
        }

        [Fact]
        public async Task ContinueStoryCarriesTheNarrationOnAndIsRecorded()
        {
            await _sidecar.OpenScene("continue");
            await Collect(Client.Narrate("continue", "Wren pushes the north gate open."));
            var text = string.Concat(await Collect(Client.ContinueStory("continue")));
            Assert.Equal(TestEnv.ScriptedReply, text);
            var page = await Client.ReadTranscriptAsync(new ReadTranscriptRequest { SessionId = "continue" });
            Assert.Equal(new[] { "event", "narrator", "continue", "narrator" }, page.Entries.Select(x => x.Role).ToArray());
        }

        [Fact]
        public async Task CancelRunOnTheServerEndsTheStreamThenNamesNothing()
        {
            await _sidecar.OpenScene("cancel-server");
            var request = TestEnv.Narrate("cancel-server", "A shadow crosses the gate. #stall-mid", "slow");
            request.RunId = SidecarClient.NewId();
            var cancelled = false;
            var e = await Assert.ThrowsAsync<SidecarException>(async () =>
            {
                await foreach (var ev in Client.Run(request))
                {
                    if (ev.KindCase != RunEvent.KindOneofCase.Text || cancelled) continue;
                    cancelled = true;
                    await Client.CancelRunAsync(request.RunId);
                }
            });
            Assert.Equal(StatusCode.Cancelled, e.StatusCode);
            Assert.Equal("RUN_CANCELLED", e.ReasonName);
            var again = await Assert.ThrowsAsync<SidecarNotFoundException>(() => Client.CancelRunAsync(request.RunId));
            Assert.Equal("RUN_NOT_FOUND", again.ReasonName);
        }

        [Fact]
        public async Task AModelFaultCueGivesTheDocumentedException()
        {
            await _sidecar.OpenScene("fault");
            var e = await Assert.ThrowsAsync<SidecarException>(
                () => Collect(Client.Narrate("fault", "The sky darkens. #fail:rate_limit")));
            Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
            Assert.Equal("PROVIDER_RATE_LIMITED", e.ReasonName);
            Assert.IsNotType<QueueFullException>(e);
        }

        [Fact]
        public async Task AFaultMidStreamComesAfterTheTextAlreadySent()
        {
            await _sidecar.OpenScene("fault-mid");
            var texts = new List<string>();
            var e = await Assert.ThrowsAsync<SidecarException>(async () =>
            {
                await foreach (var t in Client.Narrate("fault-mid", "The torch flickers. #fail-mid:unavailable")) texts.Add(t.Text);
            });
            Assert.Equal(StatusCode.Unavailable, e.StatusCode);
            Assert.Equal("PROVIDER_UNAVAILABLE", e.ReasonName);
            Assert.NotEmpty(texts);
        }

        [Fact]
        public async Task UnknownProfileIsNotFoundBeforeAnythingStreams()
        {
            await _sidecar.OpenScene("profile");
            var e = await Assert.ThrowsAsync<SidecarNotFoundException>(
                () => Collect(Client.Run(TestEnv.Narrate("profile", "Hello.", "no-such-profile"))));
            Assert.Equal("PROFILE_NOT_FOUND", e.ReasonName);
        }

        [Fact]
        public async Task ReadTranscriptPagesThroughTheNarration()
        {
            await _sidecar.OpenScene("transcript");
            await Collect(Client.Narrate("transcript", "The gate opens."));
            var page = await Client.ReadTranscriptAsync(new ReadTranscriptRequest { SessionId = "transcript", PageSize = 50 });
            Assert.Contains(page.Entries, x => x.Role == "narrator" && x.Text == TestEnv.ScriptedReply && !x.Interrupted);
            var bad = await Assert.ThrowsAsync<SidecarException>(() => Client.ReadTranscriptAsync(
                new ReadTranscriptRequest { SessionId = "transcript", Cursor = "not-a-cursor" }));
            Assert.Equal("INVALID_CURSOR", bad.ReasonName);
        }

        internal static async Task<List<T>> Collect<T>(IAsyncEnumerable<T> items)
        {
            var list = new List<T>();
            await foreach (var item in items) list.Add(item);
            return list;
        }

        private static string Kinds(IEnumerable<RunEvent> events) => string.Join(" ", events.Select(e => e.KindCase));
    }

    /// <summary>A sidecar of its own with one run slot and one queue place.</summary>
    public class QueueFullTests
    {
        [Fact]
        public async Task TheThirdConcurrentRunIsQueueFull()
        {
            await using var sidecar = await SidecarProcess.LaunchAsync(TestEnv.RealOptions(TestEnv.Here("queue_full.toml")));
            var client = sidecar.Client;
            await client.OpenSessionAsync("q");
            await client.ApplyDeltasAsync("q", 0, Enumerable.Range(0, 3).Select(i => TestEnv.Upsert($"npc-{i}", EntityKind.Character, $"N{i}")));
            using var cts = new CancellationTokenSource();
            // The first run stalls before its first token and holds the only slot once started.
            var first = client.Run(Narrate("hold #stall", "npc-0"), cts.Token).GetAsyncEnumerator();
            Assert.True(await first.MoveNextAsync());
            Assert.Equal(RunEvent.KindOneofCase.Started, first.Current.KindCase);
            // Two more: one takes the one queue place, the other (whichever arrives second) is refused.
            var more = new[] { "npc-1", "npc-2" }.Select(actor =>
                Task.Run(() => RunTests.Collect(client.Run(Narrate("wait", actor), cts.Token)))).ToList();
            var refusedTask = await Task.WhenAny(more);
            var refused = await Assert.ThrowsAsync<QueueFullException>(() => refusedTask);
            Assert.Equal(StatusCode.ResourceExhausted, refused.StatusCode);
            Assert.Equal("QUEUE_FULL", refused.ReasonName);
            Assert.Equal(1, refused.QueueLength);
            Assert.False(more.Single(t => t != refusedTask).IsCompleted, "the queued run waits for the slot");
            cts.Cancel();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await first.MoveNextAsync());
            await first.DisposeAsync();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => more.Single(t => t != refusedTask));
            var info = await client.GetInfoAsync(includeStats: true);
            Assert.Equal(1, info.Stats.Single(x => x.SessionId == "q").ErrorsByReason["QUEUE_FULL"]);
        }

        private static RunRequest Narrate(string text, string actorId) =>
            new RunRequest { SessionId = "q", ActorId = actorId, Narrate = new NarrateInput { Text = text } };
    }
}
