// Issue 20 against the real sidecar: kill -9 and SIGSTOP mid-stream and mid-run give the
// typed SidecarGoneException; exits are observable and told truthfully; a restart policy
// relaunches, swaps the channel and resumes tracked sessions (state equal to a reference
// sidecar that never crashed); an unacknowledged batch lands exactly once; the policy can
// run out; without --state-dir the sessions are reported lost; nothing is left behind.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Google.Protobuf;
using Grpc.Core;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class CrashTests
    {
        // POSIX signals; on Windows TestEnv.Signal makes SIGKILL a TerminateProcess of the relay and
        // sends SIGSTOP to the Linux sidecar behind it (relay_host.py's control frame).
        private const int SigKill = TestEnv.SigKill;
        private const int SigStop = TestEnv.SigStop;

        private static int Signal(int pid, int signal) => TestEnv.Signal(pid, signal);

        /// <summary>Options for a real sidecar whose temp folder is <paramref name="tmp"/> (checked empty at the end).</summary>
        private static SidecarProcessOptions Options(string tmp, string? stateDir = null, RestartPolicy? policy = null)
        {
            var options = TestEnv.RealOptions();
            options.Environment["TMPDIR"] = tmp;
            if (stateDir != null) options.Arguments.Add("--state-dir=" + stateDir);
            options.RestartPolicy = policy;
            return options;
        }

        private static string FreshDir()
        {
            var dir = Path.Combine(Path.GetTempPath(), "gs-cs-test-" + Guid.NewGuid().ToString("N").Substring(0, 10));
            Directory.CreateDirectory(dir);
            return dir;
        }

        private static RestartPolicy QuickPolicy(int max = 3) =>
            new RestartPolicy { MaxRestarts = max, InitialBackoff = TimeSpan.FromMilliseconds(50) };

        /// <summary>The socket folder is gone, and the test's temp folder holds nothing else from the sidecar.</summary>
        private static async Task AssertNothingLeft(string tmp, params int[] pids)
        {
            foreach (var pid in pids) Assert.True(await TestEnv.Eventually(() => !TestEnv.Alive(pid)), $"process {pid} left running");
            Assert.DoesNotContain(Directory.GetFileSystemEntries(tmp), p => Path.GetFileName(p).StartsWith("game-sidecar-"));
        }

        private static void Cleanup(string dir)
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }

        [Fact]
        public async Task KillDuringADeltaStreamEndsItWithSidecarGoneNamingTheSocket()
        {
            var tmp = FreshDir();
            try
            {
                var statuses = new ConcurrentQueue<SidecarStatus>();
                var sidecar = await SidecarProcess.LaunchAsync(Options(tmp));
                sidecar.StatusChanged += statuses.Enqueue;
                var socket = sidecar.Handshake.Address;
                var pid = sidecar.Pid;
                var client = sidecar.Client;
                var rev = (await client.OpenSessionAsync("crash-stream")).Revision;
                await using var stream = client.StreamDeltas();
                var first = new StreamDeltasRequest { SessionId = "crash-stream", BaseRevision = rev, DeltaId = "k1" };
                first.Ops.AddRange(TestEnv.GateScene());
                Assert.Equal(rev + 1, (await stream.ApplyAsync(first)).Revision);
                var read = stream.ReadAsync(); // in flight: no batch is pending, so no answer comes

                Assert.Equal(0, Signal(pid, SigKill));
                var gone = await Assert.ThrowsAsync<SidecarGoneException>(() => read.WaitAsync(TimeSpan.FromSeconds(30)));
                Assert.Equal("SIDECAR_GONE", gone.ReasonName);
                Assert.Equal(ErrorReason.SidecarGone, gone.Reason);
                Assert.False(gone.IsRetryable); // no RestartPolicy: it stays gone
                Assert.Equal(StatusCode.Unavailable, gone.StatusCode);
                TestEnv.AssertKilledFromOutside(gone.Exit);
                Assert.Contains(socket, gone.Message);
                Assert.DoesNotContain("localhost:80", gone.Message);

                // Observable: the exit resolves, the status says failed (no policy), new calls fail at once.
                var exit = await sidecar.Exited.WaitAsync(TimeSpan.FromSeconds(30));
                Assert.Same(gone.Exit, exit);
                Assert.Equal(SidecarStatus.Failed, sidecar.Status);
                Assert.Contains(SidecarStatus.Failed, statuses);
                var again = await Assert.ThrowsAsync<SidecarGoneException>(() => client.GetInfoAsync());
                Assert.Contains(sidecar.Handshake.Target, again.Message); // unix:PATH, or HOST:PORT on Windows
                await Assert.ThrowsAsync<SidecarGoneException>(() => stream.WriteAsync(first));

                // A stop afterwards tells the truth: it was killed, and nobody asked for it.
                var stopped = await sidecar.StopAsync();
                Assert.Same(exit, stopped);
                Assert.False(stopped.Requested);
                if (sidecar.Handshake.IsUnix) Assert.False(Directory.Exists(Path.GetDirectoryName(socket)));
                await AssertNothingLeft(tmp, pid);
            }
            finally
            {
                Cleanup(tmp);
            }
        }

        [Fact]
        public async Task AWriteBlockedOnTheDeadConnectionEndsWithSidecarGone()
        {
            // A batch bigger than HTTP/2's flow-control window, written to a stopped sidecar, waits in
            // the transport; the kill must end that wait too (DeltaStream's guard), not leave it forever.
            var tmp = FreshDir();
            try
            {
                var options = Options(tmp);
                options.HangTimeout = TimeSpan.Zero; // the kill below is the test's, not the liveness check's
                await using var sidecar = await SidecarProcess.LaunchAsync(options);
                var rev = (await sidecar.Client.OpenSessionAsync("blocked-write")).Revision;
                await using var stream = sidecar.Client.StreamDeltas();
                var warm = new StreamDeltasRequest { SessionId = "blocked-write", BaseRevision = rev, DeltaId = "w0" };
                warm.Ops.AddRange(TestEnv.GateScene());
                await stream.ApplyAsync(warm);
                var big = new StreamDeltasRequest { SessionId = "blocked-write", BaseRevision = rev + 1, DeltaId = "w1" };
                for (var i = 0; i < 2000; i++)
                    big.Ops.Add(TestEnv.Upsert("crate/" + i, EntityKind.Item, "a crate with a long description " + new string('x', 400)));
                Assert.Equal(0, Signal(sidecar.Pid, SigStop));
                var write = stream.WriteAsync(big);
                await Task.Delay(200);
                Assert.Equal(0, Signal(sidecar.Pid, SigKill));
                await Assert.ThrowsAsync<SidecarGoneException>(() => write.WaitAsync(TimeSpan.FromSeconds(30)));
                Assert.Contains(stream.Unacknowledged, r => r.DeltaId == "w1");
                await AssertNothingLeft(tmp, sidecar.Pid);
            }
            finally
            {
                Cleanup(tmp);
            }
        }

        [Fact]
        public async Task KillDuringARunEndsItWithSidecarGone()
        {
            var tmp = FreshDir();
            try
            {
                await using var sidecar = await SidecarProcess.LaunchAsync(Options(tmp));
                var client = sidecar.Client;
                var rev = (await client.OpenSessionAsync("crash-run")).Revision;
                await client.ApplyDeltasAsync("crash-run", rev, TestEnv.GateScene());
                var events = 0;
                var gone = await Assert.ThrowsAsync<SidecarGoneException>(async () =>
                {
                    await foreach (var e in client.Run(TestEnv.Narrate("crash-run", "Wren waits.", profile: "slow")))
                    {
                        if (e.KindCase == RunEvent.KindOneofCase.Text && ++events == 1) Signal(sidecar.Pid, SigKill);
                    }
                });
                Assert.True(events >= 1);
                TestEnv.AssertKilledFromOutside(gone.Exit);
                await Assert.ThrowsAsync<SidecarGoneException>(async () =>
                {
                    await foreach (var _ in client.Run(TestEnv.Narrate("crash-run", "Again."))) { }
                });
                await AssertNothingLeft(tmp, gone.Exit.Pid);
            }
            finally
            {
                Cleanup(tmp);
            }
        }

        [Fact]
        public async Task AStoppedSidecarIsDeclaredHungKilledAndItsCallsFailTyped()
        {
            var tmp = FreshDir();
            try
            {
                await using var sidecar = await SidecarProcess.LaunchAsync(Options(tmp));
                var pid = sidecar.Pid;
                Assert.NotNull(await sidecar.Client.GetInfoAsync());
                Assert.Equal(0, Signal(pid, SigStop));
                var call = sidecar.Client.GetInfoAsync(); // waits on a process that answers nothing
                var exit = await sidecar.Exited.WaitAsync(TimeSpan.FromSeconds(60));
                Assert.True(exit.Hung);
                Assert.Equal(SidecarExitKind.Killed, exit.Kind);
                Assert.Equal(TestEnv.IsWindows ? null : SigKill, exit.Signal); // Windows: TerminateProcess, no signal
                Assert.False(exit.Requested);
                Assert.Contains("declared hung", exit.ToString());
                var gone = await Assert.ThrowsAsync<SidecarGoneException>(() => call.WaitAsync(TimeSpan.FromSeconds(30)));
                Assert.True(gone.Exit.Hung);
                Assert.Equal(SidecarStatus.Failed, sidecar.Status);
                await AssertNothingLeft(tmp, pid);
            }
            finally
            {
                Cleanup(tmp);
            }
        }

        [Fact]
        public async Task ARestartResumesTrackedSessionsWithTheStateOfAReferenceThatNeverCrashed()
        {
            var tmp = FreshDir();
            var state = FreshDir();
            try
            {
                var restarted = new TaskCompletionSource<RestartOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
                var exits = new ConcurrentQueue<SidecarExit>();
                await using var reference = await SidecarProcess.LaunchAsync(TestEnv.RealOptions());
                var sidecar = await SidecarProcess.LaunchAsync(Options(tmp, state, QuickPolicy()));
                sidecar.Restarted += o => restarted.TrySetResult(o);
                sidecar.ProcessExited += exits.Enqueue;
                var client = sidecar.Client; // held across the restart: it must keep working
                var firstPid = sidecar.Pid;
                var session = await client.OpenTrackedSessionAsync("resume-me");
                var mirror = await reference.Client.OpenTrackedSessionAsync("resume-me");
                async Task Both(params DeltaOp[] ops)
                {
                    await session.ApplyAsync(ops);
                    await mirror.ApplyAsync(ops);
                }
                await Both(TestEnv.GateScene());
                for (var i = 0; i < 5; i++) await Both(TestEnv.Fact("tick", i));

                Signal(firstPid, SigKill);
                var outcome = await restarted.Task.WaitAsync(TimeSpan.FromSeconds(60));
                Assert.False(outcome.SessionsLost);
                Assert.Empty(outcome.LostSessions);
                Assert.Empty(outcome.Resent);
                Assert.Equal(1, outcome.Restart);
                TestEnv.AssertKilledFromOutside(outcome.Exit);
                Assert.Equal(SidecarStatus.Ready, sidecar.Status);
                Assert.NotEqual(firstPid, sidecar.Pid);
                Assert.Single(exits);

                for (var i = 5; i < 8; i++) await Both(TestEnv.Fact("tick", i));
                var got = await client.GetStateAsync(new GetStateRequest { SessionId = "resume-me" });
                var want = await reference.Client.GetStateAsync(new GetStateRequest { SessionId = "resume-me" });
                Assert.Equal(want.Revision, got.Revision);
                Assert.Equal(want.Snapshot, got.Snapshot);
                Assert.Equal(got.Revision, session.Revision);

                var stopped = await sidecar.StopAsync();
                Assert.True(stopped.Requested);
                Assert.Equal(SidecarExitKind.Exited, stopped.Kind);
                Assert.Equal(0, stopped.ExitCode);
                Assert.Equal(SidecarStatus.Stopped, sidecar.Status);
                await AssertNothingLeft(tmp, firstPid, stopped.Pid);
            }
            finally
            {
                Cleanup(tmp);
                Cleanup(state);
            }
        }

        [Theory]
        [InlineData(true)]
        [InlineData(false)]
        public async Task AnUnacknowledgedBatchLandsExactlyOnceAfterTheRestart(bool appliedBeforeTheKill)
        {
            var tmp = FreshDir();
            var state = FreshDir();
            try
            {
                var restarted = new TaskCompletionSource<RestartOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
                await using var sidecar = await SidecarProcess.LaunchAsync(Options(tmp, state, QuickPolicy()));
                sidecar.Restarted += o => restarted.TrySetResult(o);
                var session = await sidecar.Client.OpenTrackedSessionAsync("unacked");
                await session.ApplyAsync(TestEnv.GateScene());
                var before = session.Revision;
                var batch = new[] { TestEnv.Fact("door", 1) };
                if (appliedBeforeTheKill)
                {
                    // The sidecar applied it but its answer never came back: another connection applies the
                    // same batch under the same delta ID, as the lost call would have.
                    using var other = new SidecarClient(sidecar.Handshake, sidecar.Token);
                    await other.ApplyDeltasAsync("unacked", before, batch, "door-1");
                }
                var pid = sidecar.Pid;
                Assert.Equal(0, Signal(pid, SigStop)); // the call is written but not answered
                var inFlight = session.ApplyAsync(batch, "door-1");
                await Task.Delay(100); // let the write leave; either way the batch is unacknowledged
                Assert.Equal(0, Signal(pid, SigKill));
                var gone = await Assert.ThrowsAsync<SidecarGoneException>(() => inFlight.WaitAsync(TimeSpan.FromSeconds(30)));
                Assert.True(gone.IsRetryable); // a RestartPolicy brings it back
                Assert.Equal("door-1", session.UnacknowledgedDeltaId);

                var outcome = await restarted.Task.WaitAsync(TimeSpan.FromSeconds(60));
                var resent = Assert.Single(outcome.Resent);
                Assert.Equal("door-1", resent.DeltaId);
                Assert.True(resent.Applied);
                Assert.Equal(appliedBeforeTheKill, resent.Replayed);
                Assert.Null(resent.Error);
                Assert.Null(session.UnacknowledgedDeltaId);
                // Once: one revision more than before, and the handle is current.
                var got = await sidecar.Client.GetStateAsync(new GetStateRequest { SessionId = "unacked" });
                Assert.Equal(before + 1, got.Revision);
                Assert.Equal(before + 1, session.Revision);
                Assert.Equal(1, got.Snapshot.SceneFacts.Single(f => f.Key == "door").Value.IntValue);
                Assert.Equal(before + 2, (await session.ApplyAsync(TestEnv.Fact("door", 2))).Revision);
            }
            finally
            {
                Cleanup(tmp);
                Cleanup(state);
            }
        }

        [Fact]
        public async Task WhenThePolicyIsExhaustedTheStatusIsFailedWithTheLastExit()
        {
            var tmp = FreshDir();
            try
            {
                var statuses = new ConcurrentQueue<SidecarStatus>();
                var exits = new ConcurrentQueue<SidecarExit>();
                var restarted = new TaskCompletionSource<RestartOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
                await using var sidecar = await SidecarProcess.LaunchAsync(Options(tmp, policy: QuickPolicy(max: 1)));
                sidecar.StatusChanged += statuses.Enqueue;
                sidecar.ProcessExited += exits.Enqueue;
                sidecar.Restarted += o => restarted.TrySetResult(o);
                var first = sidecar.Pid;
                Signal(first, SigKill);
                await restarted.Task.WaitAsync(TimeSpan.FromSeconds(60));
                var second = sidecar.Pid;
                Assert.NotEqual(first, second);
                Assert.False(sidecar.Exited.IsCompleted);
                Signal(second, SigKill);
                var last = await sidecar.Exited.WaitAsync(TimeSpan.FromSeconds(60));
                Assert.Equal(second, last.Pid);
                TestEnv.AssertKilledFromOutside(last);
                Assert.Equal(SidecarStatus.Failed, sidecar.Status);
                Assert.Equal(new[] { SidecarStatus.Restarting, SidecarStatus.Ready, SidecarStatus.Failed }, statuses.ToArray());
                Assert.Equal(new[] { first, second }, exits.Select(e => e.Pid).ToArray());
                var gone = await Assert.ThrowsAsync<SidecarGoneException>(() => sidecar.Client.GetInfoAsync());
                Assert.Same(last, gone.Exit);
                Assert.False(gone.IsRetryable); // the policy gave up
                await AssertNothingLeft(tmp, first, second);
            }
            finally
            {
                Cleanup(tmp);
            }
        }

        [Fact]
        public async Task WithoutAStateDirTheRestartReportsTheSessionsLostAndReplaceStateResyncs()
        {
            var tmp = FreshDir();
            try
            {
                var restarted = new TaskCompletionSource<RestartOutcome>(TaskCreationOptions.RunContinuationsAsynchronously);
                await using var sidecar = await SidecarProcess.LaunchAsync(Options(tmp, policy: QuickPolicy()));
                sidecar.Restarted += o => restarted.TrySetResult(o);
                var session = await sidecar.Client.OpenTrackedSessionAsync("lost-one");
                await session.ApplyAsync(TestEnv.GateScene());
                await session.ApplyAsync(TestEnv.Fact("tick", 1));
                var world = (await sidecar.Client.GetStateAsync(new GetStateRequest { SessionId = "lost-one" })).Snapshot;

                Signal(sidecar.Pid, SigKill);
                var outcome = await restarted.Task.WaitAsync(TimeSpan.FromSeconds(60));
                Assert.True(outcome.SessionsLost);
                Assert.Equal(new[] { "lost-one" }, outcome.LostSessions);
                Assert.Equal(0, session.Revision); // re-opened empty

                // The documented resync: ReplaceState with the game's world; the handle follows it.
                var replaced = await sidecar.Client.ReplaceStateAsync(new ReplaceStateRequest { SessionId = "lost-one", Snapshot = world });
                Assert.Equal(replaced.Revision, session.Revision);
                var next = await session.ApplyAsync(TestEnv.Fact("tick", 2));
                Assert.Equal(replaced.Revision + 1, next.Revision);
                var state = await sidecar.Client.GetStateAsync(new GetStateRequest { SessionId = "lost-one" });
                Assert.Contains(state.Snapshot.Entities, e => e.Id == "BP_Guard_C_7");
                Assert.Equal(2, state.Snapshot.SceneFacts.Single(f => f.Key == "tick").Value.IntValue);
            }
            finally
            {
                Cleanup(tmp);
            }
        }

        [Fact]
        public async Task AnOrderlyStopIsReportedAsRequestedAndLeavesNothingBehind()
        {
            var tmp = FreshDir();
            try
            {
                var sidecar = await SidecarProcess.LaunchAsync(Options(tmp));
                var pid = sidecar.Pid;
                if (sidecar.Handshake.IsUnix)
                {
                    var dir = Path.GetDirectoryName(sidecar.Handshake.Address)!;
                    Assert.StartsWith(tmp, dir);
                    Assert.True(Directory.Exists(dir));
                }
                else
                {
                    Assert.True(TestEnv.IsWindows, "TCP is the default transport on Windows only");
                    Assert.StartsWith("127.0.0.1:", sidecar.Handshake.Address);
                }
                var exit = await sidecar.StopAsync();
                Assert.Equal(SidecarExitKind.Exited, exit.Kind);
                Assert.Equal(0, exit.ExitCode);
                Assert.Null(exit.Signal);
                Assert.True(exit.Requested);
                Assert.Same(exit, await sidecar.Exited);
                Assert.Equal(SidecarStatus.Stopped, sidecar.Status);
                var gone = await Assert.ThrowsAsync<SidecarGoneException>(() => sidecar.Client.GetInfoAsync());
                Assert.True(gone.Exit.Requested);
                Assert.False(gone.IsRetryable);
                await AssertNothingLeft(tmp, pid);
                Assert.Empty(Directory.GetFileSystemEntries(tmp));
            }
            finally
            {
                Cleanup(tmp);
            }
        }
    }
}
